"""Cross-field mistakes are refused before any job, in one line naming both keys: a corpus of them per section, every
relation of ``peftir.pipeline.relations`` broken in turn, sizes that cannot be right, empty names, and the docs' list
kept equal to the code's."""
import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from peftir.contract.relations import Scope
from peftir.pipeline import relations
from peftir.pipeline.config import ConfigError, validate

from test_clir_config import one_line_error

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config.yaml").read_text())
FEW_QUERIES = "{irds: hc4/fa/dev, query_field: title, doc_fields: [title, text]}"     # 10 queries (metadata)


# (section, overlay, what the message must name: both keys with their values, or a key and the bound it broke)
CORPUS = [
    ("experiment", "rerank: {depth: 200}", ["rerank.depth = 200", "bm25.depth = 100"]),
    ("experiment", "training: {pairs_per_epoch: 4}", ["training.batch_size = 8", "training.pairs_per_epoch = 4"]),
    ("experiment", "datasets: {vaswani: {training: {batch_size: 64}}}",
     ["datasets.vaswani.training.batch_size = 64", "training.pairs_per_epoch = 32"]),
    ("experiment", "methods: {prompt: {length: 110}}",
     ["methods.prompt.length = 110", "ranker.max_query_len = 20", "ranker.max_seq_len = 128"]),
    ("experiment", "experiment: {metrics: [P@20, P@200]}", ["experiment.metrics[1] = 'P@200'", "bm25.depth = 100"]),
    ("experiment", "methods: {ss_prefix: {common_length: 10}}",
     ["methods.ss_prefix.common_length = 10", "below methods.prefix.length = 10"]),
    ("experiment", "backbone: {layers: 7}", ["backbone.layers = 7", "6, the layers of backbone.name"]),
    ("experiment", "experiment: {datasets: [msmarco-doc]}\n"
                   "datasets: {msmarco-doc: {validation_sample: {queries: 6000, seed: 1}}}",
     ["datasets.msmarco-doc.validation_sample.queries = 6000",
      "5193, the queries of datasets.msmarco-doc.splits.valid = 'msmarco-document/dev'"]),
    ("modular_clir", "modular_clir: {rerank: {depth: 200}}",
     ["modular_clir.rerank.depth = 200", "modular_clir.prerank.dense.depth = 100"]),
    ("modular_clir", "modular_clir: {ranking: {train: {warmup: 150}}}",
     ["modular_clir.ranking.train.warmup = 150", "modular_clir.ranking.adapter.steps = 100"]),
    ("modular_clir", "modular_clir: {ranking: {sftm: {phase_steps: [5, 100]}}}",
     ["modular_clir.ranking.train.warmup = 10", "modular_clir.ranking.sftm.phase_steps[0] = 5"]),
    ("modular_clir", "modular_clir: {ranking: {train: {train_depth: 500}}}",
     ["modular_clir.ranking.train.train_depth = 500", "bm25.depth = 100"]),
    ("modular_clir", "modular_clir: {metric: P@50}",
     ["modular_clir.metric = 'P@50'", "modular_clir.rerank.depth = 20"]),
    ("pretraining", "pretraining: {settings: {skip_from: 6}}",
     ["pretraining.settings.skip_from = 6", "below 6, the layers of pretraining.backbone.name"]),
    ("pretraining", "pretraining: {runs: {condenser: {settings: {skip_from: 9}}}}",
     ["pretraining.runs.condenser.settings.skip_from = 9", "the layers of pretraining.backbone.name"]),
    ("pretraining", "pretraining: {settings: {max_len: 1024}}",
     ["pretraining.settings.max_len = 1024", "512, the positions of pretraining.backbone.name"]),
    ("pretraining", "pretraining: {settings: {chunk: 40}}",
     ["pretraining.settings.chunk = 40", "2 × pretraining.settings.batch_size = 16"]),
    ("pretraining", "pretraining: {runs: {rip-prompts: {prompts: {length: 480}}}}\n"
                    "dense_retrieval: {methods: {dpt-32-pretrained: {length: 480}}}",
     ["pretraining.runs.rip-prompts.prompts.length = 480", "pretraining.settings.max_len = 64", "512, the positions"]),
    ("dense_retrieval", "dense_retrieval: {mining: {sample: 200}}",
     ["dense_retrieval.mining.sample = 200", "dense_retrieval.mining.depth = 100"]),
    ("dense_retrieval", "dense_retrieval: {train: {passages: 102}}",
     ["dense_retrieval.train.passages = 102", "dense_retrieval.train.negative_depth = 100 + 1"]),
    ("dense_retrieval", "dense_retrieval: {methods: {ft: {passages: 40}}}",
     ["dense_retrieval.methods.ft.passages = 40", "dense_retrieval.mining.sample = 30 + 1"]),
    ("dense_retrieval", "dense_retrieval: {methods: {dpt: {length: 400}}}",
     ["dense_retrieval.methods.dpt.length = 400 + dense_retrieval.train.p_max_len = 128 = 528",
      "512, the positions of dense_retrieval.backbones.minilm"]),
    ("dense_retrieval", "dense_retrieval: {search: {depth: 500}}",
     ["dense_retrieval.metrics[1] = 'R@1000' (cutoff 1000)", "dense_retrieval.search.depth = 500"]),
    ("dense_retrieval", "dense_retrieval: {figures: {condenser: {figure2: {passages: 20000}}}}",
     ["dense_retrieval.figures.condenser.figure2.passages = 20000",
      "11429, the documents of dense_retrieval.dataset = 'vaswani'"]),
    ("dense_retrieval", "dense_retrieval: {layers: 8}", ["dense_retrieval.layers = 8", "6, the layers of"]),
    ("sparse_retrieval", "sparse_retrieval: {train: {warmup_steps: 40}}",
     ["sparse_retrieval.train.warmup_steps = 40", "sparse_retrieval.train.steps = 30"]),
    ("sparse_retrieval", "sparse_retrieval: {methods: {adapter: {steps: 4}}}",
     ["sparse_retrieval.train.regularisation.warmup_steps = 5", "sparse_retrieval.methods.adapter.steps = 4"]),
    ("sparse_retrieval", "sparse_retrieval: {rerankers: {train: {validate_every: 50}}}",
     ["sparse_retrieval.rerankers.train.validate_every = 50", "sparse_retrieval.rerankers.train.steps = 30"]),
    ("sparse_retrieval", "sparse_retrieval: {index: {depth: 500}}",
     ["sparse_retrieval.metrics[1] = 'R@1000' (cutoff 1000)", "sparse_retrieval.index.depth = 500"]),
    ("sparse_retrieval", "sparse_retrieval: {train: {q_max_len: 600}}",
     ["sparse_retrieval.train.q_max_len = 600",
      "512, the positions of sparse_retrieval.backbones.minilm.name = 'pretrained:base/mlm-head'"]),
    ("sparse_retrieval", "sparse_retrieval: {rerankers: {train: {max_len: 1000}}}",
     ["sparse_retrieval.rerankers.train.max_len = 1000", "the positions of sparse_retrieval.rerankers.models"]),
]


@pytest.mark.parametrize("section, overlay, named", CORPUS, ids=[f"{s}:{o[:60]}" for s, o, _ in CORPUS])
def test_a_cross_field_mistake_is_one_line_naming_both_keys(irds_home, tmp_path, section, overlay, named):
    message = one_line_error(tmp_path, overlay)
    assert message.startswith("config key ")
    for part in named:
        assert part in message


def test_the_corpus_covers_every_section_three_times_over():
    sections = [section for section, _, _ in CORPUS]
    for section in relations.SECTIONS:
        assert sections.count(section.key) >= 3, section.key


def _plain(side) -> bool:
    return isinstance(side, str) and Scope(DEFAULT).get(side) is not None


def _set(config: dict, key: str, value: int) -> None:
    *path, last = re.findall(r"[^.\[\]]+|\[\d+\]", key)
    for part in path:
        config = config[int(part[1:-1])] if part.startswith("[") else config[part]
    if last.startswith("["):
        config[int(last[1:-1])] = value
    else:
        config[last] = value


PLAIN = [relation for section in relations.SECTIONS for relation in section.relations
         if _plain(relation.value) and _plain(relation.bound)]


@pytest.mark.parametrize("relation", PLAIN, ids=[relation.statement() for relation in PLAIN])
def test_each_relation_between_two_keys_is_enforced(irds_home, relation):
    """Broken from either side (its value raised past the bound, or the bound lowered under the value: whichever
    breaks no relation checked before it), the relation refuses the config naming both keys."""
    scope = Scope(DEFAULT)
    value, bound = scope.get(relation.value)[1], scope.get(relation.bound)[1]
    limit = relation.scale * bound - relation.slack - relation.strict          # the largest value allowed
    base = copy.deepcopy(DEFAULT)
    if value == "auto":           # a pass the job sizes within its batch: the relation binds a number given instead
        value = limit
        _set(base, relation.value, value)
    messages = []
    for key, broken in ((relation.value, limit + 1), (relation.bound, (value + relation.slack - 1
                                                                        + relation.strict) // relation.scale)):
        config = copy.deepcopy(base)
        _set(config, key, broken)
        with pytest.raises(ConfigError) as error:
            validate(config, SCHEMA)
        messages.append(str(error.value))
    assert any(f"{relation.value} = " in m and f"{relation.bound} = " in m for m in messages), messages


def test_the_docs_list_every_relation():
    page = (REPO / "docs" / "configuration" / "relations.md").read_text()
    assert relations.markdown() in page


# sizes that multiply planning: refused where they cannot be right, before the planner runs
SIZES = [
    ("datasets: {vaswani: " + FEW_QUERIES[:-1] + ", folds: {scheme: seeded, n: 12, seed: 1}}}",
     "config key datasets.vaswani.folds.n = 12: at most 10, the queries of datasets.vaswani.irds = 'hc4/fa/dev'"),
    ("datasets: {vaswani: {folds: {n: 25}}}", "config key datasets.vaswani.folds.n = 25: 3 to 20 folds"),
    ("experiment: {seeds: [" + ", ".join(map(str, range(21))) + "]}", "1 to 20 distinct seeds"),
    ("dense_retrieval: {seeds: [" + ", ".join(map(str, range(21))) + "]}", "config key dense_retrieval.seeds"),
    ("modular_clir: {figures: {figure2: {reduction_factors: [" + ", ".join(map(str, range(1, 14))) + "]}}}",
     "config key modular_clir.figures.figure2.reduction_factors = [1, 2"),
    ({"sparse_retrieval": {"tables": {"table1": {"rows": [{"label": f"r{i}", "reference": "bm25"}
                                                          for i in range(41)]}}}},
     "config key sparse_retrieval.tables.table1.rows = "),
]


@pytest.mark.parametrize("overlay, message", SIZES, ids=[m[:50] for _, m in SIZES])
def test_sizes_that_cannot_be_right_are_refused(irds_home, tmp_path, overlay, message):
    assert message in one_line_error(tmp_path, overlay if isinstance(overlay, str) else yaml.safe_dump(overlay))


def test_more_folds_than_queries_stops_the_dry_run_before_planning(irds_home, tmp_path):
    """Before, planning 12 folds of 10 queries ran on; now Snakemake stops with the one line, and no job."""
    overlay = tmp_path / "folds.yaml"
    overlay.write_text("datasets: {vaswani: " + FEW_QUERIES[:-1] + ", folds: {scheme: seeded, n: 12, seed: 1}}}\n")
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                             str(REPO / "Snakefile"), "--directory", str(tmp_path), "--configfile",
                             str(REPO / "config.yaml"), str(overlay)], capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "config key datasets.vaswani.folds.n = 12: at most 10, the queries of" in output
    assert "Job stats" not in output and not (tmp_path / "results").exists()


@pytest.mark.parametrize("overlay, key", [
    ("backbone: {name: ''}", "backbone.name = ''"),
    ("datasets: {vaswani: {label: '  '}}", "datasets.vaswani.label = '  '"),
    ("labels: {methods: {full: ''}}", "labels.methods.full = ''"),
    ("modular_clir: {prerank: {dense: {model: ''}}}", "modular_clir.prerank.dense.model = ''"),
    ("pretraining: {backbone: {name: ''}}", "pretraining.backbone.name = ''"),
    ("dense_retrieval: {backbones: {minilm: ''}}", "dense_retrieval.backbones.minilm = ''"),
    ("sparse_retrieval: {backbones: {minilm: {name: ''}}}", "sparse_retrieval.backbones.minilm.name = ''"),
    ("sparse_retrieval: {rerankers: {models: {minilm_ft: {backbone: ' '}}}}",
     "sparse_retrieval.rerankers.models.minilm_ft.backbone = ' '"),
    ("modular_clir: {languages: {en: {corpus: [{package: sword-text-web, kind: sword, module: ''}]}}}",
     "modular_clir.languages.en.corpus[0].module = ''"),
    ("dense_retrieval: {tables: {dptdr: {table3: {rows: [{label: '', reference: bm25}]}}}}",
     "dense_retrieval.tables.dptdr.table3.rows[0].label = ''"),
])
def test_an_empty_name_is_refused(irds_home, tmp_path, overlay, key):
    assert f"config key {key}: not empty" in one_line_error(tmp_path, overlay)

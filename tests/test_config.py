"""Bad configuration is rejected before any job runs, with one message naming key and allowed values."""
import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from peftir.pipeline.config import ConfigError, joined_schema, validate

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config.yaml").read_text())


def overlay(base: dict, extra: dict) -> dict:
    """Snakemake's recursive merge of a later --configfile over an earlier one."""
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        merged[key] = overlay(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def test_shipped_configurations_are_valid():
    validate(DEFAULT, SCHEMA)
    validate(overlay(DEFAULT, yaml.safe_load((REPO / "config/paper.yaml").read_text())), SCHEMA)


def test_a_system_the_config_leaves_out_asks_nothing_of_resources_and_one_it_has_asks_its_rules():
    """A system is in a run when the config has one of its sections, not null and not empty (``System.in_run``):
    only then must ``resources`` hold its rules' entries, so an installed system a config does not use (or one
    switched off, as the paper configurations switch the others off) asks nothing of it."""
    clir_rules = [rule for rule in DEFAULT["resources"] if "clir" in rule]
    config = copy.deepcopy(DEFAULT)
    config["modular_clir"] = None
    for rule in clir_rules:
        config["resources"].pop(rule)
    validate(config, SCHEMA)
    config = copy.deepcopy(DEFAULT)
    config["resources"].pop("rerank_clir")
    with pytest.raises(ConfigError, match=r"config key resources: missing key\(s\) rerank_clir; required keys: "
                                          r"debian_package, .* \(the rules of clir, whose section modular_clir the "
                                          r"config has\)"):
        validate(config, SCHEMA)


def dry_run(workdir: Path, *args: str, configs: tuple[str, ...] = ()) -> dict[str, int]:
    """Jobs per rule that ``snakemake -n`` plans (no data needed)."""
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", *args, "--cores", "1", "--snakefile",
                             str(REPO / "Snakefile"), "--directory", str(workdir), "--configfile",
                             str(REPO / "config.yaml"), *configs], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return {line.split()[0]: int(line.split()[1]) for line in result.stdout.splitlines()
            if len(line.split()) == 2 and line.split()[1].isdigit()}


def test_a_first_stage_of_other_length_is_trained_once_for_the_hybrids_that_share_it(tmp_path):
    overlay = tmp_path / "m.yaml"
    overlay.write_text("training: {sequential: {first_epochs: 2, second_epochs: 1}}\n")   # m != epochs (1)
    counts = dry_run(tmp_path, configs=(str(overlay),))
    # Tables 4-5's hybrids start from prefix (twice), lora and ss_lora: 3 first stages × 2 rankers
    assert counts["train_first_stage"] == 3 * 2 * 5 * 3
    assert counts["train"] == 11 * 2 * 5 * 3


@pytest.mark.parametrize("change, message", [
    (lambda c: c["experiment"]["rankers"].append("bert"),
     "config key experiment.rankers[3] = 'bert': allowed: monobert, twinbert, colbert"),
    (lambda c: c["tables"]["table3"]["methods"].append("adapter"),
     "config key tables.table3.methods[7] = 'adapter': allowed: full, prompt, prefix, lora, lora_pp, prefix_lora"),
    (lambda c: c["tables"]["table3"]["methods"].append("ss_lora"),
     "config key tables.table3.methods[7] = 'ss_lora': semi-Siamese methods apply to bi-encoders only"),
    (lambda c: c["figures"]["figure4"]["methods"].append("ss_prefix"),
     "config key figures.figure4.methods[4] = 'ss_prefix': semi-Siamese methods apply to bi-encoders only"),
    (lambda c: c["tables"]["table5"].pop("best_of"),
     "config key tables.table5.best_of = None: the lft_best row needs another table, allowed: table3, table4"),
    (lambda c: c["tables"]["table5"].update(methods=["lora", "ss_lora"]),
     "config key tables.table5.methods = ['lora', 'ss_lora']: must include full"),
    (lambda c: c["methods"]["prefix"].update(kind="kv"),
     "config key methods.prefix.kind = 'kv': ss_prefix in tables.table5 needs hidden-state prefixes"),
    (lambda c: c["experiment"]["datasets"].append("trec-covid"),
     "config key experiment.datasets[1] = 'trec-covid': allowed: vaswani, robust04, clueweb09b, msmarco-doc"),
    (lambda c: c["bm25"].update(k1="high"), "config key bm25.k1 = 'high': expected type: number"),
    (lambda c: c["training"].pop("epochs"), "config key training: missing key(s) epochs; required keys:"),
    (lambda c: c["ranker"]["twinbert"].update(pooling="max"), "allowed: mean, cls"),
    (lambda c: c["methods"]["lora"].update(scaling="peft"), "allowed: alpha_over_r, r_over_alpha"),
    (lambda c: c["training"].update(epoch=3), "unknown key(s) epoch"),
    (lambda c: c["experiment"].update(metrics=["P@20", "precision"]),
     "config key experiment.metrics[1] = 'precision': 'precision' is not an ir_measures measure"),
    (lambda c: c["experiment"].update(metrics=["P@20", "MAP"]),
     "config key experiment.metrics[1] = 'MAP': ir_measures calls 'MAP' 'AP': use its name"),
    (lambda c: c["datasets"]["vaswani"].update(validation_metric="P@0"),
     "config key datasets.vaswani.validation_metric = 'P@0': 'P@0': the cutoff must be a positive integer"),
    (lambda c: c["datasets"].update({"../../x": c["datasets"]["vaswani"]}),
     "config key datasets.../../x: names are letters, digits"),
    (lambda c: c["datasets"]["vaswani"].update(training={"epoch": 0}),
     "config key datasets.vaswani.training: unknown key(s) epoch"),
    (lambda c: c["execution"].update(warm_worker="yes"), "config key execution.warm_worker = 'yes'"),
    (lambda c: c["execution"].update(groups="off"), "config key execution.groups = 'off': expected type: boolean"),
    # exact types and ranges
    (lambda c: c["training"].update(epochs=2.0), "config key training.epochs = 2.0: expected type: integer"),
    (lambda c: c["training"].update(epochs=True), "config key training.epochs = True: expected type: integer"),
    (lambda c: c["resources"]["train"].update(gpu=1.0), "config key resources.train.gpu = 1.0: expected type: integer"),
    (lambda c: c["experiment"].update(seeds=[1, 2**32]), "config key experiment.seeds[1] = 4294967296: a seed in 0..2**32-1"),
    (lambda c: c["datasets"]["vaswani"]["folds"].update(seed=-1), "config key datasets.vaswani.folds.seed = -1: a seed"),
    (lambda c: c["datasets"]["vaswani"].update(training={"epochs": 0}),
     "config key datasets.vaswani.training.epochs = 0: 0 is less than the minimum of 1"),
    (lambda c: c["datasets"]["vaswani"].update(training={"batch_size": 4, "micro_batch": 8}),
     "config key datasets.vaswani.training.micro_batch = 8: at most datasets.vaswani.training.batch_size = 4"),
    (lambda c: c["training"].update(micro_batch="fast"),
     "config key training.micro_batch = 'fast': allowed: auto, or a positive integer"),
    (lambda c: c["dense_retrieval"]["train"].update(chunk=0),
     "config key dense_retrieval.train.chunk = 0: allowed: auto, or a positive integer"),
    # keys that become paths, and keys that name things
    (lambda c: c["figures"].update({"a/b": c["figures"]["figure4"]}), "config key figures.a/b: names are letters"),
    (lambda c: c["labels"]["rankers"].update(splade="SPLADE"), "config key labels.rankers.splade: allowed: monobert"),
    (lambda c: c["tables"]["table6"]["labels"].update(adapter="x"), "config key tables.table6.labels.adapter: allowed: full"),
    # folds
    (lambda c: c["datasets"]["vaswani"]["folds"].update(n=2), "config key datasets.vaswani.folds.n = 2: 3 to 20 folds"),
    (lambda c: c["datasets"]["vaswani"]["folds"].pop("n"), "config key datasets.vaswani.folds: missing key(s) n"),
    (lambda c: c["datasets"]["robust04"]["folds"].pop("irds"), "config key datasets.robust04.folds: missing key(s) irds"),
    (lambda c: c["datasets"]["vaswani"].update(folds={"scheme": "file"}),
     "config key datasets.vaswani.folds: missing key(s) path"),
    (lambda c: c["datasets"]["vaswani"].update(folds={"scheme": "file", "path": "/nonexistent/folds.tsv"}),
     "config key datasets.vaswani.folds.path = '/nonexistent/folds.tsv': cannot read the folds file"),
    (lambda c: c["datasets"]["msmarco-doc"].pop("splits"), "config key datasets.msmarco-doc: missing key(s) splits"),
    # training triples, validation samples, precision
    (lambda c: c["datasets"]["vaswani"].update(train_pairs={"source": "docpairs"}),
     "config key datasets.vaswani.train_pairs.source = 'docpairs': needs a pre-assigned training split"),
    (lambda c: c["datasets"]["msmarco-doc"].update(train_pairs={"source": "docpairs"}),
     "config key datasets.msmarco-doc.train_pairs.source = 'docpairs': msmarco-document/train has no triples"),
    (lambda c: c["datasets"]["msmarco-doc"].update(train_pairs={"source": "doctriples"}),
     "config key datasets.msmarco-doc.train_pairs: missing key(s) seed"),
    (lambda c: c["datasets"]["msmarco-doc"].update(train_pairs={"source": "official"}),
     "config key datasets.msmarco-doc.train_pairs.source = 'official': allowed: bm25, docpairs, doctriples"),
    (lambda c: c["datasets"]["msmarco-doc"].update(validation_sample={"queries": 500}),
     "config key datasets.msmarco-doc.validation_sample: missing key(s) seed"),
    (lambda c: c["execution"].update(precision="fp16"), "config key execution.precision = 'fp16': allowed: fp32, bf16"),
    (lambda c: c["publication"]["authors"].append("Ada <orcid:0000>"),
     "config key publication.authors[0] = 'Ada <orcid:0000>': a name, or a name and its URL"),
    (lambda c: c["publication"].update(licence="CC-BY"), "config key publication.licence = 'CC-BY': the URL of"),
    # ir_datasets ids and fields
    (lambda c: c["datasets"]["vaswani"].update(irds="vaswani/typo"),
     "config key datasets.vaswani.irds = 'vaswani/typo': not an ir_datasets id"),
    (lambda c: c["datasets"]["msmarco-doc"]["splits"].update(valid="msmarco-document/dev2"),
     "config key datasets.msmarco-doc.splits.valid = 'msmarco-document/dev2': not an ir_datasets id"),
    (lambda c: c["datasets"]["vaswani"].update(query_field="title"),
     "config key datasets.vaswani.query_field = 'title': allowed: text, default_text (text fields of vaswani's queries)"),
    (lambda c: c["datasets"]["msmarco-doc"].update(query_field="title"),
     "config key datasets.msmarco-doc.query_field = 'title': allowed: text, default_text (text fields of msmarco-document/train's"),
    (lambda c: c["datasets"]["clueweb09b"].update(doc_fields=["body"]),      # WARC bytes: not text
     "config key datasets.clueweb09b.doc_fields[0] = 'body': allowed: url, date, body_content_type, default_text"),
    (lambda c: c["datasets"]["clueweb09b"]["topics"].append("clueweb09/catb/trec-web-2013"),
     "config key datasets.clueweb09b.topics[4] = 'clueweb09/catb/trec-web-2013': not an ir_datasets id"),
    (lambda c: c["datasets"]["vaswani"].update(doc_fields=["text", "body"]),
     "config key datasets.vaswani.doc_fields[1] = 'body': allowed: text"),
    # lengths, depths and the backbone
    (lambda c: c["ranker"].update(max_query_len=200),
     "config key ranker.max_query_len = 200: at most ranker.max_seq_len = 128 - 4"),
    (lambda c: c["bm25"].update(depth=10), "config key rerank.depth = 25: at most bm25.depth = 10"),
    (lambda c: c["training"].update(train_depth=1000), "config key training.train_depth = 1000: at most bm25.depth"),
    (lambda c: c["training"].update(micro_batch=16),
     "config key training.micro_batch = 16: at most training.batch_size = 8"),
    (lambda c: c["backbone"].update(layers=50),
     "config key backbone.layers = 50: at most 6, the layers of backbone.name = 'embedded:all-MiniLM-L6-v2'"),
    (lambda c: c["backbone"].update(name="./models/bert"), "config key backbone.name = './models/bert': no such directory"),
    # reproduced vs reported
    (lambda c: c["reproduction"]["stand_ins"].update(robust04="robust"),
     "config key reproduction.stand_ins.robust04 = 'robust': allowed: vaswani, "),
    (lambda c: c["reproduction"].update(reported="config/nowhere"),
     "config key reproduction.reported = 'config/nowhere': no condenser.yaml there"),
    (lambda c: c["reproduction"]["original_runs"].update({"table9": {"qrels": "q", "rows": {"a": "x", "b": "y"}}}),
     "config key reproduction.original_runs.table9: allowed: table3, table4, table5, table6, table7, "),
    (lambda c: c["reproduction"]["original_runs"].update({"table5": {"qrels": "q", "rows": {"a": "x", "b": "y"}}}),
     "config key reproduction.original_runs.table5.qrels = 'q': no such file"),
    (lambda c: c["reproduction"].update(tolerance=5), "config key reproduction.tolerance = 5: "),
    (lambda c: c["significance"].update(correction="fdr"),
     "config key significance.correction = 'fdr': allowed: holm, bonferroni, none"),
])
def test_config_errors_name_the_key_and_allowed_values(change, message):
    config = copy.deepcopy(DEFAULT)
    change(config)
    with pytest.raises(ConfigError) as error:
        validate(config, SCHEMA)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_a_folds_file_is_checked_against_its_key(tmp_path):
    folds = tmp_path / "folds.tsv"
    folds.write_text("1\t1\n2\t2\n3 3\n")
    config = copy.deepcopy(DEFAULT)
    config["datasets"]["vaswani"]["folds"] = {"scheme": "file", "path": str(folds), "n": 3}
    with pytest.raises(ConfigError, match=rf"folds.path = .*{folds}, line 3: expected query id<TAB>fold"):
        validate(config, SCHEMA)
    folds.write_text("1\t1\n2\t2\n3\t3\n4\t3\n")
    validate(config, SCHEMA)
    config["datasets"]["vaswani"]["folds"]["n"] = 5
    with pytest.raises(ConfigError, match=r"config key datasets.vaswani.folds.n = 5: the file .* has 3 folds"):
        validate(config, SCHEMA)


def test_keys_that_become_paths_follow_the_wildcard_constraints():
    """The schema's name pattern is the one Snakemake's wildcards must match (peftir.contract.wildcards.NAME)."""
    from peftir.contract.wildcards import NAME

    schema = joined_schema(SCHEMA, REPO)
    assert schema["$defs"]["name"]["pattern"] == f"^{NAME}$"
    for section in ("datasets", "tables", "figures"):
        assert schema["properties"][section]["propertyNames"] == {"$ref": "#/$defs/name"}


def test_snakemake_stops_before_any_job_with_one_message(tmp_path):
    overlay = tmp_path / "bad.yaml"
    overlay.write_text("experiment: {datasets: [vaswani], rankers: [monobert, splade], seeds: [1], metrics: [P@20]}\n")
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                             str(REPO / "Snakefile"), "--directory", str(tmp_path), "--configfile",
                             str(REPO / "config.yaml"), str(overlay)], capture_output=True, text=True)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "config key experiment.rankers[1] = 'splade': allowed: monobert, twinbert, colbert" in output
    assert "Job stats" not in output and not (tmp_path / "results").exists()


# One training job per dataset (and what it needs: export, folds, index, BM25) of the paper configuration.
TRAINING = [f"results/models/{d}/colbert/lora/fold1-seed1.pt" for d in ("robust04", "msmarco-doc")]


def _dry_run_resources(workdir: Path, *args: str, env: dict | None = None) -> dict[tuple[str, str | None], dict]:
    """The resources ``snakemake -n`` shows per (rule, dataset) for the paper configuration."""
    result = subprocess.run([sys.executable, "-m", "snakemake", *TRAINING, "-n", "--cores", "1", *args, "--snakefile",
                             str(REPO / "Snakefile"), "--directory", str(workdir), "--configfile",
                             str(REPO / "config.yaml"), str(REPO / "config/paper.yaml")],
                            capture_output=True, text=True, env=env, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    resources = {}
    for block in re.split(r"\n(?= *(?:local)?rule )", result.stdout)[1:]:      # a group's jobs are indented
        rule = re.match(r" *(?:local)?rule (\w+):", block).group(1)
        dataset = re.search(r"dataset=([\w-]+)", block)
        line = re.search(r"resources: (.*)", block).group(1)
        resources[(rule, dataset.group(1) if dataset else None)] = dict(i.split("=", 1) for i in line.split(", "))
    return resources


def test_rules_ask_for_the_configured_resources_per_rule_and_dataset(tmp_path):
    resources = _dry_run_resources(tmp_path)
    train, marco = resources[("train", "robust04")], resources[("train", "msmarco-doc")]
    assert (train["runtime"], train["mem_mb"], train["gpu"]) == ("2880", "32000", "1") and "slot" not in train
    assert marco["runtime"] == "1440" and marco["mem_mb"] == "32000"      # the dataset's override, the rest global
    assert resources[("index", "robust04")]["gpu"] == "0" and resources[("folds", "robust04")]["runtime"] == "30"
    assert "gpu_model" not in train and "slurm_partition" not in train   # partitions: the SLURM profile's business


def test_the_slurm_profile_takes_site_settings_from_the_environment(tmp_path):
    env = {**os.environ, "PEFTIR_SLURM_ACCOUNT": "ir-lab"}
    resources = _dry_run_resources(tmp_path, "--profile", "slurm", env=env)
    assert resources[("train", "robust04")]["slurm_account"] == "ir-lab"
    assert resources[("index", "robust04")]["slurm_account"] == "ir-lab"
    bare = _dry_run_resources(tmp_path, "--profile", "slurm", env={k: v for k, v in os.environ.items()
                                                                    if not k.startswith("PEFTIR_SLURM_")})
    assert "slurm_account" not in bare[("train", "robust04")]


def test_a_gpu_model_reaches_the_rules_that_ask_for_it(tmp_path):
    overlay = tmp_path / "site.yaml"
    overlay.write_text("resources: {train: {threads: 4, mem_mb: 32000, runtime: 2880, gpu: 1, gpu_model: a100}}\n")
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                             str(REPO / "Snakefile"), "--directory", str(tmp_path), "--configfile",
                             str(REPO / "config.yaml"), str(overlay)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    train = next(b for b in re.split(r"\n(?= *(?:local)?rule )", result.stdout)
                 if b.lstrip(" ").startswith(("rule train:", "localrule train:")))
    assert "gpu_model=a100" in train

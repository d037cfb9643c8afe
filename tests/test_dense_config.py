"""The pretraining and dense retrieval configuration: the paper overlays validate and plan their documented jobs,
bad input is one line naming the key, and a pretrained backbone named by another stage is built first."""
import subprocess
import sys
from pathlib import Path

import pytest

from peftir.layout import PARAMS
from peftir.workflow.config import load_config

from test_clir_config import _overlay, one_line_error

REPO = Path(__file__).resolve().parents[1]
CONDENSER = REPO / "config" / "paper-condenser.yaml"
DPTDR = REPO / "config" / "paper-dptdr.yaml"


def _planned(tmp_path: Path, configfiles: list[Path], target: str) -> dict[str, int]:
    """Snakemake's dry-run job counts per rule for ``target`` in an empty working directory."""
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--cores", "1",
                             "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path), "--configfile",
                             *map(str, configfiles), "--", target], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return {line.split()[0]: int(line.split()[1]) for line in result.stdout.splitlines()
            if len(line.split()) == 2 and line.split()[1].isdigit()}


def test_the_paper_overlays_validate(irds_home):
    condenser = load_config(REPO, [CONDENSER])
    assert condenser["pretraining"]["backbone"]["name"] == "bert-base-uncased"
    assert condenser["pretraining"]["settings"]["skip_from"] == 6
    assert condenser["dense_retrieval"]["tables"]["dptdr"] is None        # the default's other table dropped
    dptdr = load_config(REPO, [DPTDR])
    assert dptdr["pretraining"]["backbone"]["name"] == "roberta-large"
    assert dptdr["dense_retrieval"]["methods"]["dpt"] == {"kind": "dpt", "lr": 7.0e-3, "length": 128,
                                                          "reparametrise": False, "mlp_hidden": 512, "dropout": 0.1}
    assert dptdr["dense_retrieval"]["train"]["passages"] == 30 and dptdr["dense_retrieval"]["mining"]["depth"] == 200


def test_dptdrs_cocondenser_pairs_sentences_and_condensers_pairs_spans(irds_home):
    dptdr, condenser = load_config(REPO, [DPTDR]), load_config(REPO, [CONDENSER])
    assert PARAMS["pretraining"](dptdr, {"pretrained": "cocondenser"})["units"] == "sentences"
    assert PARAMS["pretraining"](condenser, {"pretrained": "cocondenser"})["units"] == "spans"
    assert PARAMS["pretraining"](dptdr, {"pretrained": "rip"})["units"] == "sentences"


def test_dptdrs_ft_baseline_trains_with_cocondensers_recipe_and_dpt_with_its_own(irds_home):
    config = load_config(REPO, [DPTDR])
    wildcards = {"backbone": "rip", "negatives": "bm25"}
    ft = PARAMS["retriever"](config, {**wildcards, "retriever": "ft"})
    dpt = PARAMS["retriever"](config, {**wildcards, "retriever": "dpt"})
    assert (ft["train"]["passages"], ft["train"]["steps"], ft["method"]["lr"]) == (8, 23_580, 5.0e-6)
    assert (dpt["train"]["passages"], dpt["train"]["steps"], dpt["method"]["lr"]) == (30, 78_600, 7.0e-3)
    assert ft["train"]["batch_size"] == dpt["train"]["batch_size"] == 64 and "passages" not in ft["method"]


@pytest.mark.parametrize("text, key", [
    ("dense_retrieval: {train: {stpes: 3}}", "dense_retrieval.train: unknown key(s) stpes"),
    ("dense_retrieval: {backbones: {x: 'pretrained:nope'}}", "dense_retrieval.backbones.x = 'pretrained:nope'"),
    ("backbone: {name: 'pretrained:nope'}", "backbone.name = 'pretrained:nope': no pretraining run 'nope'"),
    ("pretraining: {runs: {rip: {objective: cocondenser}}}", "pretraining.runs.rip: a cocondenser run names"),
    ("pretraining: {runs: {x: {objective: cocondenser, corpus: vaswani, seed: 1, warm_start: rip}}}",
     "pretraining.runs.x.warm_start = 'rip': allowed: condenser"),
    ("dense_retrieval: {methods: {dpt2: {kind: dpt, lr: 0.1}}}", "dense_retrieval.methods.dpt2: deep prompt tuning needs"),
    ("pretraining: {runs: {rip: {units: spans}}}", "pretraining.runs.rip.units = 'spans': allowed: sentences"),
    ("dense_retrieval: {mining: {depth: 500}}", "dense_retrieval.mining.depth = 500: at most bm25.depth = 100"),
    ("dense_retrieval: {tables: {dptdr: {table3: {baseline: Nope}}}}", "dense_retrieval.tables.dptdr.table3.baseline"),
    ("dense_retrieval: {tables: {dptdr: {x: {caption: c, columns: [{label: a, metric: RR@10}], "
     "rows: [{label: r, backbone: minilm, retriever: nope, negatives: bm25}]}}}}", "retriever = 'nope'"),
    ("dense_retrieval: {tables: {dptdr: {x: {caption: c, columns: [{label: a, metric: RR@10}], "
     "rows: [{label: r, backbone: minilm, negatives: bm25}]}}}}", "names no retriever"),
    ("dense_retrieval: {tables: {splade: {}}}", "dense_retrieval.tables.splade: allowed: dptdr, condenser"),
])
def test_a_bad_dense_config_is_one_line_naming_the_key(irds_home, tmp_path, text, key):
    assert key in one_line_error(tmp_path, text)


def test_the_paper_overlays_plan_the_documented_jobs(irds_home, tmp_path):
    # Condenser: Table 5's 3 backbones × 3 budgets; Table 6 adds BERT, Condenser and coCondenser with mined
    # negatives (one pool, mined with the BM25-trained Condenser, a Table 5 run); Table 3's two NQ retrievers: 14
    condenser = _planned(tmp_path / "condenser", [REPO / "config.yaml", CONDENSER], "all_dense_tables")
    assert {rule: condenser.get(rule, 0) for rule in ("pretrain", "train_retriever", "mine_negatives", "dense_index",
                                                      "dense_table", "train")} == \
        {"pretrain": 3, "train_retriever": 14, "mine_negatives": 1, "dense_index": 14, "dense_table": 3, "train": 0}
    # DPTDR: 13 retrievers in the tables, 10 of them on UNM negatives mined once (un-denoised, denoised) with one
    # first-round DPT retriever (on RIP, BM25's negatives; not a table's row); the denoising monoBERT; 4 untrained
    # backbones (Tables 7 and 8: the
    # fourth is Table 7's coCondenser on spans, a fourth pretraining run)
    dptdr = _planned(tmp_path / "dptdr", [REPO / "config.yaml", DPTDR], "all_dense_tables")
    assert {rule: dptdr.get(rule, 0) for rule in ("pretrain", "train_retriever", "mine_negatives", "evaluate_dense",
                                                  "dense_index_untrained", "dense_table", "train")} == \
        {"pretrain": 4, "train_retriever": 14, "mine_negatives": 2, "evaluate_dense": 13,
         "dense_index_untrained": 4, "dense_table": 7, "train": 1}


def test_the_embedded_default_plans_both_papers_tables(irds_home, tmp_path):
    counts = _planned(tmp_path, [REPO / "config.yaml"], "all_dense_tables")
    assert {rule: counts.get(rule, 0) for rule in ("pretraining_mlm_head", "pretrain", "train_retriever",
                                                   "mine_negatives", "dense_index", "dense_index_untrained",
                                                   "dense_table", "train")} == \
        {"pretraining_mlm_head": 1, "pretrain": 3, "train_retriever": 6, "mine_negatives": 1, "dense_index": 6,
         "dense_index_untrained": 1, "dense_table": 2, "train": 1}


def test_a_pretrained_backbone_named_by_another_stage_is_built_first(irds_home, tmp_path):
    overlay = _overlay(tmp_path, "backbone: {name: 'pretrained:rip', layers: 2}\n")
    counts = _planned(tmp_path / "work", [REPO / "config.yaml", overlay],
                      "results/models/vaswani/monobert/full/fold1-seed1.pt")
    assert counts == {"download": 1, "folds": 1, "index": 1, "bm25": 1, "pretraining_mlm_head": 1, "pretrain": 1,
                      "train": 1, "total": 7}

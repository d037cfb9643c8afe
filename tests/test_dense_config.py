"""The pretraining and dense retrieval configuration: the paper overlays validate and plan their documented jobs,
bad input is one line naming the key, and a pretrained backbone named by another stage is built first."""
import subprocess
import sys
from pathlib import Path

import pytest

from peftir.pipeline.contract import PARAMS
from peftir.pipeline.config import load_config

from test_clir_config import _overlay, one_line_error
from peftir.dense import plan as dense_plan
from peftir.contract.backbones import hub_pin

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
    assert hub_pin(condenser["pretraining"]["backbone"]["name"])[0] == "bert-base-uncased"      # pinned
    assert condenser["pretraining"]["settings"]["skip_from"] == 6
    assert condenser["dense_retrieval"]["tables"]["dptdr"] is None        # the default's other table dropped
    dptdr = load_config(REPO, [DPTDR])
    assert hub_pin(dptdr["pretraining"]["backbone"]["name"])[0] == "roberta-large"
    assert dptdr["dense_retrieval"]["methods"]["dpt"] == {"kind": "dpt", "lr": 7.0e-3, "length": 128,
                                                          "reparametrise": False, "mlp_hidden": 512, "dropout": 0.1}
    assert dptdr["dense_retrieval"]["train"]["passages"] == 30 and dptdr["dense_retrieval"]["mining"]["depth"] == 200


def test_dptdrs_cocondenser_pairs_sentences_and_condensers_pairs_spans(irds_home):
    dptdr, condenser = load_config(REPO, [DPTDR]), load_config(REPO, [CONDENSER])
    assert PARAMS["pretraining"](dptdr, {"pretrained": "cocondenser"})["units"] == "sentences"
    assert PARAMS["pretraining"](condenser, {"pretrained": "cocondenser"})["units"] == "spans"
    assert PARAMS["pretraining"](dptdr, {"pretrained": "rip"})["units"] == "sentences"


def test_nq_retrievers_train_and_index_dprs_256_token_passages(irds_home):
    """A method's own ``p_max_len`` reaches its training and its index; the other methods keep the section's."""
    condenser = load_config(REPO, [CONDENSER])
    nq = {"dataset": "nq", "backbone": "bert", "retriever": "ft-nq", "negatives": "bm25"}
    marco = {**nq, "dataset": "msmarco-passage", "retriever": "ft"}
    assert PARAMS["retriever"](condenser, nq)["train"]["p_max_len"] == 256
    assert PARAMS["dense_search"](condenser, nq)["p_max_len"] == 256
    assert PARAMS["retriever"](condenser, marco)["train"]["p_max_len"] == 128
    assert PARAMS["dense_search"](condenser, marco)["p_max_len"] == 128
    assert PARAMS["dense_search"](condenser, {"dataset": "nq", "backbone": "bert"})["p_max_len"] == 128


def test_condensers_ict_rows_pretrain_their_own_ict_at_lee_et_als_batch(irds_home):
    """Tables 3 and 5 in the paper's row order, ICT's backbones pretrained here (A.3's 4,096 through the cache)."""
    condenser = load_config(REPO, [CONDENSER])
    for run, corpus in (("ict", "msmarco-passage"), ("ict-nq", "nq")):
        spec = PARAMS["pretraining"](condenser, {"pretrained": run})
        assert (spec["objective"], spec["corpus"], spec["units"]) == ("ict", corpus, "sentences")
        assert (spec["batch_size"], spec["chunk"], spec["warm_start"]) == (4096, "auto", None)
    tables = condenser["dense_retrieval"]["tables"]["condenser"]
    assert [row["label"] for row in tables["table5"]["rows"]][:4] == ["BM25", "BERT", "ICT", "Condenser"]
    assert [row.get("backbone") for row in tables["table3"]["rows"]] == [None, "bert", "ict-nq", "condenser-nq"]


def test_dptdrs_table6_pretrains_prompts_on_bert_base_and_its_retriever_reads_them(irds_home):
    config = load_config(REPO, [DPTDR])
    spec = PARAMS["pretraining"](config, {"pretrained": "rip-prompts"})
    assert (hub_pin(spec["backbone"])[0], spec["fitted_head"], spec["prompts"]) == ("bert-base-uncased", False,
                                                                                    {"length": 32, "dropout": 0.1})
    assert "prompts" not in PARAMS["pretraining"](config, {"pretrained": "rip"})        # RIP's params as they were
    assert dense_plan.pretrain_input(config, {"pretrained": "rip-prompts"}) == \
        {"docs": "results/data/msmarco-passage/corpus/docs.jsonl"}     # the hub's BERT-base, not RoBERTa-large
    wildcards = {"dataset": "msmarco-passage", "backbone": "bert-base", "negatives": "denoised", "fold": "1",
                 "seed": "1"}
    assert dense_plan.train_retriever_input(config, {**wildcards, "retriever": "dpt-32-pretrained"})["prompts"] == \
        "results/pretrained/rip-prompts"
    assert "prompts" not in dense_plan.train_retriever_input(config, {**wildcards, "retriever": "dpt-32"})
    assert PARAMS["retriever"](config, {**wildcards, "retriever": "dpt-32-pretrained"})["method"]["prompts"] == \
        "pretrained:rip-prompts"


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
    ("pretraining: {runs: {x: {objective: ict, corpus: vaswani, seed: 1, units: blocks}}}",
     "pretraining.runs.x.units = 'blocks': allowed: sentences"),
    ("pretraining: {runs: {x: {objective: ict, corpus: vaswani, seed: 1, warm_start: condenser}}}",
     "pretraining.runs.x: a cocondenser run names the Condenser run it starts from"),
    ("pretraining: {runs: {x: {objective: orqa, corpus: vaswani, seed: 1}}}", "pretraining.runs.x.objective"),
    ("dense_retrieval: {mining: {depth: 500}}", "dense_retrieval.mining.depth = 500: at most bm25.depth = 100"),
    ("dense_retrieval: {tables: {dptdr: {table3: {baseline: Nope}}}}", "dense_retrieval.tables.dptdr.table3.baseline"),
    ("dense_retrieval: {tables: {dptdr: {x: {caption: c, columns: [{label: a, metric: RR@10}], "
     "rows: [{label: r, backbone: minilm, retriever: nope, negatives: bm25}]}}}}", "retriever = 'nope'"),
    ("dense_retrieval: {tables: {dptdr: {x: {caption: c, columns: [{label: a, metric: RR@10}], "
     "rows: [{label: r, backbone: minilm, negatives: bm25}]}}}}", "names no retriever"),
    ("dense_retrieval: {tables: {splade: {}}}", "dense_retrieval.tables.splade: allowed: dptdr, condenser"),
    # Table 6's pretrained prompts: a run that saved prompts, of the method's length, on the backbone they trained on
    ("dense_retrieval: {methods: {dpt-32-pretrained: {length: 16}}}", "dense_retrieval.methods.dpt-32-pretrained."
     "prompts = 'pretrained:rip-prompts': its prompts are 32 embeddings; the method has length 16"),
    ("dense_retrieval: {methods: {dpt-32-pretrained: {prompts: 'pretrained:rip'}}}",
     "dense_retrieval.methods.dpt-32-pretrained.prompts = 'rip': allowed: rip-prompts"),
    ("dense_retrieval: {backbones: {x: 'pretrained:rip-prompts'}}", "run 'rip-prompts' saves deep prompts, not a"),
    ("pretraining: {runs: {condenser: {prompts: {length: 4, dropout: 0}}}}",
     "pretraining.runs.condenser.prompts: deep prompts pretrain with objective rip"),
    ("dense_retrieval: {tables: {dptdr: {table6: {defaults: {backbone: rip}}}}}",
     "backbone rip = 'pretrained:rip' under retriever dpt-32-pretrained, whose prompts run 'rip-prompts' pretrained"),
    ("dense_retrieval: {same_documents: {vaswani: vaswani}}", "dense_retrieval.same_documents.vaswani = 'vaswani'"),
    ("datasets: {v2: {label: V, irds: vaswani, query_field: text, doc_fields: [text], folds: {scheme: presplit}, "
     "splits: {test: vaswani}, validation_metric: P@20}}\ndense_retrieval: {same_documents: {v2: nope}}",
     "dense_retrieval.same_documents.v2 value = 'nope': allowed: vaswani"),
    ("dense_retrieval: {tables: {dptdr: {table3: {columns: [{label: a, metric: RR@10, target: dl19}]}}}}",
     "target = 'dl19': allowed:  (the datasets of dense_retrieval.same_documents whose documents are vaswani's)"),
])
def test_a_bad_dense_config_is_one_line_naming_the_key(irds_home, tmp_path, text, key):
    assert key in one_line_error(tmp_path, text)


def test_the_paper_overlays_plan_the_documented_jobs(irds_home, tmp_path):
    # Condenser: Table 5's 4 backbones (BERT, ICT, Condenser, coCondenser) × 3 budgets; Table 6 adds BERT,
    # Condenser and coCondenser with mined negatives (one pool, mined with the BM25-trained Condenser, a Table 5
    # run); Table 3's three NQ retrievers (BERT, ICT and Condenser on NQ): 18, from 5 pretraining runs
    condenser = _planned(tmp_path / "condenser", [REPO / "config.yaml", CONDENSER], "all_dense_tables")
    assert {rule: condenser.get(rule, 0) for rule in ("pretrain", "train_retriever", "mine_negatives", "dense_index",
                                                      "dense_table", "train")} == \
        {"pretrain": 5, "train_retriever": 18, "mine_negatives": 1, "dense_index": 18, "dense_table": 3, "train": 0}
    # Table 3's NQ runs (three retrievers and BM25) are judged by DPR's answer matching, from the exported answers
    assert {rule: condenser.get(rule, 0) for rule in ("export_answers", "answer_judgments", "answer_judgments_bm25",
                                                      "answer_judgments_untrained")} == \
        {"export_answers": 1, "answer_judgments": 3, "answer_judgments_bm25": 1, "answer_judgments_untrained": 0}
    # every MS MARCO retriever (all but Table 3's NQ ones) also searches TREC DL 2019 in its index (Tables 5, 6)
    assert condenser["dense_search_target"] == condenser["evaluate_dense_target"] == \
        condenser["train_retriever"] - 3
    # DPTDR: 15 retrievers in the tables, 12 of them on UNM negatives mined once (un-denoised, denoised) with one
    # first-round DPT retriever (on RIP, BM25's negatives; not a table's row); the denoising monoBERT; 4 untrained
    # backbones (Tables 7 and 8: the
    # fourth is Table 7's coCondenser on spans, a fourth pretraining run); Table 6's two BERT-base retrievers, one
    # from the prompts of a fifth pretraining run
    dptdr = _planned(tmp_path / "dptdr", [REPO / "config.yaml", DPTDR], "all_dense_tables")
    assert {rule: dptdr.get(rule, 0) for rule in ("pretrain", "train_retriever", "mine_negatives", "evaluate_dense",
                                                  "dense_index_untrained", "dense_table", "train")} == \
        {"pretrain": 5, "train_retriever": 16, "mine_negatives": 2, "evaluate_dense": 15,
         "dense_index_untrained": 4, "dense_table": 8, "train": 1}


def test_the_embedded_default_plans_both_papers_tables(irds_home, tmp_path):
    # Table 8 adds coCondenser's DPT retriever and coCondenser's and RIP's untrained indexes, each measured once
    counts = _planned(tmp_path, [REPO / "config.yaml"], "all_dense_tables")
    assert {rule: counts.get(rule, 0) for rule in ("pretraining_mlm_head", "pretrain", "train_retriever",
                                                   "mine_negatives", "dense_index", "dense_index_untrained",
                                                   "dense_table", "train", "dense_geometry_untrained")} == \
        {"pretraining_mlm_head": 1, "pretrain": 4, "train_retriever": 8, "mine_negatives": 1, "dense_index": 8,
         "dense_index_untrained": 3, "dense_table": 4, "train": 1,
         "dense_geometry_untrained": 3}


def test_a_pretrained_backbone_named_by_another_stage_is_built_first(irds_home, tmp_path):
    overlay = _overlay(tmp_path, "backbone: {name: 'pretrained:rip', layers: 2}\n")
    counts = _planned(tmp_path / "work", [REPO / "config.yaml", overlay],
                      "results/models/vaswani/monobert/full/fold1-seed1.pt")
    assert counts == {"download": 1, "folds": 1, "index": 1, "bm25": 1, "pretraining_mlm_head": 1, "pretrain": 1,
                      "train": 1, "total": 7}


def test_dptdrs_cocondenser_budget_is_named_where_its_rows_print(irds_home):
    """The paper pretrains coCondenser with "the same hyper-parameters" as RIP; here it is a Condenser run and then a
    coCondenser run of RIP's steps each: twice RIP's budget, said in the captions of the tables that print it."""
    config = load_config(REPO, [REPO / "config" / "paper-dptdr.yaml"])
    runs, steps = config["pretraining"]["runs"], config["pretraining"]["settings"]["steps"]
    assert runs["cocondenser"]["warm_start"] == "condenser" and steps == 34_400
    assert "settings" not in runs["condenser"] or "steps" not in runs["condenser"]["settings"]
    for table in ("table7", "table8"):
        caption = " ".join(config["dense_retrieval"]["tables"]["dptdr"][table]["caption"].split())
        assert "34,400 Condenser + 34,400 coCondenser steps, twice RIP's" in caption

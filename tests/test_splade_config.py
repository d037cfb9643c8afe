"""The SPLADE configuration: the paper overlay validates and plans its documented jobs (TREC DL searched in MS MARCO's
index, BEIR zero-shot, distillation's teacher, domain adaptation's rounds), bad input is one line naming the key,
and what a cell reads follows its target collection."""
import pytest

from peftir.pipeline.contract import PARAMS, PATHS
from peftir.splade.contract import splade_scope
from peftir.pipeline import plan
from peftir.pipeline.config import ConfigError, load_config

from test_clir_config import _overlay, one_line_error
from test_dense_config import REPO, _planned
from peftir.splade import plan as splade_plan
from peftir.contract.backbones import hub_pin

PAPER = REPO / "config" / "paper-splade-adapters.yaml"


def test_the_paper_overlay_validates_with_the_papers_settings(irds_home):
    sparse = load_config(REPO, [PAPER])["sparse_retrieval"]
    assert hub_pin(sparse["backbones"]["distilbert"]["name"])[0] == "distilbert-base-uncased"      # pinned
    assert sparse["backbones"]["distilbert"]["logit_offset"] == 0.0
    assert sparse["train"]["steps"] == 300_000 and sparse["train"]["batch_size"] == 128
    assert sparse["train"]["regularisation"] == {"lambda_q": 5.0e-4, "lambda_d": 9.0e-5, "warmup_steps": 50_000}
    assert sparse["train"]["max_grad_norm"] is None is sparse["rerankers"]["train"]["max_grad_norm"]   # no clipping
    assert {m["lr"] for m in sparse["methods"].values() if m["kind"] != "none"} == {8.0e-5}


def test_a_methods_own_settings_reach_its_jobs_and_no_other(irds_home):
    config = load_config(REPO, [PAPER])
    distil = PARAMS["splade"](config, {"backbone": "distilbert", "splade": "adapter_distil"})
    plain = PARAMS["splade"](config, {"backbone": "distilbert", "splade": "adapter"})
    assert distil["train"]["regularisation"]["lambda_d"] == 1.0e-2
    assert plain["train"]["regularisation"]["lambda_d"] == 9.0e-5
    assert distil["method"] == {"name": "adapter", "lr": 8.0e-5, "reduction_factor": 16, "distil": True}
    ablation = PARAMS["splade"](config, {"backbone": "distilbert", "splade": "leave_out_0_2"})
    assert ablation["method"]["leave_out"] == [0, 1, 2] and ablation["train"]["steps"] == 150_000


def test_domain_adaptation_rounds_warm_up_within_their_own_run(irds_home):
    config = load_config(REPO, [PAPER])
    for method in ("ft_round1", "ft_round2", "adapter_round1", "adapter_round2"):
        train = PARAMS["splade"](config, {"backbone": "distilbert", "splade": method})["train"]
        assert train["steps"] == 5_000
        assert train["warmup_steps"] <= train["steps"] // 10                 # the lr decays over most of the run
        assert train["regularisation"]["warmup_steps"] <= train["steps"] // 4   # λ reaches its value early
    main = PARAMS["splade"](config, {"backbone": "distilbert", "splade": "adapter"})["train"]
    assert (main["warmup_steps"], main["regularisation"]["warmup_steps"]) == (6_000, 50_000)


def test_domain_adaptation_rounds_take_hard_negatives_from_the_previous_rounds_top_50(irds_home, tmp_path):
    """The paper's "hard negatives" of a round: a uniform draw from the previous round's top 1,000 is mostly not
    hard; each round draws from the top 50 (ours, named), the main runs from BM25's top 1,000."""
    config = load_config(REPO, [PAPER])
    for method in ("ft_round1", "ft_round2", "adapter_round1", "adapter_round2"):
        spec = PARAMS["splade"](config, {"backbone": "distilbert", "splade": method})
        assert spec["train"]["negative_depth"] == 50 and "negative_depth" not in spec["method"]
    assert PARAMS["splade"](config, {"backbone": "distilbert", "splade": "adapter"})["train"]["negative_depth"] == 1000
    assert "sparse_retrieval.methods.adapter.negative_depth = 500: at most bm25.depth = 100" in one_line_error(
        tmp_path, "sparse_retrieval: {methods: {adapter: {negative_depth: 500}}}")
    # a round draws from the SPLADE run it names, which ends at the index's search depth, not BM25's
    round_on = "sparse_retrieval: {methods: {r: {kind: ft, lr: 0.1, negatives: ft, negative_depth: %d}}}"
    load_config(REPO, [_overlay(tmp_path, round_on % 500)])
    assert ("sparse_retrieval.methods.r.negative_depth = 1500: at most sparse_retrieval.index.depth = 1000, the run of "
            "sparse_retrieval.methods.r.negatives = 'ft'") in one_line_error(tmp_path, round_on % 1500)


def test_a_retrievers_checkpoint_is_chosen_by_its_training_datasets_validation_metric(irds_home):
    config = load_config(REPO, [PAPER])
    chosen = {dataset: PARAMS["splade"](config, {"dataset": dataset, "backbone": "distilbert",
                                                 "splade": "adapter_round1"})["train"]["validation_metric"]
              for dataset in ("msmarco-passage", "fiqa")}
    assert chosen == {"msmarco-passage": "RR@10", "fiqa": "nDCG@10"}


def test_the_paper_overlay_plans_the_documented_jobs(irds_home, tmp_path):
    # retrievers: Table 1's 6, Table 2's 4, Table 4's 7, Table 5's 5 methods × 3 collections, Table 6's 2, Table 7's
    # first stage (Table 3 searches Tables 1 and 2's); indexes: one per retriever and collection it searches, TREC
    # DL's queries and TripClick's torso and tail in their collection's index: 6 + 4 + 8 × 13 (BEIR) + 7 + 15 + 2 + 1;
    # Table 7: 6 rerankers, each reranking MS MARCO dev, DL 2019 and DL 2020; the teacher's file downloaded once
    counts = _planned(tmp_path, [REPO / "config.yaml", PAPER], "all_splade_tables")
    assert {rule: counts.get(rule, 0) for rule in ("train_splade", "splade_index", "splade_search", "evaluate_splade",
                                                   "teacher_scores", "splade_teacher", "bm25", "train_splade_reranker",
                                                   "splade_rerank", "evaluate_splade_reranked", "splade_table",
                                                   "train")} == \
        {"train_splade": 35, "splade_index": 139, "splade_search": 179, "evaluate_splade": 179, "teacher_scores": 1,
         "splade_teacher": 1,
         "bm25": 5, "train_splade_reranker": 6, "splade_rerank": 18, "evaluate_splade_reranked": 18,
         "splade_table": 7, "train": 0}


def test_the_embedded_default_plans_tables_1_and_7_from_the_fitted_mlm_head(irds_home, tmp_path):
    counts = _planned(tmp_path, [REPO / "config.yaml"], "all_splade_tables")
    assert {rule: counts.get(rule, 0) for rule in ("pretraining_mlm_head", "pretrain", "train_splade", "splade_index",
                                                   "evaluate_splade", "evaluate_splade_bm25", "train_splade_reranker",
                                                   "splade_rerank", "splade_table")} == \
        {"pretraining_mlm_head": 1, "pretrain": 0, "train_splade": 3, "splade_index": 3, "evaluate_splade": 3,
         "evaluate_splade_bm25": 1, "train_splade_reranker": 2, "splade_rerank": 2, "splade_table": 2}


def test_rounds_read_the_previous_rounds_run_and_weights_and_distillation_the_teacher(irds_home):
    config = load_config(REPO, [PAPER])
    round2 = {"dataset": "fever", "backbone": "splade_pp", "splade": "adapter_round2", "fold": "1", "seed": "123"}
    found = splade_plan.train_splade_input(config, round2)
    assert found["negatives"] == "results/sparse/runs/fever/fever/splade_pp/adapter_round1/fold1-seed123.run"
    assert found["init"] == "results/sparse/models/fever/splade_pp/adapter_round1/fold1-seed123"
    distil = splade_plan.train_splade_input(config, {**round2, "dataset": "msmarco-passage", "splade": "ft_distil"})
    assert distil["teacher"] == PATHS.splade_teacher.format(dataset="msmarco-passage") and "init" not in distil


def test_a_reranker_reranks_the_first_stages_run_of_the_same_fold_and_seed_on_the_target(irds_home):
    config = load_config(REPO, [PAPER])
    job = {"target": "dl20", "dataset": "msmarco-passage", "reranker": "tct_adapter", "fold": "1", "seed": "123"}
    found = splade_plan.splade_rerank_input(config, job)
    assert found["first_stage"] == "results/sparse/runs/dl20/msmarco-passage/splade_pp/zero_shot/fold1-seed123.run"
    assert found["model"] == "results/sparse/rerankers/models/msmarco-passage/tct_adapter/fold1-seed123"
    assert found["queries"] == "results/data/dl20/queries.tsv"
    assert PARAMS["splade_rerank"](config, job) == {"depth": 1000, "batch_size": "auto", "scope": "all"}


def test_trec_dl_is_searched_in_ms_marcos_index_and_evaluated_on_all_its_queries(irds_home):
    config = load_config(REPO, [PAPER])
    job = {"target": "dl19", "dataset": "msmarco-passage", "backbone": "distilbert", "splade": "ft", "fold": "1",
           "seed": "123"}
    found = splade_plan.splade_search_input(config, job)
    assert found["index"] == "results/sparse/index/msmarco-passage/msmarco-passage/distilbert/ft/fold1-seed123"
    assert found["queries"] == "results/data/dl19/queries.tsv"
    assert splade_scope(job) == "all" and splade_scope({**job, "target": "msmarco-passage"}) == "fold"
    assert plan.resources(config, "splade_index", job)["runtime"] == 1440     # the target collection's override


@pytest.mark.parametrize("text, key", [
    ("sparse_retrieval: {train: {stpes: 3}}", "sparse_retrieval.train: unknown key(s) stpes"),
    ("sparse_retrieval: {backbones: {x: {name: 'pretrained:nope', logit_offset: 0}}}",
     "sparse_retrieval.backbones.x.name = 'pretrained:nope': no pretraining run 'nope'"),
    ("pretraining: {backbone: {mlm_head: null}}",
     "sparse_retrieval.backbones.minilm.name = 'pretrained:base/mlm-head': names the pretraining backbone"),
    ("sparse_retrieval: {methods: {x: {kind: ft, lr: 0.1, reduction_factor: 4}}}",
     "sparse_retrieval.methods.x: reduction_factor: adapter settings"),
    ("sparse_retrieval: {methods: {x: {kind: adapter, lr: 0.1}}}",
     "sparse_retrieval.methods.x: an adapter method needs"),
    ("sparse_retrieval: {methods: {x: {kind: none, lr: 0.1}}}", "sparse_retrieval.methods.x: lr: training settings"),
    ("sparse_retrieval: {methods: {x: {kind: ft}}}", "sparse_retrieval.methods.x: missing key lr"),
    ("sparse_retrieval: {methods: {x: {kind: ft, lr: 0.1, init: adapter}}}",
     "sparse_retrieval.methods.x.init = 'adapter'"),
    ("sparse_retrieval: {methods: {x: {kind: ft, lr: 0.1, negatives: y}, y: {kind: ft, lr: 0.1, negatives: x}}}",
     "its negatives and init lead back to it (x -> y -> x)"),
    ("sparse_retrieval: {methods: {x: {kind: ft, lr: 0.1, distil: true}}}",
     "sparse_retrieval.methods.x.distil: needs"),
    ("sparse_retrieval: {train: {negative_depth: 500}}", "sparse_retrieval.train.negative_depth = 500: at most bm25"),
    ("sparse_retrieval: {metrics: [R-FLOPS]}", "sparse_retrieval.metrics[0] = 'R-FLOPS'"),
    ("sparse_retrieval: {same_documents: {vaswani: nope}}", "sparse_retrieval.same_documents.vaswani value = 'nope'"),
    ("sparse_retrieval: {tables: {table1: {columns: [{label: P, metric: P@5}]}}}",
     "sparse_retrieval.tables.table1 (row 'BM25', column 0) metric = 'P@5': allowed: RR@10, R@1000, nDCG@10, R-FLOPS"),
    ("sparse_retrieval: {tables: {table1: {rows: [{label: FT, backbone: minilm}]}}}",
     "row 'FT', column 0 names no splade"),
    ("sparse_retrieval: {tables: {table1: {rows: [{label: FT, backbone: minilm, splade: ft, target: nope}]}}}",
     "target = 'nope'"),
    ("sparse_retrieval: {folds: [9]}", "sparse_retrieval.folds[0] = '9'"),
    ("sparse_retrieval: {rerankers: {first_stage: {splade: nope}}}",
     "sparse_retrieval.rerankers.first_stage.splade = 'nope'"),
    ("sparse_retrieval: {rerankers: {models: {x: {backbone: b, kind: ft, lr: 0.1, reduction_factor: 4}}}}",
     "sparse_retrieval.rerankers.models.x: reduction_factor goes with kind adapter"),
    ("sparse_retrieval: {rerankers: {rerank: {depth: 5000}}}",
     "sparse_retrieval.rerankers.rerank.depth = 5000: at most sparse_retrieval.index.depth = 1000"),
    ("sparse_retrieval: {tables: {table7: {rows: [{label: MiniLM FT, reranker: nope}]}}}", "reranker = 'nope'"),
    ("sparse_retrieval: {tables: {table7: {columns: [{label: a, metric: RR@10}, {label: m, mean_of: [b]}]}}}",
     "sparse_retrieval.tables.table7 column 'm'.mean_of: 'b' is not the label of another measured column"),
])
def test_a_bad_sparse_config_is_one_line_naming_the_key(irds_home, tmp_path, text, key):
    assert key in one_line_error(tmp_path, text)


def test_a_retriever_cannot_train_on_a_test_only_collection(irds_home, tmp_path):
    overlay = _overlay(tmp_path, "sparse_retrieval: {tables: {table1: {rows: [{label: DistilBERT FT, "
                                 "backbone: splade_pp, splade: ft, dataset: dl19}]}}}\n")
    with pytest.raises(ConfigError, match="dataset = 'dl19': a retriever trains there, which needs its splits"):
        load_config(REPO, [PAPER, overlay])

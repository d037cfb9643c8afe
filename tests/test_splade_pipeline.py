"""What the SPLADE rules add around the package: evaluation with R-FLOPS beside the metrics (on a fold's test
queries, or every test query of another collection), distillation's teacher scores read safely, a second round
started from the first, a zero-shot retriever that trains nothing, the tables' cells (BM25 has no R-FLOPS,
trainable shares printed), and Table 7's rerankers (trained, kept, reranking the first stage's top documents)."""
import gzip
import json
import os
import pickle
from statistics import fmean

import pytest
import torch

from peftir.data import trec
from peftir.pipeline.contract import PARAMS, PATHS
from peftir.pipeline.config import load_config
from peftir.data.folds import write_folds
from peftir.models.learned import load_learned_state
from peftir.execution.seam import CPU
from peftir.splade.cross_encoder import build_cross_encoder
from peftir.models.inputs import Collection
from peftir.reports.retrieval_tables import dense_cells
from peftir.evaluation.metrics import evaluate_scoped
from peftir.provenance.records import sha256
from peftir.splade.teacher import TeacherScoresError, fetch_teacher_scores, read_scores, write_teacher_run
from peftir.splade.train_cross_encoder import rerank_first_stage, train_cross_encoder
from peftir.splade.train import train_splade
from peftir.training.validated import WEIGHTS

from test_dense_config import REPO
from test_splade import ADAPTER, distilbert


@pytest.fixture()
def evaluated(tmp_path):
    """Three queries in three folds (q3 has no relevant document), a run, and each query's FLOPS."""
    write_folds(tmp_path / "folds.json", {"dataset": "toy", "folds": {"1": ["q1"], "2": ["q2"], "3": ["q3"]}})
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 0\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 9 s\nq1 Q0 d2 2 8 s\nq2 Q0 d1 1 9 s\nq2 Q0 d2 2 8 s\n")
    (tmp_path / "flops.json").write_text(json.dumps({"per_query": {"q1": 1.5, "q2": 0.5, "q3": 7.0}}))
    return {name: str(tmp_path / name) for name in ("run", "qrels.txt", "folds.json", "flops.json")}


def test_r_flops_joins_the_metrics_over_the_same_evaluated_queries(evaluated):
    spec = {"metrics": ["RR@10"], "scope": "fold"}
    fold = evaluate_scoped(evaluated["run"], evaluated["qrels.txt"], evaluated["folds.json"], "2",
                               evaluated["flops.json"], spec)
    assert fold["per_query"] == {"q2": {"RR@10": 0.5, "R-FLOPS": 0.5}} and fold["metrics"] == ["RR@10", "R-FLOPS"]
    every = evaluate_scoped(evaluated["run"], evaluated["qrels.txt"], evaluated["folds.json"], "2",
                                evaluated["flops.json"], {**spec, "scope": "all"})
    assert set(every["per_query"]) == {"q1", "q2"}               # q3 has no relevant document: not evaluated
    assert every["mean"]["R-FLOPS"] == fmean([1.5, 0.5]) and every["mean"]["RR@10"] == fmean([1.0, 0.5])
    bm25 = evaluate_scoped(evaluated["run"], evaluated["qrels.txt"], evaluated["folds.json"], "1", None, spec)
    assert bm25["metrics"] == ["RR@10"]


def test_a_beir_query_that_is_also_a_document_does_not_count_itself(tmp_path):
    """ArguAna's shape: the query's own argument is a document of the corpus, found at rank 1, judged nothing."""
    write_folds(tmp_path / "folds.json", {"dataset": "toy", "splits": {"test": ["arg1"]}})
    (tmp_path / "qrels.txt").write_text("arg1 0 arg7 1\n")
    (tmp_path / "run").write_text("arg1 Q0 arg1 1 9 s\narg1 Q0 arg7 2 8 s\n")
    paths = [str(tmp_path / name) for name in ("run", "qrels.txt", "folds.json")]
    spec = {"metrics": ["RR@10"], "scope": "all"}
    assert evaluate_scoped(*paths, "1", None, spec)["mean"]["RR@10"] == 0.5
    assert evaluate_scoped(*paths, "1", None, {**spec, "drop_self_hits": True})["mean"]["RR@10"] == 1.0


def test_beir_collections_and_only_they_are_evaluated_without_self_hits():
    config = load_config(REPO, [str(REPO / "config" / "paper-splade-adapters.yaml")])
    dropped = {target for target in config["datasets"]
               if PARAMS["splade_evaluation"](config, {"target": target, "fold": "1"})["drop_self_hits"]}
    assert {"arguana", "quora"} <= dropped and all(config["datasets"][t]["irds"].startswith("beir/") for t in dropped)
    assert "msmarco-passage" not in dropped


def test_flops_of_another_search_are_refused(evaluated, tmp_path):
    (tmp_path / "other.json").write_text(json.dumps({"per_query": {"q9": 1.0}}))
    with pytest.raises(ValueError, match="no FLOPS for the evaluated queries"):
        evaluate_scoped(evaluated["run"], evaluated["qrels.txt"], evaluated["folds.json"], "1",
                            str(tmp_path / "other.json"), {"metrics": ["RR@10"], "scope": "fold"})


class _Payload:
    def __reduce__(self):
        return os.system, ("echo never",)


def test_teacher_scores_keep_the_training_queries_and_a_pickle_that_builds_objects_is_refused(evaluated, tmp_path):
    scores = tmp_path / "scores.pkl.gz"
    with gzip.open(scores, "wb") as handle:
        pickle.dump({1: {10: 2.5, 11: -1.0}, 2: {12: 0.5}, 3: {}}, handle)
    assert read_scores(scores) == {"1": {"10": 2.5, "11": -1.0}, "2": {"12": 0.5}, "3": {}}
    write_folds(tmp_path / "splits.json", {"dataset": "toy", "splits": {"train": ["1", "3"], "test": ["2"]}})
    digest = sha256(scores)
    facts = write_teacher_run(str(scores), digest, str(tmp_path / "splits.json"), str(tmp_path / "teacher.run"))
    assert facts == {"sha256": digest, "pinned": True, "queries": 1, "scored": 2, "left_out_test": 1}
    assert (tmp_path / "teacher.run").read_text().split("\n")[0].split()[:3] == ["1", "Q0", "10"]
    with gzip.open(tmp_path / "bad.pkl.gz", "wb") as handle:
        pickle.dump({1: _Payload()}, handle)
    with pytest.raises(TeacherScoresError, match="refusing to build posix.system"):
        read_scores(tmp_path / "bad.pkl.gz")
    with pytest.raises(TeacherScoresError, match="no such file"):
        write_teacher_run(str(tmp_path / "absent.pkl.gz"), None, str(tmp_path / "splits.json"),
                          str(tmp_path / "t.run"))


def test_a_teacher_file_that_is_not_the_pinned_one_is_refused_where_read_and_where_downloaded(tmp_path):
    """A file named by path, or placed by hand, is never downloaded: the job that reads it checks the pin too; a
    download that is not the pinned file leaves nothing that looks complete."""
    scores = tmp_path / "scores.pkl.gz"
    with gzip.open(scores, "wb") as handle:
        pickle.dump({1: {10: 2.5}}, handle)
    write_folds(tmp_path / "splits.json", {"dataset": "toy", "splits": {"train": ["1"], "test": []}})
    pin = "0" * 64
    with pytest.raises(TeacherScoresError, match=rf"sha256 [0-9a-f]{{64}}, not the pinned {pin} "
                                                 r"\(sparse_retrieval.teacher.sha256\)"):
        write_teacher_run(str(scores), pin, str(tmp_path / "splits.json"), str(tmp_path / "t.run"))
    assert not (tmp_path / "t.run").exists()
    unpinned = write_teacher_run(str(scores), None, str(tmp_path / "splits.json"), str(tmp_path / "t.run"))
    assert unpinned["sha256"] == sha256(scores) and unpinned["pinned"] is False
    output = tmp_path / "teacher" / "scores.pkl.gz"
    with pytest.raises(TeacherScoresError, match="not the pinned"):
        fetch_teacher_scores({"scores": scores.as_uri(), "sha256": pin}, str(output))
    assert not output.exists() and [path.name for path in output.parent.iterdir()] == []
    assert fetch_teacher_scores({"scores": scores.as_uri(), "sha256": sha256(scores)}, str(output)) == {
        "sha256": sha256(scores), "pinned": True}
    assert output.read_bytes() == scores.read_bytes()


SETTINGS = {"q_max_len": 8, "d_max_len": 16, "logit_offset": -1.0, "batch_size": 2, "chunk": 2, "steps": 2,
            "negative_depth": 8, "validation_depth": 8, "validate_every": 2, "warmup_steps": 1, "weight_decay": 0.0,
            "max_grad_norm": 1.0,
            "in_batch_negatives": True, "regularisation": {"lambda_q": 5e-4, "lambda_d": 9e-5, "warmup_steps": 2}}


@pytest.fixture()
def backbone(tokenizer, tmp_path):
    path = tmp_path / "backbone"
    distilbert(dim=32, n_layers=2, n_heads=2, hidden_dim=64).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def _trained(backbone, english_relevance, tmp_path, name, method, **extra):
    collection, bm25 = english_relevance
    return train_splade(backbone, None, method, SETTINGS, collection, extra.pop("negatives", str(bm25)), str(bm25),
                        ["q1", "q2"], ["q1", "q2"], 1, CPU, str(tmp_path / name), str(tmp_path / f"{name}.json"),
                        **extra)


def test_distillation_trains_on_the_teachers_scored_pairs(backbone, english_relevance, tmp_path):
    teacher = tmp_path / "teacher.run"      # d1, d3 relevant to q1; d0, d2 to q2; each with unjudged scored ones
    teacher.write_text("".join(f"{q} Q0 {d} {r} {s} ce\n" for q, docs in (("q1", "d1 d5 d7"), ("q2", "d2 d4"))
                               for r, (d, s) in enumerate(zip(docs.split(), (3.0, -1.0, -2.0)), start=1)))
    method = {**ADAPTER, "lr": 1e-2}
    facts = _trained(backbone, english_relevance, tmp_path, "distilled", method, negatives=str(teacher),
                     teacher=str(teacher))
    plain = _trained(backbone, english_relevance, tmp_path, "plain", method)
    assert facts["losses"] != plain["losses"] and all(loss >= 0 for loss in facts["losses"])    # MarginMSE ≥ 0


def test_a_second_round_starts_from_the_first_and_none_trains_nothing(backbone, english_relevance, tmp_path):
    method = {**ADAPTER, "lr": 1e-2}
    _trained(backbone, english_relevance, tmp_path, "round1", method)
    first = torch.load(tmp_path / "round1" / WEIGHTS, weights_only=True)
    second = _trained(backbone, english_relevance, tmp_path, "round2", {**method, "lr": 1e-12},
                      init=str(tmp_path / "round1"))
    kept = torch.load(tmp_path / "round2" / WEIGHTS, weights_only=True)
    assert second["best_step"] in (0, 2)
    assert all(torch.allclose(kept[n], first[n], atol=1e-6) for n in first)      # a vanishing step: round 1's
    none = _trained(backbone, english_relevance, tmp_path, "zero-shot", {"name": "none"})
    assert none["trainable_parameters"] == 0 and none["losses"] == [] and none["validation"] == []
    assert torch.load(tmp_path / "zero-shot" / WEIGHTS, weights_only=True) == {}


def _write_metrics(path: str, per_query: dict[str, dict[str, float]]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    metrics = sorted({m for values in per_query.values() for m in values})
    mean = {m: fmean(values[m] for values in per_query.values()) for m in metrics}
    with open(path, "w") as handle:
        json.dump({"metrics": metrics, "mean": mean, "per_query": per_query}, handle)


def test_a_splade_tables_bm25_row_has_no_r_flops_and_a_retriever_prints_its_trainable_share(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bm25 = "results/sparse/metrics/toy/bm25/fold1.json"
    trained = "results/sparse/metrics/toy/toy/mini/adapter/fold1-seed1.json"
    summary = "results/sparse/models/toy/mini/adapter/fold1-seed1.json"
    _write_metrics(bm25, {"q1": {"RR@10": 0.5}, "q2": {"RR@10": 1.0}})
    _write_metrics(trained, {"q1": {"RR@10": 1.0, "R-FLOPS": 2.0}, "q2": {"RR@10": 1.0, "R-FLOPS": 4.0}})
    os.makedirs(os.path.dirname(summary))
    with open(summary, "w") as handle:
        json.dump({"trainable_parameters": 1_517_178, "percent_trainable": 2.235}, handle)
    layout = {"name": "splade-adapters/t", "caption": "c", "baseline": None,
              "columns": [{"label": "MRR@10", "metric": "RR@10"}, {"label": "R-FLOPS", "metric": "R-FLOPS"}],
              "rows": [{"label": "BM25", "dataset": "toy", "reference": "bm25"},
                       {"label": "Adapter", "dataset": "toy", "backbone": "mini", "splade": "adapter"}],
              "folds": {"toy": ["1"]}, "seeds": [1]}
    cells = dense_cells(layout, [bm25, trained], [summary], PATHS)
    assert [c["printed"] for c in cells] == ["0.7500", "-", "1.0000", "3.0000"]
    assert cells[1]["runs"] is None and cells[3]["printed_parameters"] == "1.5M (2.23%)"
    layout["columns"].append({"label": "Mean", "mean_of": ["MRR@10", "R-FLOPS"]})      # as Table 3's BEIR mean
    layout["baseline"] = "Adapter"
    cells = dense_cells(layout, [bm25, trained], [summary], PATHS)
    assert [c["printed"] for c in cells] == ["0.7500", "-", "-", "1.0000", "3.0000", "2.0000"]
    assert cells[5]["candidates"] == {"MRR@10": 1.0, "R-FLOPS": 3.0} and cells[5]["ttest"] is None


@pytest.mark.parametrize("kind", ["ft", "adapter"])
def test_a_reranker_trains_its_head_and_method_and_reranks_the_first_stage_with_what_it_kept(
        backbone, english_relevance, tmp_path, kind):
    collection, bm25 = english_relevance
    write_folds(tmp_path / "folds.json", {"dataset": "toy", "splits": {"train": ["q1", "q2"], "valid": ["q1", "q2"],
                                                                      "test": ["q1", "q2"]}})
    collection = Collection(**{**vars(collection), "folds": str(tmp_path / "folds.json")})
    method = {"name": kind, "lr": 1e-2, **({"reduction_factor": 16} if kind == "adapter" else {})}
    spec = {"backbone": backbone, "method": method, "execution": {"device": "cpu", "precision": "fp32"},
            "train": {"max_len": 24, "batch_size": 2, "steps": 2, "negative_depth": 8, "validation_queries": None,
                      "validation_depth": 8, "validate_every": 1, "warmup_steps": 0, "weight_decay": 0.0,
                      "max_grad_norm": 1.0}}
    facts = train_cross_encoder(spec, collection, str(bm25), "1", 1, 1, str(tmp_path / "model"),
                                str(tmp_path / "model.json"))
    saved = torch.load(tmp_path / "model" / WEIGHTS, weights_only=True)
    assert {"head.weight", "head.bias"} <= set(saved) and facts["trainable_parameters"] == sum(map(torch.numel,
                                                                                                   saved.values()))
    assert (facts["percent_trainable"] < 100) == (kind == "adapter") and len(facts["validation"]) == 2
    about = {"target": "toy", "dataset": "toy", "reranker": kind, "fold": "1", "seed": "1"}
    done = rerank_first_stage(spec, {"depth": 3, "batch_size": 2, "scope": "fold"}, collection, str(bm25), "1", 1,
                              str(tmp_path / "model"), about, str(tmp_path / "run"), str(tmp_path / "run.yaml"))
    reranked = trec.read_run(tmp_path / "run")
    assert done["pairs"] == 6 and {q: set(docs) for q, docs in reranked.items()} == {q: {"d0", "d1", "d2"}
                                                                                       for q in ("q1", "q2")}
    model = build_cross_encoder(backbone, method, 24)
    load_learned_state(model, saved)
    with torch.no_grad():
        again = model.eval().score(["cat mat"], ["the cat sat on the mat item 1"]).item()
    assert again == pytest.approx(reranked["q1"]["d1"], rel=1e-4)

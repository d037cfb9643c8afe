"""Metrics must match trec_eval; expectations are computed by hand here."""
from __future__ import annotations

import math

import pytest

from peftir.evaluation import (evaluate_run, metric_summary, parse_metric, read_metrics,
                               write_metrics)

# q1 has graded judgments; d4 (relevant) is never retrieved, d3 is judged non-relevant.
QRELS = {
    "q1": {"d1": 2, "d2": 1, "d3": 0, "d4": 1},
    "q2": {"x1": 0, "x2": 0},          # no relevant document: trec_eval skips it
    "q3": {"y1": 1},                   # relevant, but absent from the run
}
RUN = {
    "q1": {"d3": 0.9, "d1": 0.8, "d5": 0.7, "d2": 0.6, "d6": 0.5},  # d3 d1 d5 d2 d6
    "q2": {"x1": 1.0},
}


def test_precision_recall_map_on_hand_example() -> None:
    result = evaluate_run(RUN, QRELS, ["P@2", "P@5", "R@2", "R@100", "MAP"], qids=["q1"])
    q1 = result["q1"]
    assert q1["P@2"] == pytest.approx(1 / 2)
    assert q1["P@5"] == pytest.approx(2 / 5)
    assert q1["R@2"] == pytest.approx(1 / 3)
    assert q1["R@100"] == pytest.approx(2 / 3)
    # relevant at ranks 2 and 4, 3 relevant in all: (1/2 + 2/4) / 3
    assert q1["MAP"] == pytest.approx((1 / 2 + 2 / 4) / 3)


def test_ndcg_uses_grades_and_log2_discounts() -> None:
    q1 = evaluate_run(RUN, QRELS, ["nDCG@3", "nDCG@5"], qids=["q1"])["q1"]
    dcg3 = 0 / math.log2(2) + 2 / math.log2(3) + 0 / math.log2(4)
    ideal3 = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert q1["nDCG@3"] == pytest.approx(dcg3 / ideal3)
    dcg5 = dcg3 + 1 / math.log2(5)
    assert q1["nDCG@5"] == pytest.approx(dcg5 / ideal3)


def test_mrr_counts_only_the_top_k() -> None:
    qrels = {"q": {"rel": 1}}
    run = {"q": {f"n{i:02d}": 100.0 - i for i in range(10)} | {"rel": 50.0}}  # rel at rank 11
    result = evaluate_run(run, qrels, ["MRR@10", "MRR@11"])["q"]
    assert result["MRR@10"] == 0.0
    assert result["MRR@11"] == pytest.approx(1 / 11)
    assert evaluate_run(RUN, QRELS, ["MRR@1", "MRR@10"], qids=["q1"])["q1"] == {
        "MRR@1": 0.0, "MRR@10": pytest.approx(1 / 2)}


def test_query_without_relevant_documents_is_skipped() -> None:
    result = evaluate_run(RUN, QRELS, ["P@2"])
    assert "q2" not in result
    assert sorted(result) == ["q1", "q3"]
    assert evaluate_run(RUN, QRELS, ["P@2"], qids=["q2"]) == {}


def test_query_missing_from_run_scores_zero() -> None:
    result = evaluate_run(RUN, QRELS, ["P@2", "nDCG@5", "MAP", "MRR@10", "R@100"], qids=["q3"])
    assert result == {"q3": {"P@2": 0.0, "nDCG@5": 0.0, "MAP": 0.0, "MRR@10": 0.0, "R@100": 0.0}}


def test_summary_mean_and_round_trip(tmp_path) -> None:
    per_query = evaluate_run(RUN, QRELS, ["P@2", "MAP"])
    summary = metric_summary(per_query, ["P@2", "MAP"])
    assert summary["queries"] == 2
    assert summary["mean"]["P@2"] == pytest.approx((1 / 2 + 0) / 2)
    write_metrics(tmp_path / "m.json", summary, {"dataset": "toy", "fold": "f1"})
    stored = read_metrics(tmp_path / "m.json")
    assert stored["dataset"] == "toy" and stored["metrics"] == ["P@2", "MAP"]
    assert stored["queries"] == 2 and stored["per_query"]["q3"]["MAP"] == 0.0
    assert stored["mean"]["MAP"] == pytest.approx(((1 / 2 + 2 / 4) / 3) / 2)


def test_summary_refuses_an_empty_evaluation() -> None:
    with pytest.raises(ValueError):
        metric_summary({}, ["P@2"])


@pytest.mark.parametrize("name, measure", [("P@20", "P_20"), ("nDCG@5", "ndcg_cut_5"),
                                           ("MAP", "map"), ("R@100", "recall_100"),
                                           ("MRR@10", "recip_rank")])
def test_parse_metric_maps_to_trec_eval(name: str, measure: str) -> None:
    assert parse_metric(name).measure == measure


@pytest.mark.parametrize("bad", ["P@0", "ndcg@5", "MAP@10", "MRR", "P@x", "recall", ""])
def test_parse_metric_rejects_unknown_forms(bad: str) -> None:
    with pytest.raises(ValueError, match="P@k"):
        parse_metric(bad)

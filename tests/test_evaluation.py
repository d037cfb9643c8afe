"""Metrics (ir_measures) must match trec_eval; expectations are computed by hand here."""
from __future__ import annotations

import math

import pytest

from peftir.data import trec
from peftir.data.run_index import RunIndex
from peftir.evaluation.metrics import evaluate_run, metric_summary, read_metrics, write_metrics
from peftir.contract.measures import measure

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
    result = evaluate_run(RUN, QRELS, ["P@2", "P@5", "R@2", "R@100", "AP"], qids=["q1"])
    q1 = result["q1"]
    assert q1["P@2"] == pytest.approx(1 / 2)
    assert q1["P@5"] == pytest.approx(2 / 5)
    assert q1["R@2"] == pytest.approx(1 / 3)
    assert q1["R@100"] == pytest.approx(2 / 3)
    # relevant at ranks 2 and 4, 3 relevant in all: (1/2 + 2/4) / 3
    assert q1["AP"] == pytest.approx((1 / 2 + 2 / 4) / 3)


def test_ndcg_uses_grades_and_log2_discounts() -> None:
    q1 = evaluate_run(RUN, QRELS, ["nDCG@3", "nDCG@5"], qids=["q1"])["q1"]
    dcg3 = 0 / math.log2(2) + 2 / math.log2(3) + 0 / math.log2(4)
    ideal3 = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert q1["nDCG@3"] == pytest.approx(dcg3 / ideal3)
    dcg5 = dcg3 + 1 / math.log2(5)
    assert q1["nDCG@5"] == pytest.approx(dcg5 / ideal3)


def test_reciprocal_rank_counts_only_the_top_k() -> None:
    qrels = {"q": {"rel": 1}}
    run = {"q": {f"n{i:02d}": 100.0 - i for i in range(10)} | {"rel": 50.0}}  # rel at rank 11
    result = evaluate_run(run, qrels, ["RR@10", "RR@11", "RR"])["q"]
    assert result["RR@10"] == 0.0
    assert result["RR@11"] == result["RR"] == pytest.approx(1 / 11)
    assert evaluate_run(RUN, QRELS, ["RR@1", "RR@10"], qids=["q1"])["q1"] == {
        "RR@1": 0.0, "RR@10": pytest.approx(1 / 2)}


def test_query_without_relevant_documents_is_skipped() -> None:
    result = evaluate_run(RUN, QRELS, ["P@2"])
    assert "q2" not in result
    assert sorted(result) == ["q1", "q3"]
    assert evaluate_run(RUN, QRELS, ["P@2"], qids=["q2"]) == {}


def test_query_missing_from_run_scores_zero() -> None:
    result = evaluate_run(RUN, QRELS, ["P@2", "nDCG@5", "AP", "RR@10", "R@100"], qids=["q3"])
    assert result == {"q3": {"P@2": 0.0, "nDCG@5": 0.0, "AP": 0.0, "RR@10": 0.0, "R@100": 0.0}}


# Three documents tied at the depth-2 boundary, one of them relevant: which two a cut keeps decides P@2.
TIED = {"q": {"top": 9.0, "d10": 1.0, "d2": 1.0, "d9": 1.0, "low": 0.5}}
TIED_QRELS = {"q": {"d9": 1, "top": 1}}


def test_ties_are_ranked_and_cut_as_the_evaluator_breaks_them(tmp_path) -> None:
    """trec_eval ranks equal scores by docid descending ("d9" > "d2" > "d10" as strings): a run cut at depth k keeps
    the documents the evaluator itself ranks in its top k, so metrics of the cut run equal the full run's at k, and
    a written run's ranks follow the same order."""
    assert [doc for doc, _ in trec.ranked(TIED["q"])] == ["top", "d9", "d2", "d10", "low"]
    cut = trec.truncate_run(TIED, 2)
    assert cut == {"q": {"top": 9.0, "d9": 1.0}}
    full = evaluate_run(TIED, TIED_QRELS, ["P@2", "P@3", "RR@10"])["q"]
    assert full["P@2"] == evaluate_run(cut, TIED_QRELS, ["P@2"])["q"]["P@2"] == 1.0   # ascending ids: d10, 1/2
    assert full["P@3"] == evaluate_run(trec.truncate_run(TIED, 3), TIED_QRELS, ["P@3"])["q"]["P@3"] == 2 / 3
    trec.write_run(tmp_path / "run", TIED, tag="t")
    lines = (tmp_path / "run").read_text().split("\n")
    assert [line.split()[2] for line in lines if line] == ["top", "d9", "d2", "d10", "low"]
    assert trec.read_run(tmp_path / "run", depth=2) == cut
    assert [doc for doc, _ in RunIndex(tmp_path / "run").top("q", 3)] == ["top", "d9", "d2"]


def test_every_measure_breaks_a_tie_as_trec_eval_does() -> None:
    """RR@10 comes from ir_measures' msmarco provider (pytrec_eval's RR has no cutoff), which sorts a tie by
    ascending docid: without the run put in trec_eval's order first, RR@10 and RR of one run would disagree."""
    tied = {"q": {"a": 1.0, "b": 1.0}}          # trec_eval ranks b first
    assert evaluate_run(tied, {"q": {"a": 1}}, ["RR@10", "RR", "P@1", "nDCG@1"])["q"] == {
        "RR@10": 0.5, "RR": 0.5, "P@1": 0.0, "nDCG@1": 0.0}


def test_summary_mean_and_round_trip(tmp_path) -> None:
    per_query = evaluate_run(RUN, QRELS, ["P@2", "AP"])
    summary = metric_summary(per_query, ["P@2", "AP"])
    assert summary["queries"] == 2
    assert summary["mean"]["P@2"] == pytest.approx((1 / 2 + 0) / 2)
    write_metrics(tmp_path / "m.json", summary, {"dataset": "toy", "fold": "f1"})
    stored = read_metrics(tmp_path / "m.json")
    assert stored["dataset"] == "toy" and stored["metrics"] == ["P@2", "AP"]
    assert stored["queries"] == 2 and stored["per_query"]["q3"]["AP"] == 0.0
    assert stored["mean"]["AP"] == pytest.approx(((1 / 2 + 2 / 4) / 3) / 2)


def test_summary_refuses_an_empty_evaluation() -> None:
    with pytest.raises(ValueError):
        metric_summary({}, ["P@2"])


@pytest.mark.parametrize("name, provider", [("P@20", "pytrec_eval"), ("nDCG@5", "pytrec_eval"), ("AP", "pytrec_eval"),
                                            ("R@1000", "pytrec_eval"), ("RR@10", "msmarco")])
def test_metric_names_are_ir_measures_names_with_a_fixed_provider(name: str, provider: str) -> None:
    from peftir.contract.measures import measure_provider

    assert str(measure(name)) == name
    assert measure_provider(measure(name)).NAME == provider


@pytest.mark.parametrize("bad, why", [("P@0", "positive integer"), ("ndcg@5", "not an ir_measures measure"),
                                      ("MAP", "calls 'MAP' 'AP'"), ("MRR@10", "calls 'MRR@10' 'RR@10'"),
                                      ("P@x", "not an ir_measures measure"), ("recall", "not an ir_measures"),
                                      ("", "not an ir_measures measure"), ("ERR@20", "none of the providers")])
def test_unknown_or_alias_metric_names_are_rejected_with_the_reason(bad: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        measure(bad)

"""The dense retrieval stages the rules call: training queries of a fold, UNM's negatives (sampled and denoised
with a calibrated reranker), the corpus indexed and searched in full, the tables' cells and paired t-tests."""
import json
import random
from pathlib import Path

import pytest
from scipy import stats

from peftir.data import trec
from peftir.evaluation.metrics import write_metrics
from peftir.pipeline.contract import PATHS
from peftir.reports import retrieval_tables as dense
from peftir.dense import negative_mining
from peftir.dense.train import training_queries

FOLDS = {"dataset": "toy", "folds": {str(k): [f"q{k}{i}" for i in range(4)] for k in range(1, 6)}}


def _folds(tmp_path: Path, doc: dict) -> str:
    path = tmp_path / "folds.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_retriever_trains_on_its_folds_training_and_validation_queries(tmp_path):
    path = _folds(tmp_path, FOLDS)
    qids = training_queries(path, "1")
    # fold 1 tests, fold 5 validates (nothing to select: it trains too), folds 2-4 train; never the test fold
    assert set(qids) == {q for k in ("2", "3", "4", "5") for q in FOLDS["folds"][k]} and len(qids) == 16
    few = training_queries(path, "1", limit=5, seed=3)
    assert len(few) == 5 and set(few) <= set(qids) and few == training_queries(path, "1", limit=5, seed=3)
    presplit = _folds(tmp_path, {"dataset": "toy", "splits": {"train": ["a", "b"], "valid": ["c"], "test": ["d"]}})
    assert training_queries(presplit, "1") == ["a", "b"]           # a pre-split collection's training split only


def _run(path: Path, ranking: dict[str, list[str]]) -> str:
    trec.write_run(path, {qid: {doc: -rank for rank, doc in enumerate(docs)} for qid, docs in ranking.items()},
                   tag="t")
    return str(path)


def test_unm_samples_non_relevant_documents_from_the_top_of_both_runs(english_relevance, tmp_path):
    collection, _ = english_relevance
    collection = collection.__class__(**{**vars(collection), "folds": _folds(tmp_path, {
        "dataset": "toy", "splits": {"train": ["q1", "q2"], "valid": [], "test": []}})})
    bm25 = _run(tmp_path / "bm25.run", {"q1": ["d1", "d0", "d2", "d4", "d6"], "q2": ["d0", "d1", "d3", "d5"]})
    first = _run(tmp_path / "first.run", {"q1": ["d7", "d3", "d5"], "q2": ["d2", "d7", "d6"]})
    mining = {"depth": 3, "sample": 1, "seed": 1, "negatives": "mined"}
    facts = negative_mining.mine_negatives(collection, bm25, first, "1", mining, 1, str(tmp_path / "n.run"),
                                           str(tmp_path / "n.json"))
    pools = trec.read_run(tmp_path / "n.run")
    relevant = {"q1": {"d1", "d3"}, "q2": {"d0", "d2"}}
    allowed = {"q1": {"d0", "d2", "d7", "d5"}, "q2": {"d1", "d3", "d7", "d6"}}   # non-relevant, top 3 of each run
    for qid, docs in pools.items():
        assert set(docs) <= allowed[qid] and not set(docs) & relevant[qid]
        assert 1 <= len(docs) <= 2                                  # one from each run (the same one at most once)
    assert facts["pool"] == sum(len(docs) for docs in pools.values()) and "calibration" not in facts
    again = negative_mining.mine_negatives(collection, bm25, first, "1", mining, 1, str(tmp_path / "m.run"),
                                           str(tmp_path / "m.json"))
    assert again == facts and (tmp_path / "m.run").read_text() == (tmp_path / "n.run").read_text()


def _denoiser(tmp_path: Path) -> tuple[dict, str]:
    """A monoBERT on the embedded backbone's lowest layer, its (untrained) weights saved as a ``train`` job saves
    them, and the ``reranker`` entry of a ``mining`` param naming it."""
    import torch

    from peftir.execution.seam import CPU
    from peftir.semi_siamese.contract import resolve_method
    from peftir.models.learned import learned_state
    from peftir.semi_siamese.configured import configured_ranker
    from peftir.contract.backbones import EMBEDDED

    reranker = {"ranker": "monobert", "method": "full", "seed": 1, "calibration_queries": 1, "calibration_negatives": 4,
                "backbone": {"name": EMBEDDED, "layers": 1}, "resolved": resolve_method("full", {"full": {}}),
                "settings": {"max_query_len": 8, "max_doc_len": 16, "max_seq_len": 32, "monobert": {"dropout": 0.1}},
                "training": {"lr": {"ranker": 1e-4, "bert": 1e-5, "peft": 1e-4}}, "rerank": {"batch_size": 4},
                "execution": {"device": "cpu", "precision": "fp32"}}
    model, _, _ = configured_ranker("monobert", reranker["backbone"], reranker["settings"], reranker["resolved"],
                                    reranker["training"]["lr"], CPU)
    torch.save({"state": learned_state(model), "epoch": 1}, tmp_path / "monobert.pt")
    return reranker, str(tmp_path / "monobert.pt")


@pytest.mark.parametrize("threshold", [0.999, 1e-9])
def test_denoised_negatives_are_the_candidates_the_calibrated_reranker_puts_below_the_threshold(
        english_relevance, tmp_path, threshold):
    collection, _ = english_relevance
    collection = collection.__class__(**{**vars(collection), "folds": _folds(tmp_path, {
        "dataset": "toy", "splits": {"train": ["q1", "q2"], "valid": [], "test": []}})})
    bm25 = _run(tmp_path / "bm25.run", {"q1": ["d1", "d0", "d2", "d4", "d6"], "q2": ["d0", "d1", "d3", "d5"]})
    first = _run(tmp_path / "first.run", {"q1": ["d7", "d3", "d5"], "q2": ["d2", "d7", "d6"]})
    reranker, weights = _denoiser(tmp_path)
    mining = {"depth": 3, "sample": 1, "seed": 1, "negatives": "denoised", "reranker": {**reranker,
                                                                                        "threshold": threshold}}
    facts = negative_mining.mine_negatives(collection, bm25, first, "1", mining, 1, str(tmp_path / "n.run"),
                                           str(tmp_path / "n.json"), reranker_weights=weights)
    pools = trec.read_run(tmp_path / "n.run")
    relevant = {"q1": {"d1", "d3"}, "q2": {"d0", "d2"}}
    assert facts["calibration"]["queries"] == 1 and all(not set(docs) & relevant[q] for q, docs in pools.items())
    # the balanced class mix reaches the fit: the fitted query's 2 judged positives and 4 negatives for each (all 4
    # of its non-relevant candidates, fewer than 8), as written in the summary the rule keeps
    assert {key: facts["calibration"][key] for key in ("negatives_per_positive", "positives", "negatives")} == \
        {"negatives_per_positive": 4, "positives": 2, "negatives": 4}
    assert json.loads((tmp_path / "n.json").read_text())["calibration"] == facts["calibration"]
    candidates = 4 + 4                      # the non-relevant of each run's top 3: q1 d0 d2 d7 d5, q2 d1 d3 d7 d6
    assert facts["candidates_below"] + facts["candidates_at_or_above"] == candidates
    if threshold > 0.5:      # every candidate a denoised negative: one more drawn per query, at most
        assert facts["candidates_at_or_above"] == 0 and facts["undenoised"] <= facts["pool"] <= facts["undenoised"] + 2
    else:                    # none: the pool is the un-denoised one
        assert facts["candidates_below"] == 0 and facts["pool"] == facts["undenoised"]


def test_the_reranker_is_calibrated_to_a_probability_of_relevance():
    rng = random.Random(0)
    scores = {f"q{i}": {f"r{i}": 3 + rng.random(), **{f"n{i}{j}": rng.random() - 2 for j in range(20)}}
              for i in range(20)}
    qrels = {f"q{i}": {f"r{i}": 1} for i in range(20)}
    model = negative_mining.calibration(scores, qrels)
    low, high = model.predict_proba([[-2.0], [3.5]])[:, 1]
    assert model.coef_[0][0] > 0 and low < 0.1 < 0.9 < high        # monotone, separating, a probability
    with pytest.raises(ValueError, match="all non-relevant"):
        negative_mining.calibration(scores, {})


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_the_corpus_is_encoded_once_and_every_query_searched(english_relevance, tmp_path, kind):
    from peftir.contract.backbones import EMBEDDED
    from peftir.retrieval import faiss_index
    from peftir.dense.search import index_corpus, search_queries

    collection, _ = english_relevance
    spec = {"backbone": EMBEDDED, "layers": 1, "execution": {"device": "cpu", "precision": "fp32"}}
    search = {"index": kind, "depth": 5, "batch_size": 4, "hnsw_m": 8, "ef_search": 4, "q_max_len": 8,
              "p_max_len": 16}
    facts = index_corpus(spec, search, collection.docs, 1, str(tmp_path / "index"))
    assert facts["documents"] == 8 and len(faiss_index.read(tmp_path / "index", 1).ids) == 8
    assert facts["shards"] == 1 and facts["kind"] == kind
    about = {"dataset": "toy", "backbone": "minilm"}
    found = search_queries(spec, search, str(tmp_path / "index"), collection.queries, 1, about,
                           str(tmp_path / "x.run"), str(tmp_path / "x.yaml"))
    run = trec.read_run(tmp_path / "x.run")
    assert set(run) == {"q1", "q2"} and all(len(docs) == 5 for docs in run.values())
    metadata = (tmp_path / "x.yaml").read_text()
    assert ("recall_against_exact" in found) == (kind == "hnsw") and "ms_per_query" not in metadata
    if kind == "hnsw":
        assert 0 <= found["recall_against_exact"] <= 1 and "recall_against_exact" in metadata


# --- the tables -----------------------------------------------------------------------------------------------
LAYOUT = {"name": "dptdr/table3", "caption": "A test table.", "baseline": "FT", "folds": {"toy": ["1", "2"]}, "seeds": [1],
          "columns": [{"label": "MRR@10", "metric": "RR@10"}, {"label": "R@1000", "metric": "R@1000"}],
          "rows": [{"label": "BM25", "reference": "bm25", "dataset": "toy"},
                   {"label": "FT", "dataset": "toy", "backbone": "b", "retriever": "ft", "negatives": "bm25"},
                   {"label": "DPT", "dataset": "toy", "backbone": "b", "retriever": "dpt", "negatives": "bm25"},
                   {"label": "Paper", "dataset": "toy", "reported": {"source": "a paper", "values": [0.4, None]}}]}


def _metrics(path: str, values: dict[str, float]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    per_query = {qid: {"RR@10": v, "R@1000": min(1.0, 2 * v)} for qid, v in values.items()}
    means = {m: sum(q[m] for q in per_query.values()) / len(per_query) for m in ("RR@10", "R@1000")}
    write_metrics(path, {"mean": means, "per_query": per_query}, extra={})


@pytest.fixture()
def table_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = random.Random(1)
    metrics, summaries = [], []
    for fold in ("1", "2"):
        _metrics(PATHS.dense_bm25_metrics.format(dataset="toy", fold=fold), {f"q{fold}{i}": 0.1 for i in range(6)})
        metrics.append(PATHS.dense_bm25_metrics.format(dataset="toy", fold=fold))
        for retriever, shift in (("ft", 0.0), ("dpt", 0.2)):
            key = {"dataset": "toy", "backbone": "b", "retriever": retriever, "negatives": "bm25", "fold": fold,
                   "seed": 1}
            _metrics(PATHS.dense_metrics.format(**key), {f"q{fold}{i}": rng.random() * 0.5 + shift for i in range(6)})
            Path(PATHS.retriever_summary.format(**key)).parent.mkdir(parents=True, exist_ok=True)
            Path(PATHS.retriever_summary.format(**key)).write_text(json.dumps({"trainable_parameters": 100}))
            metrics.append(PATHS.dense_metrics.format(**key))
            summaries.append(PATHS.retriever_summary.format(**key))
    return metrics, summaries


def test_a_dense_table_cell_is_the_mean_of_its_runs_and_tested_paired_against_the_baseline(table_files):
    metrics, summaries = table_files
    cells = {cell["cell"]: cell for cell in dense.dense_cells(LAYOUT, metrics, summaries, PATHS)}
    dpt, ft = cells["DPT | MRR@10"], cells["FT | MRR@10"]
    assert dpt["value"] == pytest.approx(sum(r["value"] for r in dpt["runs"]) / 2) and len(dpt["runs"]) == 2
    pairs = sorted((r["fold"], q) for r in dpt["runs"] for q in r["per_query"])
    values = [next(r["per_query"][q] for r in dpt["runs"] if r["fold"] == f) for f, q in pairs]
    baseline = [next(r["per_query"][q] for r in ft["runs"] if r["fold"] == f) for f, q in pairs]
    assert dpt["p_value"] == pytest.approx(stats.ttest_rel(values, baseline).pvalue)
    assert dpt["stars"] == ("*" if dpt["p_value"] <= 0.05 else "") and ft["ttest"] is None
    assert cells["BM25 | MRR@10"]["value"] == pytest.approx(0.1) and cells["BM25 | MRR@10"]["ttest"] is None
    assert cells["Paper | MRR@10"]["printed"] == "0.4" and cells["Paper | R@1000"]["printed"] == "-"
    assert cells["Paper | MRR@10"]["runs"] is None and cells["Paper | MRR@10"]["label"].endswith(dense.DAGGER)
    assert dpt["trainable_parameters"] == 100 and cells["BM25 | MRR@10"]["trainable_parameters"] is None


def test_a_retrieval_tables_star_averages_seeds_per_query_before_pairing():
    """Three seeds of the same 4 queries: 4 pairs of per-query means, not 12 (fold, seed, query) tuples that would
    count each query three times."""
    def cell(name: str, base: float) -> dict:
        return {"cell": name, "runs": [{"fold": "1", "seed": seed, "per_query": {f"q{i}": base + 0.01 * i * seed
                                                                                  for i in range(4)}}
                                       for seed in (1, 2, 3)]}

    values, baseline = dense.paired_values(cell("DPT", 0.3), cell("FT", 0.2))
    assert len(values) == 4
    assert values == pytest.approx([0.3 + 0.01 * i * 2 for i in range(4)])         # the mean over seeds 1, 2, 3
    assert dense.paired_p(values, baseline) == pytest.approx(stats.ttest_rel(values, baseline).pvalue)


def test_a_dense_table_refuses_a_missing_run_or_a_file_it_does_not_show(table_files, tmp_path):
    metrics, summaries = table_files
    with pytest.raises(ValueError, match="the table needs"):
        dense.dense_cells(LAYOUT, metrics[:-1], summaries, PATHS)
    with pytest.raises(ValueError, match="not a trained retriever's"):
        dense.dense_cells(LAYOUT, metrics + ["results/metrics/toy/x.json"], summaries, PATHS)


def test_the_dense_latex_names_its_test_and_its_copied_rows(table_files, tmp_path):
    metrics, summaries = table_files
    dense.make_dense_table(LAYOUT, metrics, summaries, PATHS, "t.tex", "t.json", "t.csv")
    latex = Path("t.tex").read_text()
    assert "paired two-sided t-test" in latex and r"\dagger" in latex and "FT" in latex
    from peftir.reports.tables import read_table
    assert dense.render_dense_latex(read_table("t.json"), LAYOUT) == latex


def test_the_calibration_targets_the_class_mix_a_cross_encoder_trains_on():
    """RocketQA's 0.1 is a probability of its cross-encoder, trained on a query's judged positives and 4 negatives
    each: fitted on every candidate (one positive in 330) the scaling gives the probability of being *judged*, and
    a candidate that scores like a positive stays far below 0.1; fitted at the cross-encoder's mix, it is above."""
    rng = random.Random(0)
    scores = {f"q{i}": {f"r{i}": rng.gauss(3, 1), **{f"n{i}-{j}": rng.gauss(0, 1) for j in range(329)}}
              for i in range(300)}
    qrels = {f"q{i}": {f"r{i}": 1} for i in range(300)}
    every = negative_mining.calibration(scores, qrels)
    fitted = negative_mining.balanced({q: list(docs) for q, docs in scores.items()}, qrels, 4, random.Random(1))
    assert all(len(docs) == 5 and docs[0] == f"r{q[1:]}" for q, docs in fitted.items())
    mix = negative_mining.calibration({q: {d: scores[q][d] for d in docs} for q, docs in fitted.items()}, qrels)
    looks_relevant = [[2.0]]
    assert every.predict_proba(looks_relevant)[0, 1] < 0.05 < 0.3 < mix.predict_proba(looks_relevant)[0, 1]
    assert negative_mining.balanced({"q": ["a", "b"]}, {"q": {}}, 4, random.Random(1)) == {}   # no positive: left out

"""DPTDR Table 8's alignment and uniformity (Wang & Isola 2020): the measures against hand computations, a backbone's
[CLS] measured from its index and its encoded queries, the plan, the config check and the table's cells."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from peftir.dense import representation_geometry as geometry
from peftir.files import write_json
from peftir.contract.measures import ALIGNMENT, UNIFORMITY
from peftir.pipeline.contract import PATHS
from peftir.reports import retrieval_tables as dense
from peftir.pipeline.config import load_config

from test_clir_config import one_line_error
from peftir.dense import plan as dense_plan

REPO = Path(__file__).resolve().parents[1]


def test_identical_pairs_align_perfectly_and_antipodal_points_are_the_most_uniform_pair():
    vectors = np.array([[3.0, 4.0], [0.0, -2.0]])
    assert geometry.squared_distances(vectors, 7 * vectors).tolist() == [0.0, 0.0]     # length does not count
    assert geometry.squared_distances(np.array([[1.0, 0.0]]), np.array([[0.0, 5.0]]))[0] == pytest.approx(2.0)
    # two antipodal unit vectors: ||x - y||² = 4, so log E exp(-2 · 4) over the one distinct pair is -8
    assert geometry.uniformity(np.array([[2.0, 0.0], [-1.0, 0.0]])) == pytest.approx(-8.0)
    # three: x, x and -x: pairs at 0, 4, 4 → log((1 + 2e^-8) / 3); the same point twice is the worst (0)
    assert geometry.uniformity(np.array([[1.0, 0], [1.0, 0], [-1.0, 0]])) == pytest.approx(
        math.log((1 + 2 * math.exp(-8)) / 3))
    assert geometry.uniformity(np.array([[1.0, 1.0], [2.0, 2.0]])) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="two vectors"):
        geometry.uniformity(np.array([[1.0, 0.0]]))


def test_blocks_give_the_uniformity_of_every_distinct_pair(monkeypatch):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(7, 5))
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = [np.exp(-2 * ((unit[i] - unit[j]) ** 2).sum()) for i in range(7) for j in range(i + 1, 7)]
    monkeypatch.setattr(geometry, "BLOCK", 3)
    assert geometry.uniformity(vectors) == pytest.approx(math.log(np.mean(pairs)), abs=1e-12)


def test_alignment_is_per_query_then_the_mean_over_queries():
    queries = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}
    passages = {"p": np.array([1.0, 0.0]), "q": np.array([-1.0, 0.0]), "r": np.array([0.0, 3.0])}
    found = geometry.geometry(queries, passages, {"a": ["p", "q"], "b": ["r"]})
    assert found["distances"]["a"] == {"p": 0.0, "q": pytest.approx(4.0)}
    assert found["per_query"] == {"a": {ALIGNMENT: pytest.approx(2.0)}, "b": {ALIGNMENT: 0.0}}
    assert found["mean"][ALIGNMENT] == pytest.approx(1.0)                   # each query weighs the same, not 2/3
    assert found["mean"][UNIFORMITY] == pytest.approx(math.log((math.exp(-8) + 2 * math.exp(-4)) / 3))


def test_a_backbones_geometry_reads_its_index_and_encodes_its_queries(english_relevance, tmp_path):
    from peftir.contract.backbones import EMBEDDED
    from peftir.retrieval.dense_retriever import QUERY, encode_all
    from peftir.dense.search import index_corpus, retriever

    collection, _ = english_relevance
    (tmp_path / "folds.json").write_text(json.dumps({"dataset": "toy", "splits": {"test": ["q1", "q2"]}}))
    (tmp_path / "qrels.txt").write_text(Path(collection.qrels).read_text() + "q2 0 gone 1\nq2 0 d4 0\n")
    spec = {"backbone": EMBEDDED, "layers": 1, "execution": {"device": "cpu", "precision": "fp32"}}
    search = {"index": "flat", "depth": 5, "batch_size": 4, "hnsw_m": 8, "ef_search": 4, "q_max_len": 8,
              "p_max_len": 16}
    index = str(tmp_path / "index")
    index_corpus(spec, search, collection.docs, 1, index)
    out = tmp_path / "geometry.json"
    shown = geometry.representation_geometry(spec, search, index, collection.queries, str(tmp_path / "qrels.txt"),
                                             str(tmp_path / "folds.json"), "1", 1, str(out))
    stored = json.loads(out.read_text())
    assert stored["passages"] == ["d0", "d1", "d2", "d3"] and stored["left_out"] == {
        "queries": [], "positives_not_indexed": 1}                           # "gone" is not in the collection
    vectors = np.load(sorted((tmp_path / "index" / "shards").iterdir())[0])  # documents d0…d7, in order
    query = encode_all(retriever(spec, search, 1), ["cat mat"], QUERY, 4)[0]
    by_hand = np.mean([((query / np.linalg.norm(query) - vectors[i] / np.linalg.norm(vectors[i])) ** 2).sum()
                       for i in (1, 3)])
    assert stored["per_query"]["q1"][ALIGNMENT] == pytest.approx(by_hand, abs=1e-6)
    assert stored["mean"][UNIFORMITY] == pytest.approx(geometry.uniformity(vectors[:4]), abs=1e-12)
    assert shown[ALIGNMENT] == stored["mean"][ALIGNMENT] and stored["checkpoint"] == EMBEDDED
    made = geometry.recomputed(stored, index, str(tmp_path / "qrels.txt"), str(tmp_path / "folds.json"), "1")
    assert made["mean"] == stored["mean"] and made["per_query"] == stored["per_query"]
    stored["distances"]["q1"].pop("d3")
    with pytest.raises(ValueError, match="pairs are not"):
        geometry.recomputed(stored, index, str(tmp_path / "qrels.txt"), str(tmp_path / "folds.json"), "1")


def test_the_plan_reads_geometry_files_for_alignment_and_uniformity_cells(irds_home):
    config = load_config(REPO, [REPO / "config" / "paper-dptdr.yaml"])
    cell = {"dataset": "msmarco-passage", "backbone": "rip", "retriever": "dpt-32", "negatives": "denoised"}
    assert dense_plan.dense_cell_runs(config, {**cell, "metric": UNIFORMITY, "reference": "untrained"}) == [
        PATHS.untrained_geometry.format(dataset="msmarco-passage", backbone="rip", fold=1)]
    assert dense_plan.dense_cell_runs(config, {**cell, "metric": ALIGNMENT}) == [
        PATHS.dense_geometry.format(**cell, fold=1, seed=1)]
    table8 = dense_plan.dense_report_runs(config, "dptdr", "table8")["metrics"]
    assert [path for path in table8 if "/geometry/" in path] == [
        f"results/dense/geometry/msmarco-passage/untrained/{backbone}/fold1.json"
        for backbone in ("roberta", "cocondenser", "rip")]


TABLE = ("dense_retrieval: {tables: {dptdr: {x: {caption: c, columns: [%s], "
         "rows: [{label: r, backbone: minilm, reference: untrained}]}}}}")


@pytest.mark.parametrize("columns, message", [
    ("{label: a, metric: alignement}", "x: row 'r', column 0: 'alignement' is not an ir_measures measure (e.g. P@20"),
    ("{label: a, metric: alignement}", "; or alignment, uniformity (Wang & Isola's, DPTDR Table 8)"),
    ("{label: a, metric: uniformity, reference: bm25}", "uniformity is of a dense encoder's vectors"),
])
def test_the_config_names_a_typo_of_alignment_or_uniformity(irds_home, tmp_path, columns, message):
    assert message in one_line_error(tmp_path, TABLE % columns)


def test_the_config_takes_alignment_and_uniformity(irds_home, tmp_path):
    overlay = tmp_path / "good.yaml"
    overlay.write_text(TABLE % "{label: a, metric: alignment}, {label: u, metric: uniformity}")
    assert load_config(REPO, [overlay])["dense_retrieval"]["tables"]["dptdr"]["x"]["columns"][1]["metric"] == UNIFORMITY


LAYOUT = {"name": "dptdr/table8", "caption": "Backbones.", "baseline": "RoBERTa", "folds": {"toy": ["1", "2"]},
          "seeds": [1],
          "columns": [{"label": "Alignment", "metric": ALIGNMENT, "reference": "untrained"},
                      {"label": "Uniformity", "metric": UNIFORMITY, "reference": "untrained"},
                      {"label": "Full-shot uniformity", "metric": UNIFORMITY}],
          "rows": [{"label": "RoBERTa", "dataset": "toy", "backbone": "b", "retriever": "dpt", "negatives": "bm25"},
                   {"label": "RIP", "dataset": "toy", "backbone": "rip", "retriever": "dpt", "negatives": "bm25"}]}


def _geometry_file(path: str, alignments: dict[str, float], spread: float) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_json(path, geometry.summary({qid: {"p": value} for qid, value in alignments.items()}, spread))


def test_a_geometry_cell_is_the_mean_of_its_files_printed_times_100_and_untested(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    metrics, summaries = [], []
    for backbone, shift in (("b", 0.0), ("rip", 0.5)):
        for fold in ("1", "2"):
            untrained = PATHS.untrained_geometry.format(dataset="toy", backbone=backbone, fold=fold)
            _geometry_file(untrained, {f"q{fold}a": 1.6 + shift, f"q{fold}b": 1.0 + shift}, -0.1 - shift)
            key = {"dataset": "toy", "backbone": backbone, "retriever": "dpt", "negatives": "bm25", "fold": fold,
                   "seed": 1}
            _geometry_file(PATHS.dense_geometry.format(**key), {f"q{fold}a": 0.5}, -2.0 - shift - int(fold))
            Path(PATHS.retriever_summary.format(**key)).parent.mkdir(parents=True, exist_ok=True)
            Path(PATHS.retriever_summary.format(**key)).write_text(json.dumps({"trainable_parameters": 10}))
            metrics += [untrained, PATHS.dense_geometry.format(**key)]
            summaries.append(PATHS.retriever_summary.format(**key))
    cells = {cell["cell"]: cell for cell in dense.dense_cells(LAYOUT, metrics, summaries, PATHS)}
    aligned = cells["RoBERTa | Alignment"]
    assert aligned["value"] == pytest.approx(1.3) and aligned["printed"] == "130.0"
    assert aligned["runs"][0]["per_query"] == {"q1a": 1.6, "q1b": 1.0} and aligned["row_kind"] == "reference"
    assert cells["RIP | Uniformity"]["printed"] == "-60.0" and cells["RIP | Uniformity"]["runs"][1]["per_query"] is None
    trained = cells["RIP | Full-shot uniformity"]
    assert trained["printed"] == "-400.0" and [run["seed"] for run in trained["runs"]] == [1, 1]
    assert trained["ttest"] is None and trained["stars"] == "" and "no t-test" in trained["note"]
    assert trained["trainable_parameters"] == 10
    assert "alignment and uniformity" in dense.note(LAYOUT)
    with pytest.raises(ValueError, match="geometry files"):
        dense.dense_cells(LAYOUT, metrics[1:], summaries, PATHS)

"""Anserini BM25 on vaswani reproduces the effectiveness measured on this machine."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import pytrec_eval

from peftir.data import export
from peftir.data.trec import read_qrels, read_run, read_topics
from peftir.execution import memory
from peftir.retrieval import anserini as bm25

VASWANI = {"irds": "vaswani", "query_field": "text", "doc_fields": ["text"]}
REFERENCE = {"P_20": 0.279, "ndcg_cut_5": 0.488, "ndcg_cut_20": 0.408, "map": 0.261}


@pytest.fixture(scope="module")
def searched(irds_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Export, index and search once for the whole module."""
    root = tmp_path_factory.mktemp("bm25")
    data = root / "data"
    exported = export.export_dataset(VASWANI, data / "corpus" / "docs.jsonl", data / "docs.lookup.sqlite",
                                     data / "empty-docs.txt", data / "queries.tsv", data / "qrels.txt",
                                     data / "info.json")
    log = io.StringIO()
    bm25.build_index(root / "data" / "corpus", root / "index", threads=2, exported=exported["docs"], log=log)
    bm25.search(root / "index", read_topics(root / "data" / "queries.tsv"), root / "run.txt",
                k1=0.9, b=0.4, hits=100, threads=2, log=log)
    return {"root": root, "run": root / "run.txt", "qrels": root / "data" / "qrels.txt", "log": log}


def test_jar_and_java_exist() -> None:
    assert bm25.anserini_jar().name.startswith("anserini-") and bm25.anserini_jar().is_file()
    assert Path(bm25.java()).is_file()


def test_index_renamed_into_place(searched: dict) -> None:
    root = searched["root"]
    assert any((root / "index").iterdir())
    assert not [p for p in root.iterdir() if p.name.startswith(".")]  # no leftover temp dir or file
    assert "Total run time" in searched["log"].getvalue()  # Java's output reached the log


def test_run_format(searched: dict) -> None:
    lines = searched["run"].read_text().splitlines()
    assert lines and all(line.split()[5] == "bm25" for line in lines)
    run = read_run(searched["run"])
    assert len(run) == 93 and max(len(docs) for docs in run.values()) == 100


def test_effectiveness_matches_reference(searched: dict) -> None:
    qrels = read_qrels(searched["qrels"])
    results = pytrec_eval.RelevanceEvaluator(qrels, set(REFERENCE)).evaluate(read_run(searched["run"]))
    for measure, expected in REFERENCE.items():
        mean = sum(results.get(qid, {}).get(measure, 0.0) for qid in qrels) / len(qrels)
        assert mean == pytest.approx(expected, abs=0.01), measure


def test_search_failure_reports_java_output(tmp_path: Path) -> None:
    """SearchCollection exits 0 on a missing index; the error line must still surface."""
    with pytest.raises(RuntimeError, match="does not appear to be a valid index"):
        bm25.search(tmp_path / "no-index", {"1": "some words"}, tmp_path / "run.txt", k1=0.9, b=0.4, hits=10,
                    threads=1)
    assert list(tmp_path.iterdir()) == []


def test_index_failure_leaves_no_index(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="Invalid collection path"):
        bm25.build_index(tmp_path / "no-corpus", tmp_path / "index", threads=1, exported=1)
    assert list(tmp_path.iterdir()) == []


def test_a_truncated_collection_fails_the_index_instead_of_indexing_part_of_it(searched: dict, tmp_path: Path):
    """Anserini prints the parse exception for the cut line, indexes the rest and exits 0: the job must fail."""
    docs = (searched["root"] / "data" / "corpus" / "docs.jsonl").read_text()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "docs.jsonl").write_text(docs[:len(docs) // 2])      # cut in the middle of a line
    expected = docs.count("\n")
    with pytest.raises(RuntimeError, match=r"it reported: \S*Exception: Unexpected end-of-input"):
        bm25.build_index(corpus, tmp_path / "index", threads=1, exported=expected, log=io.StringIO())
    assert not (tmp_path / "index").exists()
    whole_lines = docs[:docs[:len(docs) // 2].rindex("\n") + 1]   # no parse error, but documents missing
    (corpus / "docs.jsonl").write_text(whole_lines)
    kept = whole_lines.count(chr(10))
    with pytest.raises(RuntimeError, match=rf"indexed {kept:,} \+ empty 0 = {kept:,}, not the {expected:,} documents "
                                           "exported"):
        bm25.build_index(corpus, tmp_path / "index", threads=1, exported=expected, log=io.StringIO())
    assert not (tmp_path / "index").exists() and not list(tmp_path.glob(".index.*"))


def test_a_killed_jobs_scratch_directory_is_removed_by_the_rerun(searched: dict, tmp_path: Path):
    left = tmp_path / ".run.txt-anserini.abc12_45.part"
    (left / "sub").mkdir(parents=True)
    (tmp_path / ".run.txt.def45678.part").write_text("half a run")
    bm25.search(searched["root"] / "index", read_topics(searched["root"] / "data" / "queries.tsv"),
                tmp_path / "run.txt", k1=0.9, b=0.4, hits=10, threads=1, log=io.StringIO())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.txt"]


def test_only_the_splits_some_job_reads_are_searched(searched: dict, tmp_path: Path):
    """Training from fixed triples (MS MARCO) needs no candidates for its training queries."""
    folds = tmp_path / "folds.json"
    folds.write_text(json.dumps({"splits": {"train": ["1", "2"], "valid": ["3"], "test": ["4", "5"]}}))
    topics = searched["root"] / "data" / "queries.tsv"
    assert set(bm25.searched_queries(topics, folds, ["valid", "test"])) == {"3", "4", "5"}
    assert len(bm25.searched_queries(topics, folds, None)) == 93
    bm25.bm25_search(searched["root"] / "index", topics, folds, tmp_path / "run.txt", tmp_path / "meta.yaml",
                     {"k1": 0.9, "b": 0.4, "depth": 10, "splits": ["valid", "test"]}, "vaswani", threads=1)
    assert set(read_run(tmp_path / "run.txt")) == {"3", "4", "5"}
    assert read_run(tmp_path / "run.txt", {"4"}) == {"4": read_run(searched["run"], {"4"}, depth=10)["4"]}


def test_a_language_analyzer_stems_that_language(tmp_path: Path):
    """German plural and singular meet under Anserini's German analyzer, not under its default English one."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    docs = {"katze": "Die Katze schläft auf dem Sofa", "hund": "Der Hund läuft durch den Garten"}
    (corpus / "docs.jsonl").write_text("".join(json.dumps({"id": d, "contents": t}) + "\n" for d, t in docs.items()))
    found = {}
    for language in ("de", None):
        index = tmp_path / f"index-{language}"
        bm25.build_index(corpus, index, threads=1, exported=2, log=io.StringIO(), language=language)
        bm25.search(index, {"1": "Katzen"}, tmp_path / f"run-{language}", k1=0.9, b=0.4, hits=10, threads=1,
                    log=io.StringIO(), language=language)
        found[language] = [line.split()[2] for line in (tmp_path / f"run-{language}").read_text().splitlines()]
    assert found == {"de": ["katze"], None: []}


def test_a_jobs_memory_budget_caps_the_jvm_heap_and_the_indexing_buffer(tmp_path: Path, monkeypatch) -> None:
    fake = tmp_path / "java"
    fake.write_text('#!/bin/sh\necho "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setattr(bm25, "java", lambda: str(fake))
    assert "-Xmx" not in bm25._run_java("Main", [], io.StringIO())[0]          # outside a job: the JVM's default
    monkeypatch.setenv(memory.MEMORY_ENV, "6000")                              # what peftir.pipeline.job sets
    assert bm25._run_java("Main", ["-x"], io.StringIO())[0].split()[:1] == ["-Xmx3000m"]
    log = io.StringIO()
    with pytest.raises(RuntimeError, match="Anserini printed no final counter indexed, unindexable, skipped, "
                                           "errors, empty"):                  # the echo reports no counter
        bm25.build_index(tmp_path / "corpus", tmp_path / "index", threads=1, exported=1, log=log)
    assert log.getvalue().startswith("-Xmx3000m ") and "-memoryBuffer 1500" in log.getvalue()


def test_anserini_indexes_and_searches_the_same_within_a_small_budget(searched: dict, tmp_path: Path,
                                                                        monkeypatch) -> None:
    monkeypatch.setenv(memory.MEMORY_ENV, "1000")                              # a 500 MB heap, a 250 MB buffer
    data = searched["root"] / "data"
    bm25.build_index(data / "corpus", tmp_path / "index", threads=2, exported=11429, log=io.StringIO())
    bm25.search(tmp_path / "index", read_topics(data / "queries.tsv"), tmp_path / "run.txt", k1=0.9, b=0.4,
                hits=100, threads=2, log=io.StringIO())
    assert (tmp_path / "run.txt").read_text() == searched["run"].read_text()

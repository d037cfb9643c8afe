"""Table 1's NMT + BM25 row from the user's query translations (``modular_clir.translations``): the real Anserini
BM25 run on a small German collection with the German analyzer, its evaluation and provenance, and the checks that
name a bad translations file by file and line before any search."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from peftir.clir.translations import read_translations, untranslated
from peftir.data.trec import MalformedFileError, read_run
from peftir.errors import ActionableError
from peftir.evaluation.metrics import measure_run
from peftir.provenance.records import sha256
from peftir.retrieval.anserini import index_language
from peftir.clir.translated_bm25 import nmt_bm25_clir

DOCS = {"d1": "Der Käse wird auf dem Markt in Bern verkauft.",
        "d2": "Die Eisenbahn fährt durch die Alpen nach Italien.",
        "d3": "Das Wetter in den Bergen ist im Winter kalt und schneereich.",
        "d4": "Die Universität bietet Kurse in Informatik und Mathematik an."}
QUERIES = {"q1": "cheese market", "q2": "railway through the Alps", "q3": "winter weather in the mountains",
           "q4": "a training query"}
TRANSLATED = {"q1": "Käsemarkt Käse", "q2": "Eisenbahnen durch die Alpen", "q3": "Winterwetter in den Bergen"}
SETTINGS = {"k1": 0.9, "b": 0.4, "depth": 10, "analyzer": "de"}


@pytest.fixture(scope="module")
def collection(tmp_path_factory) -> dict[str, Path]:
    """English queries (q4 not a test query), German documents indexed with Anserini's German analyzer, qrels."""
    root = tmp_path_factory.mktemp("clir")
    (root / "corpus").mkdir()
    (root / "corpus" / "docs.jsonl").write_text(
        "".join(json.dumps({"id": d, "contents": t}, ensure_ascii=False) + "\n" for d, t in DOCS.items()))
    (root / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    (root / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 1\n")
    (root / "folds.json").write_text(json.dumps({"dataset": "t", "scheme": "presplit",
                                                 "splits": {"train": ["q4"], "valid": [], "test": ["q1", "q2", "q3"]}}))
    index_language(root / "corpus" / "docs.jsonl", root / "index", "de", threads=1)
    return {name: root / name for name in ("queries.tsv", "qrels.txt", "folds.json", "index")} | {"root": root}


def test_bm25_ranks_the_translated_queries_with_the_documents_analyzer(collection):
    root = collection["root"]
    translations = root / "de.tsv"
    translations.write_text("".join(f"{q}\t{t}\n" for q, t in TRANSLATED.items()))
    run, metadata = root / "nmt-bm25.run", root / "nmt-bm25.ir_metadata.yaml"
    nmt_bm25_clir(SETTINGS, "en-de", str(translations), str(collection["queries.tsv"]), str(collection["folds.json"]),
                  str(collection["index"]), threads=1, run=str(run), metadata=str(metadata))
    ranked = read_run(run)
    assert set(ranked) == {"q1", "q2", "q3"}            # the test queries only
    # German stemming and decompounding is what matches: "Käsemarkt"/"Käse", "Eisenbahnen", "Bergen"
    assert {qid: max(docs, key=docs.get) for qid, docs in ranked.items()} == {"q1": "d1", "q2": "d2", "q3": "d3"}
    method = yaml.safe_load(metadata.read_text())["method"]
    assert method["translations"] == {"file": str(translations), "sha256": sha256(translations)}
    assert method["analyzer"] == "de" and method["k1"] == 0.9
    metrics = root / "fold1.json"
    measure_run(str(run), str(collection["qrels.txt"]), str(collection["folds.json"]), "1", {"metrics": ["AP"]},
                 str(metrics), about={"pair": "en-de"})
    assert json.loads(metrics.read_text())["mean"]["AP"] == 1.0


def test_an_untranslated_test_query_stops_the_job_before_it_searches(collection):
    root = collection["root"]
    translations = root / "partial.tsv"
    translations.write_text(f"q1\t{TRANSLATED['q1']}\nq4\tnur Training\n")
    run = root / "partial.run"
    with pytest.raises(ActionableError) as raised:
        nmt_bm25_clir(SETTINGS, "en-de", str(translations), str(collection["queries.tsv"]),
                      str(collection["folds.json"]), str(collection["index"]), threads=1, run=str(run),
                      metadata=str(root / "partial.yaml"))
    message = str(raised.value)
    assert f"{translations}: no translation of test query 'q2' ({collection['queries.tsv']}, line 2)" in message
    assert "'q3'" in message and "(2 of the pair's 3 test queries untranslated)" in message
    assert "modular_clir.translations.en-de" in message
    assert not run.exists()


@pytest.mark.parametrize("text, problem", [
    ("q1\tKäse\nq2 Eisenbahn\n", "line 2: expected query id<TAB>translated text"),
    ("q1\tKäse\n\nq1\tMarkt\n", "line 3: query 'q1' is translated twice (first on line 1)"),
    ("q1\t \n", "line 1: expected query id<TAB>translated text"),
    ("q1\tK\xe4se\n".encode("latin-1"), "line 1: not UTF-8 text"),
])
def test_a_bad_line_is_named_by_file_and_line(tmp_path, text, problem):
    path = tmp_path / "t.tsv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(MalformedFileError) as raised:
        read_translations(path)
    assert str(raised.value).startswith(f"{path}, {problem}")


def test_translations_cover_only_the_query_languages_test_queries(tmp_path):
    queries = tmp_path / "queries.tsv"
    queries.write_text("q1\ta\nq2\tb\n")
    found = {"q1": ("A", 1)}
    assert untranslated(found, "t.tsv", queries, ["q1", "q9"]) is None     # q9: not a query of this language
    assert untranslated(found, "t.tsv", queries, ["q1", "q2"]).startswith(f"t.tsv: no translation of test query "
                                                                          f"'q2' ({queries}, line 2)")

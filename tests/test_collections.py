"""Exporting ir_datasets collections; clear failure for licensed corpora that are absent."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from peftir.data import export
from peftir.data.trec import read_qrels, read_topics

VASWANI = {"irds": "vaswani", "query_field": "text", "doc_fields": ["text"]}
ROBUST04 = {"irds": "disks45/nocr/trec-robust-2004", "query_field": "title", "doc_fields": ["title", "body"],
            "licence": "TREC disks 4 and 5 (https://trec.nist.gov/data/cd45/)"}


def _export(spec: dict, out: Path) -> dict:
    return export.export_dataset(spec, out / "corpus" / "docs.jsonl", out / "docs.lookup.sqlite",
                                 out / "empty-docs.txt", out / "queries.tsv",
                                 out / "qrels.txt", out / "info.json")


def test_export_vaswani(irds_home: Path, tmp_path: Path) -> None:
    info = _export(VASWANI, tmp_path)
    assert (info["docs"], info["queries"], info["qrels"]) == (11429, 93, 2083)
    assert json.loads((tmp_path / "info.json").read_text()) == info
    lines = (tmp_path / "corpus" / "docs.jsonl").read_text().splitlines()
    docs = [json.loads(line) for line in lines]
    assert len(docs) == 11429 and all(set(doc) == {"id", "contents"} for doc in docs)
    assert len({doc["id"] for doc in docs}) == 11429
    assert all(doc["contents"] == " ".join(doc["contents"].split()) for doc in docs)
    topics = read_topics(tmp_path / "queries.tsv")
    assert len(topics) == 93 and topics["1"].startswith("MEASUREMENT OF DIELECTRIC")  # case kept
    assert len((tmp_path / "qrels.txt").read_text().splitlines()) == 2083
    assert set(read_qrels(tmp_path / "qrels.txt")) <= set(topics)


def test_normalise_collapses_whitespace_keeps_case() -> None:
    assert export.normalise("  A\tb\n\nC  ") == "A b C"


def test_export_unknown_field_names_the_available_ones(irds_home: Path, tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="body"):
        _export({**VASWANI, "doc_fields": ["body"]}, tmp_path)


def test_missing_licensed_collection_fails_fast(irds_home: Path, tmp_path: Path) -> None:
    """irds_home holds only vaswani. ir_datasets binds its home at first import, so an in-process
    test cannot switch homes safely; the fresh-interpreter test below covers an empty home."""
    start = time.monotonic()
    with pytest.raises(export.MissingDataError) as error:
        _export(ROBUST04, tmp_path / "out")
    assert time.monotonic() - start < 10
    message = str(error.value)
    assert ROBUST04["licence"] in message
    assert str(irds_home / "disks45" / "corpus") in message
    assert message.count("disks45/corpus") == 1
    assert not (tmp_path / "out").exists()


def test_check_available_in_fresh_empty_home(tmp_path: Path) -> None:
    """A fresh interpreter with an empty IR_DATASETS_HOME: the message names $HOME/disks45/corpus."""
    home = tmp_path / "empty"
    code = ("import json, sys; from peftir.data.export import check_available; "
            "print(check_available(json.loads(sys.argv[1])))")
    env = {**os.environ, "IR_DATASETS_HOME": str(home)}
    result = subprocess.run([sys.executable, "-c", code, json.dumps(ROBUST04)], env=env,
                            capture_output=True, text=True, timeout=30, check=True)
    assert str(home / "disks45" / "corpus") in result.stdout
    assert ROBUST04["licence"] in result.stdout


def test_check_available_when_present(irds_home: Path) -> None:
    assert export.check_available({**VASWANI, "licence": "the Vaswani collection"}) is None


def test_the_lookup_finds_every_exported_document_by_id(irds_home: Path, tmp_path: Path) -> None:
    from peftir.data.docstore import DocStore

    _export(VASWANI, tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "corpus" / "docs.jsonl").read_text().splitlines()]
    store = DocStore(tmp_path / "corpus" / "docs.jsonl", tmp_path / "docs.lookup.sqlite")
    wanted = [lines[0]["id"], lines[-1]["id"], lines[5000]["id"], lines[0]["id"]]
    assert store.texts(wanted) == {doc["id"]: doc["contents"] for doc in (lines[0], lines[-1], lines[5000])}
    assert store.missing(["no-such-doc", lines[7]["id"]]) == ["no-such-doc"]


def _store(tmp_path: Path, lines: list[str]):
    from peftir.data.docstore import DocStore, lookup_writer

    docs = tmp_path / "docs.jsonl"
    docs.write_bytes("".join(lines).encode())
    offset = 0
    with lookup_writer(tmp_path / "lookup.sqlite", docs) as places:
        for line in lines:
            places.add(json.loads(line)["id"], offset, len(line.encode()))
            offset += len(line.encode())
    return DocStore(docs, tmp_path / "lookup.sqlite")


def test_a_foreign_candidate_or_a_lookup_of_other_documents_is_named(tmp_path):
    from peftir.data.trec import MalformedFileError

    store = _store(tmp_path, ['{"id": "d1", "contents": "one"}\n', '{"id": "d2", "contents": "two"}\n'])
    assert store.texts(["d2"]) == {"d2": "two"}
    with pytest.raises(MalformedFileError, match=r"1 documents are not in the collection \(e.g. \['d9'\]\)"):
        store.texts(["d1", "d9"])
    (tmp_path / "docs.jsonl").write_text('{"id": "d2", "contents": "two"}\n{"id": "d1", "contents": "one"}\n')
    with pytest.raises(MalformedFileError, match=r"docs.jsonl, byte 0: not the line of document 'd1'"):
        store.texts(["d1"])


def test_a_document_id_that_occurs_twice_is_named_with_its_line(tmp_path):
    from peftir.data.trec import MalformedFileError

    lines = [f'{{"id": "d{i}", "contents": "x"}}\n' for i in range(5)] + ['{"id": "d3", "contents": "y"}\n']
    with pytest.raises(MalformedFileError, match=r"docs.jsonl, line 6: document id 'd3' occurs twice"):
        _store(tmp_path, lines)
    assert not (tmp_path / "lookup.sqlite").exists()


def test_ids_with_whitespace_and_empty_queries_are_refused_at_export(monkeypatch):
    """No collection here has such queries: a stand-in for an ir_datasets dataset gives them."""
    from peftir.data.trec import MalformedFileError

    class Query(tuple):
        _fields = ("query_id", "text")
        query_id = property(lambda self: self[0])
        text = property(lambda self: self[1])

    class Dataset:
        def __init__(self, queries):
            self.queries = queries

        def queries_iter(self):
            return iter(self.queries)

        def has_qrels(self):
            return False

    spec = {"irds": "toy", "query_field": "text"}
    monkeypatch.setattr(export, "_load", lambda irds_id: Dataset([Query(("1", "fine")), Query(("2 b", "x"))]))
    with pytest.raises(MalformedFileError, match="toy: query id '2 b' is empty or holds whitespace"):
        export.queries_and_qrels(spec)
    monkeypatch.setattr(export, "_load", lambda irds_id: Dataset([Query(("1", "fine")), Query(("2", " \t"))]))
    with pytest.raises(MalformedFileError, match="toy: query 2 has no text in its field 'text'"):
        export.queries_and_qrels(spec)


def test_default_text_is_ir_datasets_text_of_a_record(irds_home: Path, tmp_path: Path) -> None:
    _export(VASWANI, tmp_path / "field")
    _export({**VASWANI, "doc_fields": ["default_text"]}, tmp_path / "default")
    assert (tmp_path / "field" / "corpus" / "docs.jsonl").read_bytes() == \
        (tmp_path / "default" / "corpus" / "docs.jsonl").read_bytes()


def test_a_bytes_field_such_as_a_warc_body_is_refused_with_the_field_to_use_instead() -> None:
    from ir_datasets.formats.webarc import WarcDoc

    page = WarcDoc("clueweb09-en0000-00-00000", "http://x", "", b"Content-Type: text/html\r\n",
                   b"<html><title>Hello</title><body>Web page</body></html>", "text/html")
    with pytest.raises(export.ActionableError, match="document field 'body' is bytes, not text: name default_text"):
        export._fields(page, ["body"], "document")
    text = export._fields(page, ["default_text"], "document")[0]
    assert "Hello" in text and "Web page" in text and "<" not in text        # the HTML parsed, not its bytes


@pytest.mark.parametrize("keep", [True, False])
def test_word_pieces_are_fetched_in_batches_and_kept_only_when_asked(keep):
    """Validation candidates are scored every epoch (kept); training documents from triples once (not kept)."""
    from peftir.models.backbone import load
    from peftir.models.inputs import Tokenized
    from peftir.contract.backbones import EMBEDDED

    tokenizer = load(EMBEDDED, 1).tokenizer
    texts = {"a": "dielectric constants of liquids", "b": "transistor amplifiers " * 20}
    asked = []
    tokens = Tokenized(tokenizer, lambda ids: asked.append(list(ids)) or {i: texts[i] for i in ids}, max_len=8,
                       keep=keep)
    first = tokens.many(["a", "b", "a"])
    assert first[0] == first[2] == tokenizer(texts["a"], add_special_tokens=False)["input_ids"]
    assert len(first[1]) == 8                                           # cut to max_len word pieces
    assert tokens.many(["b"]) == [first[1]]
    assert asked == ([["a", "b"]] if keep else [["a", "b"], ["b"]])     # one batch per call, kept ones not again

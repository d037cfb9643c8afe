"""Fixed training triples (MS MARCO): Microsoft's doctriples procedure, docpairs, documents checked."""
import json
import random
from collections import Counter, namedtuple

import pytest

from peftir.data import triples
from peftir.data.docstore import lookup_writer
from peftir.errors import ActionableError

Scored = namedtuple("Scored", "query_id doc_id score")
Pair = namedtuple("Pair", "query_id doc_id_a doc_id_b")
QRELS = {"1": {"a": 1}, "2": {"d": 1, "e": 1}, "3": {"x": 0}, "4": {"g": 1}}
TOP = {"1": ["b", "c", "a"], "2": ["d", "e"], "3": ["x", "y"], "4": ["h", "i", "j"], "5": ["k"]}
RANKING = [Scored(qid, docid, 10.0 - rank) for qid, docs in TOP.items() for rank, docid in enumerate(docs)]


def _triples(seed, train=("1", "2", "3", "4")):
    counts = Counter()
    return list(triples.doc_triples(RANKING, QRELS, set(train), random.Random(seed), counts)), counts


def test_doctriples_take_one_triple_per_training_query_with_a_relevant_document():
    kept_query_1 = set()
    for seed in range(20):
        made, counts = _triples(seed)
        by_query = {qid: (pos, neg) for qid, pos, neg in made}
        assert set(by_query) <= {"1", "4"}                    # 2: every candidate relevant; 3, 5: no relevant
        assert by_query["4"][0] == "g" and by_query["4"][1] in TOP["4"]
        if "1" in by_query:
            assert by_query["1"][0] == "a" and by_query["1"][1] in ("b", "c")
        kept_query_1.add("1" in by_query)
        skipped = counts["queries skipped: the drawn candidate is relevant"]
        assert counts["triples"] == len(made) and skipped == (1 if "1" in by_query else 2)
    assert kept_query_1 == {True, False}                      # query 1 is skipped when its draw is 'a'
    assert _triples(7) == _triples(7)                          # seeded: the same file on every machine


def test_the_positive_need_not_be_among_the_candidates_as_in_msmarco_doctriples():
    made, _ = _triples(0)
    assert ("4", "g") == made[-1][:2] and "g" not in TOP["4"]


def test_docpairs_keep_the_training_queries_pairs():
    counts = Counter()
    pairs = [Pair("1", "a", "b"), Pair("9", "c", "d"), Pair("2", "d", "f")]
    assert list(triples.doc_pairs(pairs, {"1", "2"}, counts)) == [("1", "a", "b"), ("2", "d", "f")]
    assert counts["pairs of queries outside the training split"] == 1


@pytest.fixture
def collection(tmp_path):
    docs = tmp_path / "docs.jsonl"
    lines = [json.dumps({"id": d, "contents": d}) + "\n" for d in "abcdefghijk"]
    docs.write_text("".join(lines))
    offset = 0
    with lookup_writer(tmp_path / "lookup.sqlite", docs) as places:
        for docid, line in zip("abcdefghijk", lines):
            places.add(docid, offset, len(line))
            offset += len(line)
    (tmp_path / "folds.json").write_text(json.dumps({"splits": {"train": ["1", "2", "4"], "valid": ["3"],
                                                                "test": ["5"]}}))
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, js in QRELS.items() for d, r in js.items()))
    return tmp_path


class Source:
    """A stand-in for ir_datasets' MS MARCO training split (its files need the internet)."""

    def __init__(self, pairs=(), scored=()):
        self.pairs, self.scored = list(pairs), list(scored)

    def docpairs_iter(self):
        return iter(self.pairs)

    def scoreddocs_iter(self):
        return iter(self.scored)


def _make(collection, monkeypatch, source, spec):
    import ir_datasets

    monkeypatch.setattr(ir_datasets, "load", lambda irds_id: source)
    return triples.make_triples({"irds": "msmarco-x/train", **spec}, collection / "qrels.txt", collection / "folds.json",
                                collection / "docs.jsonl", collection / "lookup.sqlite", collection / "triples.tsv")


def test_the_triples_file_holds_the_training_triples(collection, monkeypatch):
    _make(collection, monkeypatch, Source(pairs=[Pair("1", "a", "b"), Pair("3", "x", "y"), Pair("2", "d", "f")]),
          {"source": "docpairs"})
    assert (collection / "triples.tsv").read_text() == "1\ta\tb\n2\td\tf\n"
    counts = _make(collection, monkeypatch, Source(scored=RANKING[:-1]), {"source": "doctriples", "seed": 1})
    written = [line.split("\t") for line in (collection / "triples.tsv").read_text().splitlines()]
    assert len(written) == counts["triples"] and {qid for qid, _, _ in written} <= {"1", "4"}


def test_triples_naming_documents_outside_the_collection_fail_and_write_nothing(collection, monkeypatch):
    with pytest.raises(ActionableError, match=r"1 documents of the training triples are not in the collection"):
        _make(collection, monkeypatch, Source(pairs=[Pair("1", "a", "zz")]), {"source": "docpairs"})
    assert not (collection / "triples.tsv").exists()

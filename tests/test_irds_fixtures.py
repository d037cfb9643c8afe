"""The scale-model collections (tests/irds_fixtures.py): every supported ir_datasets id read by
ir_datasets itself, with no network, from the tiny files written where it looks for its downloads; and
the pipeline's own export (``peftir.data.export``) run on one id of each family.

ir_datasets binds its paths to IR_DATASETS_HOME when imported, so every check runs in a subprocess with
the variable set, and with sockets refused: a file the fixture failed to write would make ir_datasets
try to download it, which fails there (the last test shows that it does).
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from irds_fixtures import SUPPORTED, expected, write_fixtures

NO_NETWORK = """
import socket
def _refuse(*args, **kwargs):
    raise OSError("network access attempted in an offline fixture test")
socket.socket.connect = socket.socket.connect_ex = _refuse
socket.create_connection = socket.getaddrinfo = _refuse
"""

# What the pipeline reads of each id (peftir.data.export, peftir.data.triples), as the export reads it.
READ = NO_NETWORK + """
import json, sys, traceback
import ir_datasets
from peftir.data.export import _fields, normalise
out = {}
def read(dataset_id, doc_fields, query_field):
    ds = ir_datasets.load(dataset_id)
    got = {"has": {kind: getattr(ds, "has_" + kind)() for kind in ("docs", "queries", "qrels", "docpairs",
                                                                    "scoreddocs")}}
    got["docs"] = {d.doc_id: normalise(" ".join(_fields(d, doc_fields, "document"))) for d in ds.docs_iter()}
    if ds.has_queries():
        got["queries"] = {q.query_id: normalise(_fields(q, [query_field], "query")[0]) for q in ds.queries_iter()}
    if ds.has_qrels():
        got["qrels"] = [[r.query_id, r.doc_id, r.relevance] for r in ds.qrels_iter()]
    if ds.has_docpairs():
        got["docpairs"] = [[p.query_id, p.doc_id_a, p.doc_id_b] for p in ds.docpairs_iter()]
    if ds.has_scoreddocs():
        got["scoreddocs"] = [[s.query_id, s.doc_id, s.score] for s in ds.scoreddocs_iter()]
    return got
for dataset_id, doc_fields, query_field in json.loads(sys.argv[1]):
    try:
        out[dataset_id] = read(dataset_id, doc_fields, query_field)
    except Exception:                      # reported for that id only
        out[dataset_id] = {"error": traceback.format_exc()}
print(json.dumps(out))
"""

EXPORT = NO_NETWORK + """
import json, sys
from pathlib import Path
from peftir.data.export import check_available, export_dataset
out = {}
for name, spec in json.loads(sys.argv[1]).items():
    where = Path(sys.argv[2]) / name
    out[name] = {"available": check_available(spec) if spec.get("licence") else None,   # as export_dataset does
                 "info": export_dataset(spec, where / "docs.jsonl", where / "lookup.sqlite", where / "empty-docs.txt",
                                        where / "queries.tsv", where / "qrels.txt", where / "info.json")}
print(json.dumps(out))
"""

# One spec of each family, as the paper configurations name them (config.yaml, config/paper-*.yaml).
SPECS = {
    "robust04": {"irds": "disks45/nocr/trec-robust-2004", "query_field": "title", "doc_fields": ["title", "body"],
                 "licence": "TREC disks 4 and 5"},
    "clueweb09b": {"irds": "clueweb09/catb", "query_field": "query", "doc_fields": ["default_text"],
                   "topics": [f"clueweb09/catb/trec-web-{year}" for year in (2009, 2010, 2011, 2012)],
                   "licence": "ClueWeb09"},
    "msmarco-doc": {"irds": "msmarco-document", "query_field": "text", "doc_fields": ["title", "body"],
                    "splits": {"train": "msmarco-document/train", "valid": "msmarco-document/dev",
                               "test": "msmarco-document/trec-dl-2019/judged"}},
    "msmarco-passage": {"irds": "msmarco-passage", "query_field": "text", "doc_fields": ["text"],
                        "splits": {"train": "msmarco-passage/train/judged", "valid": "msmarco-passage/dev/2",
                                   "test": "msmarco-passage/dev/small"}},
    "fever": {"irds": "beir/fever", "query_field": "text", "doc_fields": ["title", "text"],
              "splits": {"train": "beir/fever/train", "valid": "beir/fever/dev", "test": "beir/fever/test"}},
    # DPR's train and dev questions are both numbered from 0 by ir_datasets: one split per export here
    # (see test_dpr_nq_question_ids_restart_in_each_split).
    "nq": {"irds": "dpr-w100", "query_field": "text", "doc_fields": ["title", "text"],
           "splits": {"test": "dpr-w100/natural-questions/dev"}},
    "tripclick": {"irds": "tripclick", "query_field": "text", "doc_fields": ["title", "text"],
                  "licence": "TripClick",
                  "splits": {"train": "tripclick/train", "valid": "tripclick/val/head", "test": "tripclick/test/head"}},
    "neuclir-ru": {"irds": "neuclir/1/ru/trec-2022", "query_field": "ht_title", "doc_fields": ["title", "text"]},
    "cranfield": {"irds": "cranfield", "query_field": "text", "doc_fields": ["title", "text"]},
}


def _run(code: str, home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "IR_DATASETS_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300)
    if check:
        assert done.returncode == 0, done.stderr[-4000:]
    return done


def _words(text: str) -> Counter:
    return Counter(re.findall(r"\w+", text.lower()))


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> tuple[Path, dict, float]:
    home = tmp_path_factory.mktemp("irds-scale")
    start = time.monotonic()
    counts = write_fixtures(home, SUPPORTED)
    return home, counts, time.monotonic() - start


@pytest.fixture(scope="module")
def read(home) -> dict:
    """Every supported id as ir_datasets yields it from the fixture files, offline."""
    wanted = [[i, list(expected(i).doc_fields), expected(i).query_field] for i in SUPPORTED]
    return json.loads(_run(READ, home[0], json.dumps(wanted)).stdout)


def test_the_fixtures_are_small_and_quick_to_write_and_writing_again_changes_nothing(home):
    path, counts, took = home
    files = [f for f in path.rglob("*") if f.is_file()]
    size = sum(f.stat().st_size for f in files)
    print(f"{len(SUPPORTED)} ids: {len(files)} files, {size / 1e6:.2f} MB written in {took:.2f} s")
    assert took < 10 and size < 5e6
    before = {f: f.stat().st_mtime_ns for f in files}
    assert write_fixtures(path, reversed(SUPPORTED)) == counts
    assert {f: f.stat().st_mtime_ns for f in files} == before
    for dataset_id, count in counts.items():
        assert 40 <= count["docs"] <= 120, dataset_id
        if count["qrels"]:                              # a query split (Robust04's folds: 2-3 topics each)
            assert 2 <= count["queries"] <= 12, dataset_id


@pytest.mark.parametrize("dataset_id", SUPPORTED)
def test_ir_datasets_reads_the_fixture_offline(dataset_id, read):
    want, got = expected(dataset_id), read[dataset_id]
    assert "error" not in got, got.get("error")
    assert got["has"]["docs"] and set(got["docs"]) == set(want.docs)
    for doc_id, words in want.docs.items():      # every word of the document reaches the exported text
        assert not _words(words) - _words(got["docs"][doc_id]), (doc_id, words, got["docs"][doc_id])
    assert got["has"]["queries"] == bool(want.queries)
    assert got.get("queries", {}) == {q: " ".join(fields[want.query_field].split())
                                      for q, fields in want.queries.items()}
    qrels = {}
    for qid, doc_id, relevance in got.get("qrels", []):
        qrels.setdefault(qid, {})[doc_id] = relevance
    assert qrels == want.qrels
    assert all(doc_id in want.docs for judged in qrels.values() for doc_id in judged)
    assert got["has"]["docpairs"] == (want.docpairs is not None)
    if want.docpairs is not None:
        assert [tuple(p) for p in got["docpairs"]] == want.docpairs
    assert got["has"]["scoreddocs"] == (want.scoreddocs is not None)
    if want.scoreddocs is not None:
        runs = {}
        for qid, doc_id, _ in got["scoreddocs"]:
            runs.setdefault(qid, []).append(doc_id)
        assert runs == want.scoreddocs
        assert all(doc_id in want.docs for docs in runs.values() for doc_id in docs)


def test_robust04_folds_and_splits_of_one_collection_have_disjoint_queries(read):
    folds = [set(read[f"disks45/nocr/trec-robust-2004/fold{n}"]["queries"]) for n in range(1, 6)]
    assert all(len(fold) >= 2 for fold in folds) and len(set().union(*folds)) == sum(map(len, folds))
    assert set().union(*folds) == set(read["disks45/nocr/trec-robust-2004"]["queries"])
    for family in (["msmarco-passage/train/judged", "msmarco-passage/dev/small", "msmarco-passage/dev/2",
                    "msmarco-passage/trec-dl-2019/judged", "msmarco-passage/trec-dl-2020/judged"],
                   ["msmarco-document/train", "msmarco-document/dev", "msmarco-document/trec-dl-2019/judged"],
                   ["tripclick/train", "tripclick/val/head", "tripclick/test/head", "tripclick/test/torso",
                    "tripclick/test/tail"],
                   [f"beir/fever/{split}" for split in ("train", "dev", "test")]):
        splits = [set(read[i]["queries"]) for i in family]
        assert len(set().union(*splits)) == sum(map(len, splits)), family


def test_dpr_nq_question_ids_restart_in_each_split(read):
    """ir_datasets numbers DPR's questions 0, 1, ... in each JSON file (as for the real train and dev
    files): the ids of the train and dev splits overlap, with different questions behind them."""
    train = read["dpr-w100/natural-questions/train"]["queries"]
    dev = read["dpr-w100/natural-questions/dev"]["queries"]
    assert set(dev) <= set(train) and all(train[q] != dev[q] for q in dev)


def _bm25(docs: dict[str, str], query: str, k1: float = 0.9, b: float = 0.4) -> list[str]:
    bags = {d: _words(text) for d, text in docs.items()}
    mean = sum(sum(bag.values()) for bag in bags.values()) / len(bags)
    df = Counter(term for bag in bags.values() for term in bag)
    idf = {t: math.log(1 + (len(bags) - n + 0.5) / (n + 0.5)) for t, n in df.items()}

    def score(bag):
        size = sum(bag.values())
        return sum(idf[t] * bag[t] * (k1 + 1) / (bag[t] + k1 * (1 - b + b * size / mean)) for t in _words(query) if t in bag)
    ranked = sorted(((score(bag), d) for d, bag in bags.items()), reverse=True)
    return [d for s, d in ranked if s > 0]


@pytest.mark.parametrize("dataset_id", [i for i in SUPPORTED if expected(i).qrels])
def test_bm25_ranks_a_relevant_document_first_and_non_relevant_ones_in_its_top_20(dataset_id):
    want = expected(dataset_id)
    for qid, fields in want.queries.items():
        relevant = {d for d, r in want.qrels.get(qid, {}).items() if r > 0}
        if not relevant:
            continue
        ranked = _bm25(want.docs, fields[want.query_field])[:20]
        assert ranked[0] in relevant, (qid, ranked[:5], relevant)
        assert set(ranked) - relevant, qid


def test_the_pipeline_exports_one_id_of_each_family(home, tmp_path):
    out = json.loads(_run(EXPORT, home[0], json.dumps(SPECS), str(tmp_path)).stdout)
    for name, spec in SPECS.items():
        sources = list((spec.get("splits") or {}).values()) or spec.get("topics") or [spec["irds"]]
        queries = {q for source in sources for q in expected(source).queries}
        qrels = sum(expected(source).counts()["qrels"] for source in sources)
        info = out[name]["info"]
        assert out[name]["available"] is None
        assert (info["docs"], info["queries"], info["qrels"]) == (len(expected(spec["irds"]).docs), len(queries), qrels)
        lines = (tmp_path / name / "docs.jsonl").read_text(encoding="utf-8").splitlines()
        assert {json.loads(line)["id"] for line in lines} == set(expected(spec["irds"]).docs)
        # every family has documents with no text (a record without TEXT, a page of markup only, whitespace), and
        # exactly those are exported empty, counted and listed in collection order
        empty = [doc_id for doc_id, words in expected(spec["irds"]).docs.items() if not words.split()]
        exported_empty = [json.loads(line)["id"] for line in lines if not json.loads(line)["contents"]]
        assert empty and sorted(exported_empty) == sorted(empty), name
        assert info["empty_docs"] == len(empty)
        assert (tmp_path / name / "empty-docs.txt").read_text().split() == exported_empty


def test_a_new_seed_replaces_what_ir_datasets_derived_from_the_old_files(tmp_path):
    ids = ["msmarco-passage/dev/small", "beir/scifact/test", "dpr-w100/natural-questions/dev",
           "tripclick/val/head"]
    wanted = json.dumps([[i, list(expected(i).doc_fields), expected(i).query_field] for i in ids])
    write_fixtures(tmp_path, ids, seed=0)
    first = json.loads(_run(READ, tmp_path, wanted).stdout)       # ir_datasets caches what it extracts
    assert not [got["error"] for got in first.values() if "error" in got]
    assert (tmp_path / "msmarco-passage" / "dev" / "small" / "queries.tsv").exists()
    write_fixtures(tmp_path, ids, seed=1)
    second = json.loads(_run(READ, tmp_path, wanted).stdout)
    for dataset_id in ids:
        assert first[dataset_id]["queries"] != second[dataset_id]["queries"]
        assert second[dataset_id]["queries"] == {q: f[expected(dataset_id, 1).query_field] for q, f in
                                                 expected(dataset_id, 1).queries.items()}


def test_a_missing_file_is_fetched_from_the_network_which_is_refused_here(tmp_path):
    got = json.loads(_run(READ, tmp_path, json.dumps([["msmarco-passage/dev/small", ["text"], "text"]])).stdout)
    assert "network access attempted in an offline fixture test" in got["msmarco-passage/dev/small"]["error"]


def test_dpr_question_ids_are_kept_apart_by_split_in_the_export_and_the_folds(home, tmp_path):
    """NQ's train and dev questions share ids (ir_datasets numbers each file from 0): the export prefixes them by
    split, and the folds name the same ids, so no question is lost or in two splits."""
    code = NO_NETWORK + textwrap.dedent("""
        import json, sys
        from pathlib import Path
        from peftir.data.export import export_dataset
        from peftir.data.folds import assign_folds, read_folds
        out = Path(sys.argv[1])
        spec = {"irds": "dpr-w100", "query_field": "text", "doc_fields": ["title", "text"],
                "folds": {"scheme": "presplit"},
                "splits": {"train": "dpr-w100/natural-questions/train", "test": "dpr-w100/natural-questions/dev"}}
        export_dataset(spec, out / "docs.jsonl", out / "lookup.sqlite", out / "empty-docs.txt", out / "queries.tsv",
                       out / "qrels.txt", out / "info.json")
        assign_folds("nq", {k: spec[k] for k in ("folds", "splits")}, out / "queries.tsv", out / "folds.json")
        print(json.dumps(read_folds(out / "folds.json")["splits"]))
    """)
    splits = json.loads(_run(code, home[0], str(tmp_path)).stdout.strip().splitlines()[-1])
    assert all(q.startswith("train-") for q in splits["train"]) and all(q.startswith("dev-") for q in splits["test"])
    assert splits["train"] and splits["test"] and not set(splits["train"]) & set(splits["test"])
    exported = (tmp_path / "queries.tsv").read_text().split("\n")
    assert len([line for line in exported if line]) == len(splits["train"]) + len(splits["test"])

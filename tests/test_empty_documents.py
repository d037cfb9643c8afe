"""Collections with empty documents, as real ones are (Cranfield's 471 and 995, ClueWeb09 pages with no extracted text,
MS MARCO documents with an empty body): the export counts and lists them, Anserini's counters are reconciled with the
export instead of equated with it, and every later stage handles them. The whole chain runs through the real rules on
a Cranfield fixture in its real format (``irds_fixtures``: three of its 53 documents hold no text, one of them only
whitespace), to audited tables; ClueWeb09's page of markup only and the other families' empty records run in the
scale models (``make scale-test``)."""
from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from peftir.data import empty_documents, export, trec
from peftir.data.docstore import lookup_writer
from peftir.data.text_units import TextUnits
from peftir.evaluation.answers import judge_run
from peftir.retrieval import anserini, faiss_index
from peftir.splade import impact

from checkout import clone
from irds_fixtures import expected, write_fixtures
from seam import audited, check_the_seam
from test_workflow import snakemake
from tiny import tiny_ranker

CRANFIELD = {"irds": "cranfield", "query_field": "text", "doc_fields": ["title", "text"]}
EMPTY = [doc_id for doc_id, words in expected("cranfield").docs.items() if not words]
DOCS = len(expected("cranfield").docs)


def _corpus(path: Path, texts: dict[str, str]) -> Path:
    """A JsonCollection directory of ``texts`` exactly as given (not normalised), one file."""
    path.mkdir(parents=True)
    (path / "docs.jsonl").write_text("".join(json.dumps({"id": doc_id, "contents": text}) + "\n"
                                             for doc_id, text in texts.items()))
    return path


def test_the_export_calls_empty_exactly_what_anserini_does_not_index(tmp_path):
    """Java's trim strips U+0000-U+0020, control characters too, and no other space: Anserini's ``empty`` counter is
    the export's count of ``is_empty`` texts, whatever the characters; a text of stopwords is indexed (no terms)."""
    texts = {"words": "a wing in a slipstream", "none": "", "spaces": "  \t ", "controls": "\x01 \x1f",
             "no-break": "\u00a0", "em-space": "\u2003", "stopwords": "the of and"}
    corpus = _corpus(tmp_path / "corpus", texts)
    count, empty = empty_documents.scan(corpus / "docs.jsonl")
    assert (count, empty) == (7, ["none", "spaces", "controls"])
    info = anserini.build_index(corpus, tmp_path / "index", 1, exported=count, empty=len(empty), log=io.StringIO())
    assert info["anserini"] == {"indexed": 4, "unindexable": 0, "empty": 3, "skipped": 0, "errors": 0}
    assert json.loads((tmp_path / "index" / anserini.INDEX_INFO).read_text()) == info


def test_an_index_whose_counters_do_not_reconcile_is_refused_naming_each_counter(tmp_path):
    corpus = _corpus(tmp_path / "corpus", {"a": "wing", "b": "", "c": " "})
    with pytest.raises(RuntimeError, match="empty 2 where the export counted 0 documents with no text"):
        anserini.build_index(corpus, tmp_path / "index", 1, exported=3, log=io.StringIO())
    assert not (tmp_path / "index").exists() and not list(tmp_path.glob(".index.*"))
    counted = {"indexed": 1395, "unindexable": 2, "empty": 2, "skipped": 0, "errors": 1}
    with pytest.raises(RuntimeError) as refused:
        anserini.reconcile(counted, 1400, 2, "results/data/cranfield/corpus")
    message = str(refused.value)
    assert "for results/data/cranfield/corpus" in message
    assert "unindexable 2 (documents Anserini could not turn into an index entry)" in message
    assert "errors 1 (documents whose indexing raised an error)" in message and "skipped" not in message
    assert "indexed 1,395 + empty 2 = 1,397, not the 1,400 documents exported" in message
    anserini.reconcile({**counted, "indexed": 1398, "unindexable": 0, "errors": 0}, 1400, 2, "c")   # the issue's


def test_the_counters_read_the_same_whatever_the_hosts_java_locale(tmp_path, monkeypatch):
    """A JVM whose default locale is German prints "indexed: 1.200"; the index job pins an English one."""
    corpus = _corpus(tmp_path / "corpus", {str(n): f"word{n} text" for n in range(1200)} | {"e": ""})
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Duser.language=de -Duser.country=DE")
    log = io.StringIO()
    info = anserini.build_index(corpus, tmp_path / "index", 1, exported=1201, empty=1, log=log)
    assert "Picked up JAVA_TOOL_OPTIONS: -Duser.language=de" in log.getvalue()
    assert info["anserini"]["indexed"] == 1200 and "indexed:            1,200" in log.getvalue()


def test_text_units_leave_out_the_empty_documents_and_count_them(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": str(n), "contents": text}) + "\n"
                            for n, text in enumerate(["wing", "", "slipstream", " \x01"])) + "\n")
    lines = tmp_path / "corpus.txt"
    lines.write_text("first\n\n  \nsecond\n")
    units = TextUnits([docs, lines])
    assert list(units) == ["wing", "slipstream", "first", "second"] and units.empty == 4   # the blank jsonl line: none
    assert [unit for chunk in units.chunks() for unit in chunk] == list(units) and units.empty == 4


@pytest.mark.parametrize("name", ["monobert", "twinbert", "colbert"])
def test_a_ranker_scores_an_empty_document_beside_others(name):
    """Where an empty document reaches a reranker (a dense or SPLADE pool, MS MARCO's official top 100), it is one
    candidate among others: [CLS] q [SEP] [SEP] for a cross-encoder, [CLS] ([D]) [SEP] for a bi-encoder."""
    ranker = tiny_ranker(name).eval()
    query, full, empty = [2000, 2001], [2000, 2002, 2003], []
    with torch.no_grad():
        scores = ranker.score_candidates([query, query], [[full, empty], [empty, full]])
        alone = ranker.score_pairs([query], [empty])
    assert torch.isfinite(scores).all() and torch.allclose(scores[0], scores[1].flip(0), atol=1e-5)
    assert torch.allclose(alone, scores[0, 1:], atol=1e-5)


def test_an_empty_passage_is_judged_to_hold_no_answer(tmp_path):
    passages = {"p1": "The Eiffel Tower stands in Paris.", "p2": "", "p3": "Paris is in France."}
    docs = tmp_path / "docs.jsonl"
    lines = [(json.dumps({"id": doc, "contents": text}) + "\n").encode() for doc, text in passages.items()]
    docs.write_bytes(b"".join(lines))
    with lookup_writer(tmp_path / "lookup.sqlite", docs) as places:
        for offset, (doc, line) in zip(np.cumsum([0] + [len(line) for line in lines]), zip(passages, lines)):
            places.add(doc, int(offset), len(line))
    (tmp_path / "answers.jsonl").write_text(json.dumps({"id": "q", "answers": ["Paris"]}) + "\n")
    (tmp_path / "run").write_text("q Q0 p2 1 3.0 dense\nq Q0 p1 2 2.0 dense\nq Q0 p3 3 1.0 dense\n")
    facts = judge_run(str(tmp_path / "run"), str(tmp_path / "answers.jsonl"), str(docs), str(tmp_path / "lookup.sqlite"),
                      ["q"], None, str(tmp_path / "judged.txt"))
    assert facts == {"questions": 1, "judged": 3, "answered_in_run": 1}
    assert trec.read_qrels(tmp_path / "judged.txt") == {"q": {"p1": 1, "p2": 0, "p3": 1}}


def test_the_cranfield_export_counts_and_lists_its_empty_documents_and_the_index_reconciles(irds_home, tmp_path):
    """The issue's case on the Cranfield fixture: before, ``index`` refused the collection (Anserini indexed 50 of the
    53 exported); now the export lists the three empty documents and the index's counters reconcile with it."""
    write_fixtures(irds_home, ["cranfield"])
    data = tmp_path / "data"
    info = export.export_dataset(CRANFIELD, data / "corpus" / "docs.jsonl", data / "docs.lookup.sqlite",
                                 data / "empty-docs.txt", data / "queries.tsv", data / "qrels.txt", data / "info.json")
    assert (info["docs"], info["empty_docs"]) == (DOCS, 3)
    assert empty_documents.read_list(data / "empty-docs.txt") == EMPTY        # in collection order
    index = anserini.index_collection(data / "corpus" / "docs.jsonl", data / "info.json", tmp_path / "index", 1)
    assert index["anserini"] == {"indexed": DOCS - 3, "unindexable": 0, "empty": 3, "skipped": 0, "errors": 0}
    assert index["empty_documents"] == str(data / "empty-docs.txt") and index["retrievable"] == DOCS - 3
    anserini.search(tmp_path / "index", trec.read_topics(data / "queries.tsv"), tmp_path / "bm25.run", k1=0.9,
                    b=0.4, hits=1000, threads=1, log=io.StringIO())
    retrieved = {doc for docs in trec.read_run(tmp_path / "bm25.run").values() for doc in docs}
    assert retrieved and not retrieved & set(EMPTY)                  # BM25 cannot retrieve an empty document


# ------------------------------------------------------------------ the whole chain, through the real rules

TINY_EMPTY = """
experiment: {datasets: [cranfield], rankers: [colbert], seeds: [1], metrics: [P@20, nDCG@10]}
datasets:
  cranfield:
    label: Cranfield
    irds: cranfield
    query_field: text
    doc_fields: [title, text]
    folds: {scheme: seeded, n: 3, seed: 7}
    validation_metric: P@20
tables:
  table5: {rankers: [colbert], methods: [full, ss_lora]}
backbone: {layers: 1}
ranker: {max_doc_len: 48, max_seq_len: 64}
training: {epochs: 1, pairs_per_epoch: 8, batch_size: 4, micro_batch: 4}
rerank: {depth: 25, batch_size: 64}
pretraining:
  backbone: {mlm_head: {corpus: cranfield, steps: 2, batch_size: 4, block_size: 32}}
  settings: {max_len: 32, batch_size: 4, chunk: 4, steps: 2, window_words: null}
  runs: {condenser: {objective: condenser, corpus: cranfield, seed: 1}}
dense_retrieval:
  dataset: cranfield
  layers: 1
  train: {q_max_len: 16, p_max_len: 24, passages: 2, batch_size: 2, steps: 2}
  # the first round's whole ranking (depth 100 > 53 documents, exact search), all of its negatives sampled
  mining: {depth: 100, sample: 100, reranker: {calibration_queries: 10}}
  search: {depth: 100, batch_size: 64}
  metrics: [RR@10, R@100, nDCG@10]
  tables:
    dptdr:
      empty:
        caption: Cranfield.
        baseline: FT
        columns: [{label: MRR@10, metric: RR@10}, {label: R@100, metric: R@100}]
        rows:
          - {label: BM25, reference: bm25}
          - {label: MiniLM untrained, reference: untrained, backbone: minilm}
          - {label: FT, backbone: minilm, retriever: ft, negatives: bm25}
          - {label: FT + UNM, backbone: minilm, retriever: ft, negatives: denoised}
sparse_retrieval:
  dataset: cranfield
  layers: 1
  methods: {adapter: {reduction_factor: 64}}
  train: {q_max_len: 16, d_max_len: 24, batch_size: 2, steps: 2, validation_queries: 2, validation_depth: 10,
          validate_every: 1, warmup_steps: 1, regularisation: {warmup_steps: 1}}
  index: {depth: 100, batch_size: 16}
  metrics: [RR@10, R@100, nDCG@10]
  rerankers:
    models: {minilm_adapter: {backbone: embedded:all-MiniLM-L6-v2, kind: adapter, lr: 1.0e-3, reduction_factor: 64}}
    train: {max_len: 32, batch_size: 2, steps: 2, validation_queries: 2, validation_depth: 10, validate_every: 1,
            warmup_steps: 1}
    rerank: {depth: 100}
  tables:
    table1:
      baseline: Adapter
      columns: [{label: MRR@10, metric: RR@10}, {label: R-FLOPS, metric: R-FLOPS}]
      rows:
        - {label: BM25, reference: bm25}
        - {label: Adapter, backbone: minilm, splade: adapter}
    table7:
      baseline: MiniLM adapter
      columns: [{label: MRR@10, metric: RR@10}, {label: nDCG@10, metric: nDCG@10}]
      rows:
        - {label: First stage (SPLADE adapter), backbone: minilm, splade: adapter}
        - {label: MiniLM adapter, reranker: minilm_adapter}
"""
TABLES = {"semi-siamese": "results/tables/table5.tex", "dense": "results/tables/dptdr/empty.tex",
          "splade": "results/tables/splade-adapters/table1.tex", "rerankers": "results/tables/splade-adapters/table7.tex"}
PRETRAINED = "results/pretrained/condenser.json"
SPLADE = "cranfield/cranfield/minilm/adapter/fold1-seed1"


@pytest.fixture(scope="module")
def empty_workflow(irds_home, tmp_path_factory):
    """Every system's tables on the Cranfield fixture, built in a clone as a user builds them."""
    write_fixtures(irds_home, ["cranfield"])
    workdir = clone(tmp_path_factory.mktemp("empty"))
    (workdir / "tiny.yaml").write_text(TINY_EMPTY)
    result = snakemake(workdir, *TABLES.values(), PRETRAINED, "--cores", "2", env=audited(workdir))
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir


def _record(workdir: Path, output: str) -> dict:
    return json.loads((workdir / "results" / "provenance" / f"{output.removeprefix('results/')}.json").read_text())


def _audit(workdir: Path, table: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "peftir.app.cli", "audit", table, "--directory", str(workdir),
                           "--checkout", str(workdir)], capture_output=True, text=True, timeout=600)


@pytest.mark.integration
def test_the_chain_runs_to_audited_tables_with_every_job_through_the_seam(empty_workflow):
    for table in TABLES.values():
        done = _audit(empty_workflow, table)
        assert done.returncode == 0, f"{table}: {done.stdout[-3000:]}{done.stderr[-2000:]}"
        assert "audit passed" in done.stdout
    check_the_seam(empty_workflow, {"train", "rerank", "dense_index_untrained", "pretraining_mlm_head", "pretrain",
                                    "train_splade", "splade_index", "train_splade_reranker", "splade_rerank"})


@pytest.mark.integration
def test_the_download_lists_the_empty_documents_and_its_record_counts_them(empty_workflow):
    data = empty_workflow / "results/data/cranfield"
    assert empty_documents.read_list(data / "empty-docs.txt") == EMPTY
    info = json.loads((data / "info.json").read_text())
    assert (info["docs"], info["empty_docs"]) == (DOCS, 3)
    facts = _record(empty_workflow, "results/data/cranfield/info.json")["facts"]
    assert (facts["docs"], facts["empty_docs"]) == (DOCS, 3)
    assert "3 of 53 documents have no text" in (empty_workflow / "results/logs/download/cranfield.log").read_text()


@pytest.mark.integration
def test_the_index_reconciles_anserinis_counters_and_bm25_never_retrieves_an_empty_document(empty_workflow):
    index = empty_workflow / "results/index/cranfield"
    info = json.loads((index / anserini.INDEX_INFO).read_text())
    counted = {"indexed": DOCS - 3, "unindexable": 0, "empty": 3, "skipped": 0, "errors": 0}
    assert info["anserini"] == counted and (info["exported"], info["empty"]) == (DOCS, 3)
    assert _record(empty_workflow, "results/index/cranfield")["facts"]["anserini"] == counted
    run = trec.read_run(empty_workflow / "results/runs/cranfield/bm25.run")
    assert run and not {doc for docs in run.values() for doc in docs} & set(EMPTY)
    judged = trec.read_qrels(empty_workflow / "results/data/cranfield/qrels.txt")
    assert judged["1"][EMPTY[0]] == 1          # a relevant document BM25's pool never holds: its recall stays below 1


@pytest.mark.integration
def test_a_dense_index_encodes_the_empty_documents_and_exact_search_finds_them(empty_workflow):
    index = empty_workflow / "results/dense/index/cranfield/untrained/minilm"
    assert set(EMPTY) <= set((index / faiss_index.IDS).read_text().split())
    vectors = np.concatenate([np.load(shard) for shard in sorted((index / faiss_index.SHARDS).glob("*.npy"))])
    assert len(vectors) == DOCS and np.isfinite(vectors).all()
    assert _record(empty_workflow, "results/dense/index/cranfield/untrained/minilm")["facts"]["empty_texts"] == 3
    run = trec.read_run(empty_workflow / "results/dense/runs/cranfield/untrained/minilm.run")
    assert all(set(EMPTY) <= set(docs) for docs in run.values())     # exact search at depth 100 > 53 documents


@pytest.mark.integration
def test_the_unm_judge_scores_the_empty_documents_and_the_second_round_trains_on_them(empty_workflow):
    """The monoBERT judge of UNM reranks the first round's whole ranking, empty documents included (a reranker's input
    holding them), and the second-round retriever trains on a pool that holds them."""
    mined = empty_workflow / "results/dense/negatives/cranfield/minilm/ft/denoised/fold1-seed1"
    facts = json.loads(mined.with_suffix(".json").read_text())
    judged = facts["candidates_below"] + facts["candidates_at_or_above"]
    pools = trec.read_run(mined.with_suffix(".run"))
    assert judged == sum(len(docs) for docs in pools.values())    # every candidate judged, all of them kept
    qrels = trec.read_qrels(empty_workflow / "results/data/cranfield/qrels.txt")
    assert pools and all(set(EMPTY) - set(trec.relevant(qrels, qid)) <= set(docs) for qid, docs in pools.items())
    summary = json.loads((empty_workflow / "results/dense/models/cranfield/minilm/ft/denoised/fold1-seed1.json")
                         .read_text())
    assert all(math.isfinite(loss) for loss in summary["losses"])


@pytest.mark.integration
def test_the_mlm_and_pretraining_corpora_drop_the_empty_documents_and_count_them(empty_workflow):
    head = json.loads((empty_workflow / "results/pretrained/base/mlm-head.json").read_text())
    pretrained = json.loads((empty_workflow / PRETRAINED).read_text())
    assert head["empty_units_dropped"] == {"train": 3, "heldout": 0}      # the held-out text is the queries
    assert pretrained["empty_texts_dropped"] == 3


@pytest.mark.integration
def test_splade_indexes_every_document_and_its_reranker_reranks_what_it_retrieves(empty_workflow):
    """SPLADE encodes an empty text from [CLS] [SEP] alone; where that keeps no piece (this head's), the vector is the
    released code's placeholder, which Anserini indexes and no query retrieves."""
    sparse = empty_workflow / "results/sparse"
    lines = (sparse / f"index/{SPLADE}/vectors/docs.jsonl").read_text().splitlines()
    vectors = {document["id"]: document["vector"] for document in map(json.loads, lines)}
    assert len(vectors) == DOCS
    placeholders = {doc for doc, vector in vectors.items() if vector == impact.EMPTY_DOCUMENT}
    info = json.loads((sparse / f"index/{SPLADE}/lucene" / anserini.INDEX_INFO).read_text())
    assert info["anserini"]["indexed"] == DOCS and info["anserini"]["empty"] == 0
    assert info["empty_texts"] == 3 and info["empty_vectors"] == len(placeholders)
    first = trec.read_run(sparse / f"runs/{SPLADE}.run")
    assert not {doc for docs in first.values() for doc in docs} & placeholders
    reranked = trec.read_run(sparse / "rerankers/runs/cranfield/cranfield/minilm_adapter/fold1-seed1.run")
    assert reranked and all(set(reranked[qid]) == set(first[qid]) for qid in reranked)
    assert all(math.isfinite(score) for docs in reranked.values() for score in docs.values())

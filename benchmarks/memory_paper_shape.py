"""Peak memory and time of every system's data path at the papers' scale, on synthetic data of MS MARCO's shape.

    .venv/bin/python benchmarks/memory_paper_shape.py [--scale 0.02] [--wiki-tokens 2e7] [--before]
        [--splade-docs 5000] [--pieces-docs 30000] [--splade-logit-offset -0.4] [--phases NAME ...]

Builds the collection of ``memory_msmarco_shape.build`` (MS MARCO passage's shape × ``--scale``: documents and
lookup, queries, qrels, presplit folds, BM25-like runs of depth 100) under
``results/benchmarks/memory-paper-shape/scale-<scale>/`` and beside it a depth-1,000 BM25-like run of the
training queries (``train-1000.run``; the relevant passage in it for 85 % of them), a depth-200 "first-round"
run of them (``first-round-200.run``) and, under ``results/benchmarks/memory-paper-shape/``, a Wikipedia-shaped
text of ``--wiki-tokens`` words (lines of ~100 words drawn Zipf-like from the backbone's vocabulary, each word one
word piece). Models are tiny and randomly initialised (a BERT masked LM, hidden 32, 2 layers, 2 heads, with the
embedded MiniLM's tokenizer and its 30,522-piece vocabulary), so the numbers are the data path's, not a model's.

Then measures, each phase in its own process (peak RSS from ``os.wait4``, which for a phase that starts Java is
the larger of the Python process and its Java children; the child also reports its own peak and its children's
apart), the peak RSS and wall time of:

- ``baseline-imports``: the interpreter with torch, transformers, faiss and the package imported (the floor);
- ``dense-train-loop``: ``NegativePools`` over ``train-1000.run`` at depth 200, ``PassageGroups`` of 30 passages,
  50 batches of 64 groups, each batch's texts fetched from the store (``train_retriever`` per step, no model);
- ``splade-train-loop``: pools at depth 1,000, 2 passages, 50 batches of 128 groups, texts fetched, and the
  500-query validation candidates read and fetched as ``train_splade`` does;
- ``mine-negatives``: ``mine_negatives`` (``mined``: depth 200, 30 sampled) over every training query of
  ``train-1000.run`` (BM25) and ``first-round-200.run``;
- ``clir-ranking-loop``: ``relevance_instances`` over the depth-100 all-queries run, 50 batches of 32;
- ``dense-encode`` / ``dense-search``: ``peftir.dense.search.index_corpus`` of the whole corpus (flat
  index, shards of 100,000) and ``search_queries`` of every query to depth 1,000;
- ``splade-encode`` / ``splade-search``: ``peftir.splade.search.index_corpus`` of the first
  ``--splade-docs`` documents (|V|-wide SPLADE vectors are slow on a CPU) and ``search_queries`` of every query
  to depth 1,000 (Anserini: a Java child per block of queries, with the JVM's default heap);
- ``mlm-blocks``: ``write_blocks`` of the Wikipedia text (``unit_chunks``), block 256, 2,000 held-out blocks
  masked, then 200 ``training_batches`` of 64 blocks (a language module job's data path);
- ``pretraining-pieces``: ``Pieces.write`` of Condenser blocks of the first ``--pieces-docs`` passages (pysbd is
  slow), then 100 batches of 2,048 blocks masked with ``Masking``;
- ``language-corpus``: ``build_language_corpus`` of the Wikipedia text as a modular CLIR language's MLM corpus
  (a text part, 1 % held out, no cap; de-duplicated and shuffled through bucket files on disk).

With ``--before``, the code before bounded memory, reproduced here in a few lines each, at the same scale:
``before-negative-pools`` (a dict of every training query's sorted negatives from ``read_run`` of the whole
depth-1,000 run), ``before-dense-encode`` (every document's id and text in two lists, one ``[n, dim]`` matrix,
one ``IndexFlatIP``), ``before-dense-search`` (every query encoded at once, the whole index read and searched at
once, every hit held, then written), ``before-mlm`` (``text_blocks``: every token id in one Python list, then a
``[blocks, 256]`` tensor), ``before-pretraining-pieces`` (``list(text_units(docs))`` of the whole corpus and
a Python list of the blocks of the first ``--pieces-docs`` passages) and ``before-language-corpus`` (every unit
in a list and a set, shuffled in memory).

Prints one JSON line per phase and merges them into ``results/benchmarks/memory-paper-shape/measured.json``
(keyed by scale; with two scales measured, each phase's two-point linear fit extrapolated to scale 1.0, and
for ``mlm-blocks`` and ``language-corpus`` to 2 B tokens). Nothing is written outside ``results/``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import memory_msmarco_shape as shape  # the synthetic MS MARCO-shaped collection

OUT = Path("results/benchmarks/memory-paper-shape")
TRAIN_RUN, FIRST_ROUND = "train-1000.run", "first-round-200.run"
TRAIN_DEPTH, FIRST_ROUND_DEPTH = 1000, 200
FOUND_SHARE = 0.85            # BM25's recall@1000 on MS MARCO dev is ~0.86: the relevant passage in the run
WIKI_WORDS_PER_LINE = 100
PAPER = {"scale": 1.0, "wiki_tokens": 2e9}
SPLADE_SETTINGS = {"q_max_len": 32, "d_max_len": 128}
SEARCH = {"index": "flat", "depth": 1000, "batch_size": 256, "hnsw_m": 32, "ef_search": 128, "q_max_len": 32,
          "p_max_len": 128}
CONDENSER = {"max_len": 128, "short_probability": 0.1, "window_words": None, "seed": 1}
NOTE = ("Models are tiny and randomly initialised (BERT masked LM: hidden 32, 2 layers, 2 heads, intermediate 128, "
        "the embedded MiniLM's tokenizer and 30,522-piece vocabulary): the numbers are the data path's, not a "
        "model's. peak_rss_mb: os.wait4's ru_maxrss of the phase's process, the larger of the Python process and "
        "any child it waited for (Anserini's JVM); self_peak_rss_mb is the Python process's, child_process_peaks_mb "
        "each started command's own peak (VmHWM, polled). Times were taken on 2 shared CPU cores: "
        "load_average_at_start says how busy they were.")


# ---------------------------------------------------------------------------------------------------------------
# the data beside build()'s


def _words() -> list[str]:
    from peftir.contract.backbones import EMBEDDED
    from peftir.models.backbone import load

    vocab = load(EMBEDDED, 1).tokenizer.get_vocab()
    return sorted(word for word in vocab if word.isalpha() and len(word) > 2)      # as build() draws them


def _write_run(path: Path, qids: list[str], depth: int, documents: int, relevant: dict[str, str], seed: int) -> int:
    """A BM25-like run: each query's ``depth`` random passages, scores decreasing, its relevant passage at a random
    rank for ``FOUND_SHARE`` of the queries."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lines = 0
    with open(path, "w") as run:
        for qid in qids:
            docs = [f"p{d}" for d in rng.integers(0, documents, depth)]
            if qid in relevant and rng.random() < FOUND_SHARE:
                docs[int(rng.integers(0, depth))] = relevant[qid]
            run.write("".join(f"{qid} Q0 {doc} {rank} {30.0 - rank / 100:.2f} bm25\n"
                              for rank, doc in enumerate(docs, start=1)))
            lines += depth
    return lines


def _write_wiki(path: Path, tokens: int, words: list[str], seed: int = 2) -> int:
    """Lines of ~100 words (Gaussian, sd 30, at least 10) drawn Zipf-like (as build() draws passages) until
    ``tokens`` words; returns the number of lines."""
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    written = lines = 0
    building = path.with_suffix(".part")
    with open(building, "w") as text:
        while written < tokens:
            lengths = np.maximum(10, rng.normal(WIKI_WORDS_PER_LINE, 30, 10_000).astype(int))
            drawn = rng.choice(len(words), int(lengths.sum()), p=weights)
            start, out = 0, []
            for length in lengths:
                if written >= tokens:
                    break
                length = int(min(length, tokens - written))
                out.append(" ".join(words[i] for i in drawn[start:start + length]) + "\n")
                start += length
                written += length
                lines += 1
            text.write("".join(out))
    building.rename(path)
    return lines


def _tiny_model(path: Path) -> None:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from peftir.contract.backbones import EMBEDDED, resolve

    tokenizer = AutoTokenizer.from_pretrained(resolve(EMBEDDED))
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=128, max_position_embeddings=512))
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)


def java_default_heap() -> str:
    """The JVM's default maximum heap on this machine (Anserini's command line sets none: 1/4 of the RAM)."""
    from peftir.retrieval.anserini import java

    try:
        printed = subprocess.run([java(), "-XX:-UsePerfData", "-XX:+PrintFlagsFinal", "-version"],
                                 capture_output=True, text=True, timeout=60, check=False).stdout
        size = next(int(line.split()[3]) for line in printed.splitlines() if " MaxHeapSize " in line)
        return f"{size / 2**30:.1f} GiB (JVM default, no -Xmx in peftir.retrieval.anserini)"
    except (OSError, subprocess.SubprocessError, StopIteration, ValueError) as problem:   # a fact, not a failure
        return f"unknown ({problem})"


def prepare(args) -> dict:
    """build()'s collection at the scale, and the runs, text, model and SPLADE prefix beside it."""
    root = args.root
    built = shape.build(root, args.scale)
    extra_file = root / "extra.json"
    wanted = {"scale": args.scale, "splade_docs": args.splade_docs, "train_depth": TRAIN_DEPTH,
              "first_round_depth": FIRST_ROUND_DEPTH}
    extra = json.loads(extra_file.read_text()) if extra_file.exists() else {}
    if extra.get("wanted") != wanted:
        started = time.time()
        folds = json.loads((root / "folds.json").read_text())["splits"]
        relevant = {}
        with open(root / "qrels.txt") as qrels:
            for line in qrels:
                qid, _, doc, _ = line.split()
                relevant[qid] = doc
        documents = built["counts"]["docs"]
        extra = {"wanted": wanted, "runs": {
            TRAIN_RUN: _write_run(root / TRAIN_RUN, folds["train"], TRAIN_DEPTH, documents, relevant, 3),
            FIRST_ROUND: _write_run(root / FIRST_ROUND, folds["train"], FIRST_ROUND_DEPTH, documents, relevant, 4)}}
        prefix = root / "splade-prefix" / "docs.jsonl"
        prefix.parent.mkdir(exist_ok=True)
        with open(root / "corpus" / "docs.jsonl") as docs, open(prefix, "w") as out:
            out.writelines(itertools.islice(docs, args.splade_docs))
        with open(prefix) as lines:
            extra["splade_prefix_docs"] = sum(1 for _ in lines)
        if (root / "tiny-bert").exists():
            shutil.rmtree(root / "tiny-bert")
        _tiny_model(root / "tiny-bert")
        extra["seconds"] = round(time.time() - started, 1)
        extra["sizes_mb"] = {name: round((root / name).stat().st_size / 2**20) for name in (TRAIN_RUN, FIRST_ROUND)}
        extra_file.write_text(json.dumps(extra, indent=1))
    wiki = OUT / f"wiki-{int(args.wiki_tokens)}.txt"
    if not wiki.exists():
        started = time.time()
        lines = _write_wiki(wiki, int(args.wiki_tokens), _words())
        (OUT / f"wiki-{int(args.wiki_tokens)}.json").write_text(json.dumps(
            {"lines": lines, "words": int(args.wiki_tokens), "seconds": round(time.time() - started, 1)}))
    extra["wiki"] = {"path": str(wiki), "mb": round(wiki.stat().st_size / 2**20),
                     **json.loads((OUT / f"wiki-{int(args.wiki_tokens)}.json").read_text())}
    return {"built": built, "extra": extra}


# ---------------------------------------------------------------------------------------------------------------
# the phases, each run in a child process


def rss_mb() -> int:
    """The process's resident memory now (MB)."""
    with open("/proc/self/status") as status:
        return round(next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024)


class ChildWatch:
    """The peak resident memory (VmHWM) of each process this one starts (Anserini's JVM; git for ir_metadata), by
    command name, polled every 0.2 s. Their ru_maxrss would not do: a child started with vfork (Python's subprocess)
    counts its parent's resident memory at exec as its own."""

    def __init__(self) -> None:
        import threading

        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        me = str(os.getpid())
        while not self._stop.wait(0.2):
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/status") as status:
                        fields = dict(line.split(":", 1) for line in status if ":" in line)
                except OSError:
                    continue
                if fields.get("PPid", "").strip() == me and "VmHWM" in fields:
                    name = fields["Name"].strip()
                    self.peaks[name] = max(self.peaks.get(name, 0), round(int(fields["VmHWM"].split()[0]) / 1024))

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join()
        return self.peaks


class Marks(dict):
    """The RSS at named points of a phase: what the memory is made of."""

    def __call__(self, name: str) -> None:
        self[name] = rss_mb()


def _collection(root: Path):
    return shape._collection(root)


def _training_queries(root: Path) -> list[str]:
    from peftir.dense.train import training_queries

    return training_queries(str(root / "folds.json"), "1")


def _tiny(ctx: dict) -> str:
    return str(Path(ctx["root"]) / "tiny-bert")


def _dense_spec(ctx: dict) -> dict:
    return {"backbone": _tiny(ctx), "layers": None, "execution": {"device": "cpu", "precision": "fp32"}}


def _splade(ctx: dict):
    from peftir.execution.seam import Execution
    from peftir.splade.train import build_splade

    return build_splade(_tiny(ctx), None, {"name": "ft"}, {**SPLADE_SETTINGS, "logit_offset": ctx["logit_offset"]},
                        Execution.of(None, 2)).eval()


def phase_baseline_imports(ctx: dict, marks: Marks) -> dict:
    import faiss  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401

    from peftir.clir import ranking_module  # noqa: F401
    from peftir.dense import negative_mining  # noqa: F401
    from peftir.dense import search as dense_search  # noqa: F401
    from peftir.splade import search as splade_search  # noqa: F401
    from peftir.splade import train as train_splade  # noqa: F401

    return {"what": "torch, transformers, faiss and the package's retrieval and training modules imported"}


def _group_loop(ctx: dict, marks: Marks, depth: int, passages: int, batch_size: int) -> tuple[dict, object, object]:
    """Pools from ``train-1000.run`` at ``depth``, groups of ``passages``, 50 batches of ``batch_size`` fetched."""
    from peftir.data import trec
    from peftir.training.passage_groups import NegativePools, PassageGroups

    root = Path(ctx["root"])
    collection = _collection(root)
    qids = _training_queries(root)
    qrels = trec.read_qrels(collection.qrels)
    marks("qrels and training queries read")
    pools = NegativePools([str(root / TRAIN_RUN)], qrels, qids, depth)
    marks("negative pools (run index) built")
    groups = PassageGroups({qid: [d for d, rel in qrels.get(qid, {}).items() if rel > 0] for qid in qids}, pools,
                           passages, 1)
    topics = trec.read_topics(collection.queries, set(groups.qids))
    marks("groups and their queries' texts")
    fetched = chars = 0
    with collection.store() as store:
        for batch in itertools.islice(groups.batches(batch_size), 50):
            docs = [doc for _, passages_ in batch for doc in passages_]
            found = store.texts(docs)
            texts = [topics[qid] for qid, _ in batch] + [found[doc] for doc in docs]
            fetched += len(docs)
            chars += sum(map(len, texts))
    marks("after 50 batches")
    return ({"training_queries": len(qids), "queries_with_pool": len(pools),
             "run_lines_indexed": len(qids) * TRAIN_DEPTH, "pool_depth": depth, "batches": 50,
             "groups": 50 * batch_size, "passages_fetched": fetched,
             "text_chars_fetched": chars}, collection, qrels)


def phase_dense_train_loop(ctx: dict, marks: Marks) -> dict:
    return _group_loop(ctx, marks, 200, 30, 64)[0]


def phase_splade_train_loop(ctx: dict, marks: Marks) -> dict:
    from peftir.data import trec
    from peftir.splade.train import validation_queries

    root = Path(ctx["root"])
    facts, collection, _ = _group_loop(ctx, marks, 1000, 2, 128)
    topics = trec.read_topics(collection.queries)                  # as peftir.splade.train._train: every query
    valid = validation_queries(collection.folds, "1", 500, 1)
    validation = {qid: list(docs) for qid, docs in
                  trec.read_run(root / "bm25-all-queries.run", set(valid), 100).items()}
    with collection.store() as store:
        texts = store.texts(sorted({d for docs in validation.values() for d in docs}))
    marks("validation candidates fetched and held")
    return {**facts, "all_query_texts": len(topics), "validation_queries": len(validation),
            "validation_texts_held": len(texts)}


def phase_mine_negatives(ctx: dict, marks: Marks) -> dict:
    from peftir.dense.negative_mining import mine_negatives

    root = Path(ctx["root"])
    facts = mine_negatives(_collection(root), str(root / TRAIN_RUN), str(root / FIRST_ROUND), "1",
                           {"negatives": "mined", "depth": 200, "sample": 30, "seed": 1}, 2, str(root / "mined.run"),
                           str(root / "mined.json"))
    return {**facts, "mined_run_mb": round((root / "mined.run").stat().st_size / 2**20)}


def phase_clir_ranking_loop(ctx: dict, marks: Marks) -> dict:
    from peftir.clir.ranking_module import relevance_instances

    root = Path(ctx["root"])
    instances = relevance_instances(_collection(root), str(root / "bm25-all-queries.run"), 100, 4, 1)
    first = next(instances)
    marks("run indexed, first instance")
    chars = len(first[0]) + len(first[1])
    for _ in range(50 * 32 - 1):
        query, document, _ = next(instances)
        chars += len(query) + len(document)
    marks("after 50 batches")
    return {"instances": 50 * 32, "batches": 50, "positives_every": 5, "run_depth": 100, "text_chars": chars}


def phase_dense_encode(ctx: dict, marks: Marks) -> dict:
    from peftir.dense.search import index_corpus

    root = Path(ctx["root"])
    facts = index_corpus(_dense_spec(ctx), SEARCH, str(root / "corpus" / "docs.jsonl"), 2, str(root / "dense-index"))
    return {**facts, "index_mb": round(sum(f.stat().st_size for f in (root / "dense-index").rglob("*")) / 2**20)}


def phase_dense_search(ctx: dict, marks: Marks) -> dict:
    from peftir.dense.search import search_queries

    root = Path(ctx["root"])
    facts = search_queries(_dense_spec(ctx), SEARCH, str(root / "dense-index"), str(root / "queries.tsv"), 2,
                           {"dataset": "synthetic", "backbone": "tiny", "retriever": "ft"}, str(root / "dense.run"),
                           str(root / "dense.run.json"))
    return {**facts, "run_mb": round((root / "dense.run").stat().st_size / 2**20)}


def phase_splade_encode(ctx: dict, marks: Marks) -> dict:
    from peftir.splade.search import index_corpus

    root = Path(ctx["root"])
    output = root / "splade-index"
    if output.exists():
        shutil.rmtree(output)
    encoder = _splade(ctx)
    marks("encoder built")
    facts = index_corpus(encoder, str(root / "splade-prefix" / "docs.jsonl"), output, 100, 32, 2)
    return {**facts, "logit_offset": ctx["logit_offset"],
            "vectors_mb": round((output / "vectors" / "docs.jsonl").stat().st_size / 2**20)}


def phase_splade_search(ctx: dict, marks: Marks) -> dict:
    from peftir.splade.search import search_queries

    root = Path(ctx["root"])
    encoder = _splade(ctx)
    marks("encoder built")
    facts = search_queries(encoder, root / "splade-index", str(root / "queries.tsv"), 100, 1000, 32, 2,
                           {"dataset": "synthetic", "backbone": "tiny", "splade": "ft"}, str(root / "splade.run"),
                           str(root / "splade.run.json"), str(root / "splade-flops.json"))
    return {**facts, "run_mb": round((root / "splade.run").stat().st_size / 2**20)}


def phase_mlm_blocks(ctx: dict, marks: Marks) -> dict:
    from transformers import AutoTokenizer

    from peftir.data.text_units import unit_chunks
    from peftir.training.mlm import heldout_batches, training_batches, write_blocks

    root = Path(ctx["root"])
    tokenizer = AutoTokenizer.from_pretrained(_tiny(ctx))
    work = root / "mlm"
    work.mkdir(exist_ok=True)
    blocks = write_blocks(tokenizer, unit_chunks([ctx["wiki"]]), 256, work / "train.ids")
    marks("blocks written")
    held = heldout_batches(write_blocks(tokenizer, unit_chunks([ctx["wiki"]]), 256, work / "heldout.ids", 2000), 64,
                           tokenizer)
    marks("held-out blocks masked and held")
    batches = training_batches(blocks, 64, tokenizer, 1)
    masked = sum(int((next(batches)["labels"] != -100).sum()) for _ in range(200))
    marks("after 200 batches")
    return {"tokens": len(blocks) * 256, "blocks": len(blocks),
            "ids_mb": round((work / "train.ids").stat().st_size / 2**20), "heldout_batches": len(held), "batches": 200,
            "masked_tokens": masked}


def _corpus_paths(ctx: dict, name: str) -> dict[str, str]:
    work = Path(ctx["root"]) / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    return {"output": str(work / "train.txt"), "heldout": str(work / "heldout.txt"), "info": str(work / "info.json")}


def phase_language_corpus(ctx: dict, marks: Marks) -> dict:
    from peftir.clir.multilingual_text import build_language_corpus

    paths = _corpus_paths(ctx, "language-corpus")
    build_language_corpus("en", [{"kind": "text", "path": ctx["wiki"]}], {}, **paths, heldout_fraction=0.01,
                          max_words=None, seed=42)
    marks("corpus written")
    info = json.loads(Path(paths["info"]).read_text())
    return {"buckets": info["buckets"], "units": info["available"]["units"], "words": info["available"]["words"],
            "heldout_units": info["heldout"]["units"]}


def _pieces_texts(ctx: dict):
    from peftir.data.text_units import text_units

    return itertools.islice(text_units(Path(ctx["root"]) / "corpus" / "docs.jsonl"), ctx["pieces_docs"])


def phase_pretraining_pieces(ctx: dict, marks: Marks) -> dict:
    from transformers import AutoTokenizer

    from peftir.data.pretraining_text import Pieces
    from peftir.dense.pretraining.retrieval_pretraining import Masking, _batches, _documents

    tokenizer = AutoTokenizer.from_pretrained(_tiny(ctx))
    work = Path(ctx["root"]) / "pieces"
    if work.exists():
        shutil.rmtree(work)
    started = time.time()
    pieces = Pieces.write(_documents("condenser", tokenizer, _pieces_texts(ctx), CONDENSER), work)
    written = time.time() - started
    marks("pieces written")
    batches = _batches("condenser", pieces, 2048, Masking(tokenizer, 1), 1)
    rows = sum(len(next(batches)["input_ids"]) for _ in range(100))
    marks("after 100 batches")
    return {"passages": ctx["pieces_docs"], "blocks": pieces.rows, "tokens": int(pieces.row_starts[-1]),
            "pieces_seconds": round(written, 1), "batches": 100, "rows_masked": rows}


# ---------------------------------------------------------------------------------------------------------------
# the code before bounded memory, reproduced


def old_negative_pools(runs: list[str], qrels: dict, qids: list[str], depth: int | None) -> dict[str, list[str]]:
    """``train_retriever.negative_pools`` before: every query's sorted negatives, from whole runs in memory."""
    from peftir.data import trec

    pools: dict[str, set[str]] = {qid: set() for qid in qids}
    for path in runs:
        for qid, docs in trec.read_run(path, set(qids), depth).items():
            pools[qid] |= {doc for doc in docs if qrels.get(qid, {}).get(doc, 0) <= 0}
    return {qid: sorted(pool) for qid, pool in pools.items()}


def phase_before_negative_pools(ctx: dict, marks: Marks) -> dict:
    from peftir.data import trec

    root = Path(ctx["root"])
    qids = _training_queries(root)
    qrels = trec.read_qrels(root / "qrels.txt")
    marks("qrels and training queries read")
    pools = old_negative_pools([str(root / TRAIN_RUN)], qrels, qids, 1000)
    marks("pools held")
    return {"training_queries": len(qids), "negatives_held": sum(map(len, pools.values())), "pool_depth": 1000}


def phase_before_dense_encode(ctx: dict, marks: Marks) -> dict:
    import faiss

    from peftir.dense.search import retriever
    from peftir.retrieval.dense_retriever import PASSAGE, encode_all

    root = Path(ctx["root"])
    model = retriever(_dense_spec(ctx), SEARCH, 2)
    ids, texts = [], []
    with open(root / "corpus" / "docs.jsonl", encoding="utf-8") as lines:      # the old read_documents
        for line in lines:
            document = json.loads(line)
            ids.append(document["id"])
            texts.append(document["contents"])
    marks("every id and text read")
    vectors = encode_all(model, texts, PASSAGE, SEARCH["batch_size"])
    marks("every vector in one matrix")
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    marks("IndexFlatIP built")
    output = root / "before-dense-index"
    output.mkdir(exist_ok=True)
    faiss.write_index(index, str(output / "index"))
    (output / "docid").write_text("".join(f"{doc}\n" for doc in ids), encoding="utf-8")
    return {"documents": len(ids), "dimension": int(vectors.shape[1])}


def phase_before_dense_search(ctx: dict, marks: Marks) -> dict:
    import faiss
    import numpy as np
    import torch

    from peftir.data import trec
    from peftir.dense.search import retriever
    from peftir.retrieval.dense_retriever import QUERY

    root = Path(ctx["root"])
    model = retriever(_dense_spec(ctx), SEARCH, 2)
    topics = trec.read_topics(root / "queries.tsv")
    qids = sorted(topics)
    size = SEARCH["batch_size"]
    with torch.no_grad():
        vectors = np.concatenate([model.encode([topics[qid] for qid in qids[start:start + size]], QUERY).numpy()
                                  for start in range(0, len(qids), size)])
    faiss.omp_set_num_threads(2)
    index = faiss.read_index(str(root / "before-dense-index" / "index"))
    ids = (root / "before-dense-index" / "docid").read_text(encoding="utf-8").splitlines()
    marks("queries encoded, index read")
    scores, rows = index.search(np.ascontiguousarray(vectors), min(SEARCH["depth"], len(ids)))
    hits = [{ids[row]: float(score) for score, row in zip(line_scores, line_rows) if row >= 0}
            for line_scores, line_rows in zip(scores, rows)]
    marks("every hit held")
    trec.write_run(root / "before-dense.run", dict(zip(qids, hits)), tag="tiny-ft")
    return {"queries": len(qids), "documents": len(ids), "depth": SEARCH["depth"]}


def phase_before_mlm(ctx: dict, marks: Marks) -> dict:
    import torch
    from transformers import AutoTokenizer

    from peftir.training.mlm import collator, shuffled_batches

    tokenizer = AutoTokenizer.from_pretrained(_tiny(ctx))
    ids: list[int] = []                                        # the old text_blocks
    with open(ctx["wiki"], encoding="utf-8") as lines:
        for line in lines:
            text = line.strip()
            if text:
                ids.extend(tokenizer(text, truncation=False)["input_ids"])
    marks("every token id in a list")
    usable = len(ids) // 256 * 256
    blocks = torch.tensor(ids[:usable], dtype=torch.long).view(-1, 256)
    marks("[blocks, 256] tensor made")
    masking, rng = collator(tokenizer, seed=1), random.Random(1)
    order = shuffled_batches(len(blocks), 64, rng)
    masked = sum(int((masking([{"input_ids": row} for row in blocks[next(order)]])["labels"] != -100).sum())
                 for _ in range(200))
    marks("after 200 batches")
    return {"tokens": usable, "blocks": len(blocks), "batches": 200, "masked_tokens": masked}


def phase_before_pretraining_pieces(ctx: dict, marks: Marks) -> dict:
    from transformers import AutoTokenizer

    from peftir.data import pretraining_text
    from peftir.data.text_units import text_units
    from peftir.dense.pretraining.retrieval_pretraining import Masking
    from peftir.training.mlm import shuffled_batches

    tokenizer = AutoTokenizer.from_pretrained(_tiny(ctx))
    texts = list(text_units(Path(ctx["root"]) / "corpus" / "docs.jsonl"))          # the whole corpus, as before
    marks("every text held")
    blocks = list(pretraining_text.blocks(tokenizer, texts[:ctx["pieces_docs"]], CONDENSER["max_len"],
                                          CONDENSER["short_probability"], CONDENSER["seed"]))
    marks("the blocks in a Python list")
    masking, rng = Masking(tokenizer, 1), random.Random(1)
    rows = 0
    for indices in itertools.islice(shuffled_batches(len(blocks), 2048, rng), 100):
        rows += len(masking([blocks[i] for i in indices])["input_ids"])
    marks("after 100 batches")
    return {"texts_held": len(texts), "passages_cut": ctx["pieces_docs"], "blocks": len(blocks),
            "tokens": sum(map(len, blocks)), "batches": 100, "rows_masked": rows}


def phase_before_language_corpus(ctx: dict, marks: Marks) -> dict:
    from peftir.data.export import normalise

    paths = _corpus_paths(ctx, "before-language-corpus")
    seen, units = set(), []                                     # the old _read_parts: every unit, a set of them
    with open(ctx["wiki"], encoding="utf-8") as lines:
        for unit in map(normalise, lines):
            if unit and unit not in seen:
                seen.add(unit)
                units.append(unit)
    marks("every unit and the set held")
    random.Random(42).shuffle(units)
    cut = round(0.01 * len(units))
    for name, chosen in (("heldout", units[:cut]), ("output", units[cut:])):
        with open(paths[name], "w", encoding="utf-8") as out:
            out.writelines(unit + "\n" for unit in chosen)
    marks("shuffled and written")
    return {"units": len(units), "words": sum(len(unit.split()) for unit in units), "heldout_units": cut}


PHASES = {"baseline-imports": phase_baseline_imports, "dense-train-loop": phase_dense_train_loop,
          "splade-train-loop": phase_splade_train_loop, "mine-negatives": phase_mine_negatives,
          "clir-ranking-loop": phase_clir_ranking_loop, "dense-encode": phase_dense_encode,
          "dense-search": phase_dense_search, "splade-encode": phase_splade_encode,
          "splade-search": phase_splade_search, "mlm-blocks": phase_mlm_blocks,
          "pretraining-pieces": phase_pretraining_pieces, "language-corpus": phase_language_corpus}
BEFORE = {"before-negative-pools": phase_before_negative_pools, "before-dense-encode": phase_before_dense_encode,
          "before-dense-search": phase_before_dense_search, "before-mlm": phase_before_mlm,
          "before-pretraining-pieces": phase_before_pretraining_pieces,
          "before-language-corpus": phase_before_language_corpus}
AFTER_OF = {"before-negative-pools": "splade-train-loop", "before-dense-encode": "dense-encode",
            "before-dense-search": "dense-search", "before-mlm": "mlm-blocks",
            "before-pretraining-pieces": "pretraining-pieces", "before-language-corpus": "language-corpus"}


def child(name: str, ctx: dict, result: Path) -> None:
    """Run one phase in this process and write what it reports, with this process's and its children's peaks."""
    marks, watch = Marks(), ChildWatch()
    started = time.time()
    facts = {**PHASES, **BEFORE}[name](ctx, marks)
    result.write_text(json.dumps({
        **facts, "phase_seconds": round(time.time() - started, 1),
        "self_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "child_process_peaks_mb": watch.stop(), "rss_marks_mb": dict(marks)}))


def measure(name: str, ctx: dict) -> dict:
    """Run one phase in a child process: its wall time, peak RSS (wait4) and what it reports; the error (the tail of
    its log) when it fails."""
    root = Path(ctx["root"])
    (root / "logs").mkdir(exist_ok=True)
    (root / "tmp").mkdir(exist_ok=True)
    result, log = root / "logs" / f"{name}.json", root / "logs" / f"{name}.log"
    result.unlink(missing_ok=True)
    env = {**os.environ, "TMPDIR": str((root / "tmp").resolve()), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "true",
           # the JVM's performance-data file and temporary files under results/, not /tmp
           "JAVA_TOOL_OPTIONS": f"-XX:-UsePerfData -Djava.io.tmpdir={(root / 'tmp').resolve()}"
                                f"{' -Xmx' + ctx['java_heap'] if ctx.get('java_heap') else ''}"}
    load = os.getloadavg()[0]
    started = time.time()
    with open(log, "w") as errors:
        process = subprocess.Popen([sys.executable, __file__, "--phase", name, "--context", json.dumps(ctx),
                                    "--result", str(result)], stdout=errors, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(process.pid, 0)
    measured = {"phase": name, "seconds": round(time.time() - started, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024),
                "load_average_at_start": round(load, 1)}
    if status or not result.exists():
        tail = log.read_text(errors="replace").strip().splitlines()[-15:]
        return {**measured, "error": f"exit status {os.waitstatus_to_exitcode(status)}", "log_tail": tail}
    return {**measured, **json.loads(result.read_text())}


# ---------------------------------------------------------------------------------------------------------------
# extrapolation


GROWS_WITH = {"mlm-blocks": "wiki_tokens", "before-mlm": "wiki_tokens", "language-corpus": "wiki_tokens",
              "before-language-corpus": "wiki_tokens", "splade-encode": "splade_docs",
              "pretraining-pieces": "pieces_docs", "before-pretraining-pieces": "pieces_docs"}   # else: scale
AT_PAPER = {"scale": 1.0, "wiki_tokens": PAPER["wiki_tokens"], "splade_docs": shape.SHAPE["docs"],
            "pieces_docs": shape.SHAPE["docs"]}


def extrapolate(runs: dict) -> dict:
    """Each phase's two-point linear fit of peak RSS against the size its data grows with (``GROWS_WITH``),
    through the two largest sizes measured with the default JVM heap, evaluated at the papers' size and never
    below the largest measurement (a flat phase's slope is noise). A phase that starts Java is fitted on its Python
    process (``self_peak_rss_mb``): the JVM's resident memory follows its heap limit (1/4 of the RAM unless -Xmx
    says), not the data. Phases measured at one size only are left out."""
    points: dict[str, dict[float, tuple[int, dict]]] = {}
    for run in runs.values():
        if run.get("java_heap"):
            continue
        for phase in run["phases"]:
            if "error" in phase:
                continue
            variable = GROWS_WITH.get(phase["phase"], "scale")
            python = phase["self_peak_rss_mb"] if phase.get("child_process_peaks_mb") else phase["peak_rss_mb"]
            points.setdefault(phase["phase"], {})[float(run[variable])] = (python, phase.get("child_process_peaks_mb"))
    fits = {}
    for name, measured in points.items():
        if len(measured) < 2:
            continue
        (x0, (y0, _)), (x1, (y1, children)) = sorted(measured.items())[-2:]
        variable = GROWS_WITH.get(name, "scale")
        slope = (y1 - y0) / (x1 - x0)
        target = AT_PAPER[variable]
        fits[name] = {"grows_with": variable, "at": target, "mb_per_unit": round(slope, 9), "fitted_between": [x0, x1],
                      "python_peak_rss_mb" if children else "peak_rss_mb": max(y1, round(y1 + slope * (target - x1)))}
        if children:
            fits[name]["child_process_peaks_mb_measured"] = children
    return fits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.02, help="fraction of MS MARCO's counts (default 0.02)")
    parser.add_argument("--wiki-tokens", type=float, default=2e7, help="words of Wikipedia-shaped text (default 2e7)")
    parser.add_argument("--before", action="store_true", help="also measure the code before bounded memory")
    parser.add_argument("--splade-docs", type=int, default=5000,
                        help="SPLADE indexes this prefix of the corpus (|V|-wide vectors: ~40 documents/s here)")
    parser.add_argument("--pieces-docs", type=int, default=30000,
                        help="passages cut into Condenser blocks (pysbd: ~550 passages/s here)")
    parser.add_argument("--splade-logit-offset", type=float, default=-0.4,
                        help="added to the tiny model's MLM logits: -0.4 gives ~185 pieces a passage, ~120 a query "
                             "(0: all 30,522 of them, an untrained model's pathology, not the data path)")
    parser.add_argument("--java-heap", help="Anserini's JVM run with -Xmx this (e.g. 1g; default: the JVM's own, "
                                                "1/4 of the RAM); measured apart, under its own key")
    parser.add_argument("--phases", nargs="+", help="only these phases (default: all; before-* need --before)")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--context", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.root = OUT / f"scale-{args.scale:g}"
    if args.phase:
        child(args.phase, json.loads(args.context), args.result)
        return
    if args.prepare:
        args.result.write_text(json.dumps(prepare(args)))
        return
    started = time.time()
    # prepared in a child, so that this process stays small: a phase's process starts (vfork) with this one's
    # resident memory as its ru_maxrss
    args.root.mkdir(parents=True, exist_ok=True)
    prepared = args.root / "prepared.json"
    subprocess.run([sys.executable, __file__, "--prepare", "--result", str(prepared), *sys.argv[1:]], check=True)
    data = json.loads(prepared.read_text())
    data["prepare_seconds"] = round(time.time() - started, 1)
    data["measuring_process_rss_mb"] = rss_mb()
    print(json.dumps(data))
    ctx = {"root": str(args.root), "wiki": data["extra"]["wiki"]["path"], "logit_offset": args.splade_logit_offset,
           "pieces_docs": args.pieces_docs, "java_heap": args.java_heap}
    names = [*PHASES, *(BEFORE if args.before else [])]
    if args.phases:
        unknown = set(args.phases) - set(PHASES) - set(BEFORE)
        if unknown:
            parser.error(f"unknown phases {sorted(unknown)}: {', '.join([*PHASES, *BEFORE])}")
        names = [name for name in [*PHASES, *BEFORE] if name in args.phases]
    results = []
    for name in names:
        results.append(measure(name, ctx))
        print(json.dumps(results[-1]), flush=True)
    path = OUT / "measured.json"
    measured = json.loads(path.read_text()) if path.exists() else {}
    key = f"{args.scale:g}" + (f" java -Xmx{args.java_heap}" if args.java_heap else "")
    run = measured.setdefault("runs", {}).setdefault(key, {"phases": []})
    kept = [phase for phase in run["phases"] if phase["phase"] not in names]
    order = list({**PHASES, **BEFORE})
    run.update({"scale": args.scale, "wiki_tokens": args.wiki_tokens, "splade_docs": args.splade_docs,
                "pieces_docs": args.pieces_docs, "splade_logit_offset": args.splade_logit_offset,
                "java_default_heap": java_default_heap(), "java_heap": args.java_heap, "cpus": os.cpu_count(), **data,
                "phases": sorted(kept + results, key=lambda phase: order.index(phase["phase"]))})
    measured["note"] = NOTE
    measured["paper_shape"] = {**shape.SHAPE, "wiki_tokens": PAPER["wiki_tokens"]}
    measured["extrapolated"] = extrapolate(measured["runs"])
    path.write_text(json.dumps(measured, indent=1))
    print(f"{path}: {len(results)} phases at {key} ({round(time.time() - started)} s in all)")


if __name__ == "__main__":
    main()

"""One SPLADE retriever trained on a dataset's training queries (Adapters-SPLADE §4): FT, adapter, bi-adapter.

Each query trains with one relevant document and one BM25 negative (the paper's BM25 triplets; groups of
``peftir.training.passage_groups`` with two passages), scored against its own negative and the batch's other
positives (eq. 6; ``in_batch: false`` is the released branch's behaviour), plus L1 on queries and FLOPS on
documents with quadratically growing weights (``peftir.splade.losses``). AdamW at the method's learning rate,
linear warm-up then linear decay, weight decay on every trainable parameter (the released ``bert_optim``). Every
``validate_every`` updates the validation queries' BM25 top ``validation_depth`` are ranked by the retriever and
the training dataset's validation metric (MRR@10 on MS MARCO) is measured; the best state is kept (the released
code ranks a TAS-B subset of the collection instead).
Only what trains is saved: everything for FT, the adapters and MLM heads for the others.

Beside BM25 triplets: MarginMSE on a cross-encoder's scored documents (Table 2: the ``teacher`` run gives the
pairs and their scores), negatives from another retriever's run and a start from its weights (Table 5's rounds),
and ``none``, a trained SPLADE used as it comes (zero-shot: nothing trains, its empty state is saved).
"""
from __future__ import annotations

import random
import time
from typing import Mapping

import torch

from ..data import folds, trec
from ..data.run_index import Ranked, RunIndex
from ..execution.gradients import cached_gradient, chunks_of
from ..execution.passes import Encoder, Shape
from ..execution.seam import CPU, Execution
from ..models.learned import learned_state
from ..models.inputs import Collection
from .encoder import DOCUMENT, QUERY, Splade, masked_lm, offset_logits, parameter_counts, with_method
from .losses import splade_loss
from ..training.passage_groups import NegativePools, PassageGroups
from ..training.validated import load_kept, save_trained, train_validated


def build_splade(backbone: str, layers: int | None, method: dict, settings: dict,
                 execution: Execution = CPU) -> Splade:
    """The untrained SPLADE encoder of ``method`` on the backbone (a masked LM: its MLM head is SPLADE's, its
    logits offset by ``settings['logit_offset']``), placed by the job's ``execution``."""
    model, tokenizer = masked_lm(backbone, layers)
    offset_logits(model, settings["logit_offset"])
    return execution.place(with_method(model, tokenizer, method,
                                       {QUERY: settings["q_max_len"], DOCUMENT: settings["d_max_len"]}))


def load_splade(backbone: str, layers: int | None, method: dict, settings: dict, trained: str,
                execution: Execution = CPU) -> Splade:
    """A trained SPLADE encoder: the backbone with the method's modules, its learned parameters put back."""
    encoder = build_splade(backbone, layers, method, settings, execution)
    load_kept(encoder, trained)
    return encoder.eval()


def rank_candidates(encoder: Splade, topics: dict[str, str], candidates: dict[str, list[str]],
                    texts: dict[str, str], batch_size: int) -> trec.Run:
    """Each query's candidates scored by the encoder's dot product (a validation ranking)."""
    run: trec.Run = {}
    with torch.no_grad():
        for qid, docs in candidates.items():
            query = encoder.encode([topics[qid]], QUERY)
            scores = torch.cat([encoder.encode([texts[d] for d in docs[start:start + batch_size]], DOCUMENT) @ query.T
                                for start in range(0, len(docs), batch_size)]).squeeze(1)
            run[qid] = dict(zip(docs, scores.tolist()))
    return run


def train_splade(backbone: str, layers: int | None, method: dict, settings: dict, collection: Collection,
                 negatives: str, candidates: str, qids: list[str], valid_qids: list[str], seed: int,
                 execution: Execution, output: str, summary: str, teacher: str | None = None,
                 init: str | None = None) -> dict:
    """The ``train_splade`` rule: ``settings['steps']`` updates on the training queries ``qids``, each with a
    relevant document and a negative from the run ``negatives`` (BM25's; a SPLADE retriever's for domain
    adaptation's rounds; with a ``teacher``, its scored documents), validated by the dataset's validation metric on
    the validation queries' top ``candidates``; the best state to ``output``, the facts (losses, validation curve,
    parameter counts) to ``summary``. ``teacher``: a cross-encoder's scores as a run, for MarginMSE; ``init``: a
    trained retriever of the same method to start from (a second round); ``execution``: the job's device,
    precision and threads. A ``none`` method trains nothing: the backbone as it comes."""
    torch.manual_seed(seed)
    started = time.monotonic()
    encoder = build_splade(backbone, layers, method, settings, execution)
    if init is not None:
        load_kept(encoder, init)
    qrels = trec.read_qrels(collection.qrels)
    relevant = {qid: trec.relevant(qrels, qid) for qid in qids}
    scores = None
    if teacher:             # MarginMSE: positives the teacher scored, its scores read per batch from its run

        def scored(qid: str, documents: Ranked) -> None:
            ranked = {doc for doc, _ in documents}
            relevant[qid] = [d for d in relevant[qid] if d in ranked]

        scores = RunIndex(teacher, set(qids), visit=scored)
        relevant = {qid: docs if qid in scores else [] for qid, docs in relevant.items()}
    groups = None if method["name"] == "none" else PassageGroups(
        relevant, NegativePools([negatives], qrels, qids, settings["negative_depth"]), 2, seed)
    trained = {"losses": [], "validation": [], "best": {"state": learned_state(encoder), "step": 0}}
    if groups is not None:
        trained = _train(encoder, groups, method, settings, collection, candidates, valid_qids, qrels, scores,
                         execution)
    about = {"method": method, "backbone": backbone, "seed": seed,
             "training_queries": 0 if groups is None else len(groups.qids), "validation_queries": len(valid_qids)}
    return save_trained(encoder, trained, output, summary, about, parameter_counts(encoder), started)


def _train(encoder: Splade, groups: PassageGroups, method: dict, settings: dict, collection: Collection,
           candidates: str, valid_qids: list[str], qrels: trec.Qrels, scores: RunIndex | None,
           execution: Execution) -> dict:
    """The updates with validation (``peftir.training.validated``): losses, curve and the best state. The FLOPS
    and in-batch terms couple the batch's texts, so when a side of the batch does not fit one pass (the execution's
    decision for ``settings['chunk']``) an update is a gradient cache over that many texts at a time
    (``peftir.execution.gradients``)."""
    batches = groups.batches(settings["batch_size"])
    rows = execution.rows_per_pass("train", settings["chunk"], settings["batch_size"],
                                   Encoder.of(encoder.model.config, encoder),
                                   Shape(max(settings["q_max_len"], settings["d_max_len"]), True, heads=1))
    topics = trec.read_topics(collection.queries)
    validation = {qid: list(docs) for qid, docs in
                  trec.read_run(candidates, set(valid_qids), settings["validation_depth"]).items()}
    with collection.store() as store:
        valid_texts = store.texts(sorted({d for docs in validation.values() for d in docs}))

        def update(step: int) -> torch.Tensor:
            batch = next(batches)
            texts = store.texts([doc for _, passages in batch for doc in passages])
            sides = [(QUERY, [topics[qid] for qid, _ in batch])] + [
                (DOCUMENT, [texts[passages[i]] for _, passages in batch]) for i in (0, 1)]
            chunks = [(side, role, items[part]) for side, (role, items) in enumerate(sides)
                      for part in chunks_of(len(items), rows)]
            teacher = None
            if scores is not None:
                scored = [dict(scores.top(qid)) for qid, _ in batch]
                teacher = execution.inputs(tuple(torch.tensor([found[passages[i]] for found, (_, passages)
                                                               in zip(scored, batch)]) for i in (0, 1)))

            def loss(representations: list[torch.Tensor]) -> torch.Tensor:
                queries, positives, negatives = (torch.cat([r for (side, _, _), r in zip(chunks, representations)
                                                            if side == wanted]) for wanted in (0, 1, 2))
                return splade_loss(queries, positives, negatives, step + 1, settings["regularisation"],
                                   settings["in_batch_negatives"], teacher)["loss"]

            return cached_gradient(execution, chunks, lambda chunk: (0.0, encoder.encode(chunk[2], chunk[1])), loss,
                                   cache=len(chunks) > len(sides))

        return train_validated(encoder, update,
                               lambda: rank_candidates(encoder, topics, validation, valid_texts,
                                                       settings["batch_size"]),
                               qrels, valid_qids, method["lr"], settings)


def validation_queries(folds_path: str, fold: str, limit: int | None, seed: int) -> list[str]:
    """The fold's validation queries, or a seeded sample of ``limit`` of them (MS MARCO's dev split is large; the
    released code validates on a subset too)."""
    qids = folds.rotation(folds.read_folds(folds_path), fold)["valid"]
    return sorted(random.Random(seed).sample(qids, limit)) if limit and limit < len(qids) else qids


def train_fold_splade(spec: dict, inputs: Mapping[str, str], fold: str, seed: int, threads: int, output: str,
                      summary: str) -> dict:
    """The ``train_splade`` rule: the retriever ``spec`` (the ``splade`` param: backbone, layers, method, training
    settings) on the fold's training queries, validated on its validation queries. ``inputs`` (the job's, by
    name): the collection's files, ``bm25`` (validation candidates, and negatives unless ``negatives`` names
    another run), ``teacher`` (MarginMSE), ``init`` (a first round's retriever), ``backbone`` (the checkpoint
    when the workflow made it: a pretraining run, or the backbone with its MLM head fitted)."""
    collection = Collection.of(dict(inputs))
    qids = folds.rotation(folds.read_folds(collection.folds), fold)["train"]
    valid = validation_queries(collection.folds, fold, spec["train"]["validation_queries"], seed)
    negatives = inputs.get("teacher") or inputs.get("negatives") or inputs["bm25"]
    return train_splade(inputs.get("backbone") or spec["backbone"], spec["layers"], spec["method"], spec["train"],
                        collection, negatives, inputs["bm25"], qids, valid, seed,
                        Execution.of(spec["execution"], threads), output, summary, teacher=inputs.get("teacher"),
                        init=inputs.get("init"))

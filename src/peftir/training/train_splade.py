"""One SPLADE retriever trained on a dataset's training queries (Adapters-SPLADE §4): FT, adapter, bi-adapter.

Each query trains with one relevant document and one BM25 negative (the paper's BM25 triplets; groups of
``peftir.training.passage_groups`` with two passages), scored against its own negative and the batch's other
positives (eq. 6; ``in_batch: false`` is the released branch's behaviour), plus L1 on queries and FLOPS on
documents with quadratically growing weights (``peftir.sparse.losses``). AdamW at the method's learning rate,
linear warm-up then linear decay, weight decay on every trainable parameter (the released ``bert_optim``). Every
``validate_every`` updates the validation queries' BM25 top ``validation_depth`` are ranked by the retriever and
MRR@10 is measured; the best state is kept (the released code ranks a TAS-B subset of the collection instead).
Only what trains is saved: everything for FT, the adapters and MLM heads for the others.
"""
from __future__ import annotations

import time

import torch

from ..data import trec
from ..evaluation.metrics import evaluate_run
from ..files import atomic_directory, write_json
from ..methods.learned import learned_state, load_learned_state
from ..rankers.inputs import Collection
from ..rankers.pretrained import resolve
from ..sparse.encoder import DOCUMENT, QUERY, Splade, masked_lm, offset_logits, parameter_counts, with_method
from ..sparse.losses import splade_loss
from .passage_groups import PassageGroups
from .steps import train_updates
from .train_retriever import negative_pools

WEIGHTS = "learned.pt"      # in a trained retriever's directory: its learned parameters
VALIDATION_METRIC = "RR@10"


def build_splade(backbone: str, layers: int | None, method: dict, settings: dict) -> Splade:
    """The untrained SPLADE encoder of ``method`` on the backbone (a masked LM: its MLM head is SPLADE's, its
    logits offset by ``settings['logit_offset']``)."""
    model, tokenizer = masked_lm(resolve(backbone), layers)
    offset_logits(model, settings["logit_offset"])
    return with_method(model, tokenizer, method, {QUERY: settings["q_max_len"], DOCUMENT: settings["d_max_len"]})


def load_splade(backbone: str, layers: int | None, method: dict, settings: dict, trained: str) -> Splade:
    """A trained SPLADE encoder: the backbone with the method's modules, its learned parameters put back."""
    encoder = build_splade(backbone, layers, method, settings)
    load_learned_state(encoder, torch.load(f"{trained}/{WEIGHTS}", map_location="cpu", weights_only=True))
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
                 bm25_run: str, qids: list[str], valid_qids: list[str], seed: int, threads: int, output: str,
                 summary: str) -> dict:
    """The ``train_splade`` rule: ``settings['steps']`` updates on the training queries ``qids``; the best state
    by validation MRR@10 to ``output`` and the facts (losses, validation curve, parameter counts) to ``summary``."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    started = time.monotonic()
    encoder = build_splade(backbone, layers, method, settings)
    qrels = trec.read_qrels(collection.qrels)
    groups = PassageGroups({qid: [d for d, rel in qrels.get(qid, {}).items() if rel > 0] for qid in qids},
                           negative_pools([bm25_run], qrels, qids, settings["negative_depth"]), 2, seed)
    batches = groups.batches(settings["batch_size"])
    topics = trec.read_topics(collection.queries)
    validation = {qid: list(docs) for qid, docs in
                  trec.read_run(bm25_run, set(valid_qids), settings["validation_depth"]).items()}
    steps, every = settings["steps"], settings["validate_every"]
    curve: list[dict] = []
    best: dict = {"state": learned_state(encoder), "step": 0, VALIDATION_METRIC: None}
    with collection.store() as store:
        valid_texts = store.texts(sorted({d for docs in validation.values() for d in docs}))

        def update(step: int) -> float:
            batch = next(batches)
            texts = store.texts([doc for _, passages in batch for doc in passages])
            queries = encoder.encode([topics[qid] for qid, _ in batch], QUERY)
            positives = encoder.encode([texts[passages[0]] for _, passages in batch], DOCUMENT)
            negatives = encoder.encode([texts[passages[1]] for _, passages in batch], DOCUMENT)
            parts = splade_loss(queries, positives, negatives, step + 1, settings["regularisation"],
                                settings["in_batch_negatives"])
            parts["loss"].backward()
            return float(parts["loss"].detach())

        def validate(step: int) -> None:
            if step % every and step != steps:
                return
            encoder.eval()
            ranked = rank_candidates(encoder, topics, validation, valid_texts, settings["batch_size"])
            per_query = evaluate_run(ranked, qrels, [VALIDATION_METRIC], valid_qids)
            score = sum(v[VALIDATION_METRIC] for v in per_query.values()) / max(1, len(per_query))
            curve.append({"step": step, VALIDATION_METRIC: score})
            print(f"step {step}: validation {VALIDATION_METRIC} {score:.4f}", flush=True)
            if best[VALIDATION_METRIC] is None or score > best[VALIDATION_METRIC]:
                best.update(state=learned_state(encoder), step=step, **{VALIDATION_METRIC: score})
            encoder.train()

        losses = train_updates(encoder, update, steps, method["lr"], settings["warmup_steps"],
                               settings["weight_decay"], log_every=max(1, steps // 10), no_decay=(),
                               after=validate)
    with atomic_directory(output) as building:
        torch.save(best["state"], building / WEIGHTS)
    facts = {"method": method, "backbone": backbone, "seed": seed, "training_queries": len(groups.qids),
             "validation_queries": len(valid_qids), "parameters": parameter_counts(encoder), "losses": losses,
             "validation": curve, "best_step": best["step"], "seconds": round(time.monotonic() - started, 1)}
    write_json(summary, facts)
    return facts

"""One dense retriever trained on a dataset's training queries: full fine-tuning (FT) or deep prompt tuning (DPT).

The retriever (``peftir.retrieval.dense_retriever``) starts from a backbone checkpoint (the plain one, or one
the pipeline pretrained: Condenser, coCondenser, RIP) and trains on groups of one relevant document and
``passages − 1`` negatives per query (``peftir.training.passage_groups``), the negatives taken from the top
``negative_depth`` of one or more runs (BM25's; for UNM also a first-round retriever's) minus the judged
relevant. Schedule as Tevatron and DPTDR: AdamW, linear warm-up over ``warmup_ratio`` of the steps, then linear
decay; no weight decay unless configured. FT saves the whole encoder; DPT saves only its prompts (peft), which
``load_retriever`` puts back on the frozen backbone.
"""
from __future__ import annotations

import time

import torch
from peft import PeftModel

from ..data import trec
from ..files import atomic_directory, write_json
from ..methods.deep_prompt import deep_prompts, prompt_values, trainable
from ..rankers import backbone as backbones
from ..rankers.inputs import Collection
from ..retrieval.dense_retriever import PASSAGE, QUERY, DenseRetriever, contrastive_loss
from .passage_groups import PassageGroups
from .steps import train_steps

METHODS = ("ft", "dpt")


def negative_pools(runs: list[str], qrels: trec.Qrels, qids: list[str], depth: int) -> dict[str, list[str]]:
    """Each query's negatives: the union of the runs' top ``depth`` documents that are not judged relevant."""
    pools: dict[str, set[str]] = {qid: set() for qid in qids}
    for path in runs:
        for qid, docs in trec.read_run(path, set(qids), depth).items():
            pools[qid] |= {doc for doc in docs if qrels.get(qid, {}).get(doc, 0) <= 0}
    return {qid: sorted(pool) for qid, pool in pools.items()}


def build_retriever(backbone: str, layers: int | None, method: dict, settings: dict) -> DenseRetriever:
    """The untrained retriever of ``method``: the backbone whole (FT) or frozen under fresh deep prompts (DPT)."""
    if method["name"] not in METHODS:
        raise ValueError(f"retriever method {method['name']!r}: one of {', '.join(METHODS)}")
    loaded = backbones.load(backbone, layers)
    encoder = loaded.model
    if method["name"] == "dpt":
        encoder = deep_prompts(encoder, method["length"], method["reparametrise"], method["mlp_hidden"],
                               method["dropout"])
    return DenseRetriever(encoder, loaded.tokenizer, settings["q_max_len"], settings["p_max_len"])


def load_retriever(backbone: str, layers: int | None, method: dict, settings: dict, trained: str) -> DenseRetriever:
    """A trained retriever from its directory (FT: the encoder; DPT: the prompts on the frozen backbone)."""
    loaded = backbones.load(trained if method["name"] == "ft" else backbone, layers)
    encoder = loaded.model
    if method["name"] == "dpt":
        encoder = PeftModel.from_pretrained(encoder, trained)
    return DenseRetriever(encoder, loaded.tokenizer, settings["q_max_len"], settings["p_max_len"]).eval()


def train_retriever(backbone: str, layers: int | None, method: dict, settings: dict, collection: Collection,
                    negatives: list[str], qids: list[str], seed: int, threads: int, output: str, summary: str) -> dict:
    """The ``train_retriever`` rule: ``settings['steps']`` updates on the training queries ``qids``; the trained
    retriever to ``output`` and its facts (losses, trainable parameters, seconds) to ``summary``."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    started = time.monotonic()
    retriever = build_retriever(backbone, layers, method, settings)
    qrels = trec.read_qrels(collection.qrels)
    groups = PassageGroups({qid: [d for d, rel in qrels.get(qid, {}).items() if rel > 0] for qid in qids},
                           negative_pools(negatives, qrels, qids, settings["negative_depth"]),
                           settings["passages"], seed)
    batches = groups.batches(settings["batch_size"])
    topics = trec.read_topics(collection.queries, set(groups.qids))
    steps = settings["steps"]
    with collection.store() as store:
        def loss_of(step: int) -> torch.Tensor:
            batch = next(batches)
            docs = [doc for _, passages in batch for doc in passages]
            texts = store.texts(docs)
            return contrastive_loss(retriever.encode([topics[qid] for qid, _ in batch], QUERY),
                                    retriever.encode([texts[doc] for doc in docs], PASSAGE))

        losses = train_steps(retriever, loss_of, steps, method["lr"], round(settings["warmup_ratio"] * steps),
                             settings["weight_decay"], log_every=max(1, steps // 10))
    with atomic_directory(output) as building:
        retriever.encoder.save_pretrained(building)
        if method["name"] == "ft":
            retriever.tokenizer.save_pretrained(building)
    encoder = retriever.encoder
    facts = {"method": method, "backbone": backbone, "seed": seed, "training_queries": len(groups.qids),
             "trainable_parameters": trainable(encoder),        # DPT with reparametrisation: its MLP too
             "kept_parameters": prompt_values(encoder) if method["name"] == "dpt" else trainable(encoder),
             "encoder_parameters": sum(p.numel() for p in encoder.parameters()),
             "losses": losses, "seconds": round(time.monotonic() - started, 1)}
    write_json(summary, facts)
    return facts


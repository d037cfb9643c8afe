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

import random
import time
from typing import Callable, Mapping

import torch
from peft import PeftModel
from torch import Tensor
from transformers import AutoModel, AutoTokenizer, PreTrainedModel

from ..data import folds, trec
from ..execution import audit
from ..execution.gradients import cached_gradient, chunks_of
from ..execution.passes import Configured, Encoder, Shape
from ..execution.seam import CPU, Execution
from ..files import atomic_directory, write_json
from .deep_prompt import deep_prompts, prompt_length, prompt_values, trainable
from ..contract.backbones import resolve
from ..models.inputs import Collection
from ..retrieval.dense_retriever import PASSAGE, QUERY, DenseRetriever, contrastive_loss
from ..training.passage_groups import NegativePools, PassageGroups
from ..training.steps import train_updates

METHODS = ("ft", "dpt")


def training_queries(folds_path: str, fold: str, limit: int | None = None, seed: int = 0) -> list[str]:
    """A retriever's training queries: a cross-validated fold's training and validation queries (a retriever
    selects no checkpoint, so none is held back), or a pre-split collection's training split; ``limit``: a
    seeded sample of them (low-data training, Condenser Table 5)."""
    doc = folds.read_folds(folds_path)
    split = folds.rotation(doc, fold)
    qids = split["train"] if "splits" in doc else split["train"] + split["valid"]
    return sorted(random.Random(seed).sample(qids, limit)) if limit and limit < len(qids) else qids


def build_retriever(backbone: str, layers: int | None, method: dict, settings: dict,
                    execution: Execution = CPU, prompts: str | None = None) -> DenseRetriever:
    """The untrained retriever of ``method``: the backbone whole (FT) or frozen under deep prompts (DPT): fresh
    ones, or those a prompt-pretraining run saved to ``prompts`` where the method names that run
    (``method['prompts']``, DPTDR Table 6); placed by the job's ``execution``."""
    if method["name"] not in METHODS:
        raise ValueError(f"retriever method {method['name']!r}: one of {', '.join(METHODS)}")
    if bool(method.get("prompts")) != bool(prompts):
        raise ValueError(f"retriever method names pretrained prompts {method.get('prompts')!r}, given {prompts!r}")
    encoder, tokenizer = encoder_of(backbone, layers)
    if method["name"] == "dpt":
        encoder = deep_prompts(encoder, method["length"], method["reparametrise"], method["mlp_hidden"],
                               method["dropout"], start=prompts)
    return execution.place(DenseRetriever(encoder, tokenizer, settings["q_max_len"], settings["p_max_len"]))


def encoder_of(name: str, layers: int | None) -> tuple[PreTrainedModel, object]:
    """A backbone's encoder without pooler (BERT, RoBERTa: ``AutoModel``), its lowest ``layers`` layers when
    given, and its tokenizer."""
    path = resolve(name)
    kwargs = {"num_hidden_layers": layers} if layers else {}
    return AutoModel.from_pretrained(path, add_pooling_layer=False, **kwargs), AutoTokenizer.from_pretrained(path)


def load_retriever(backbone: str, layers: int | None, method: dict, settings: dict, trained: str,
                   execution: Execution = CPU) -> DenseRetriever:
    """A trained retriever from its directory (FT: the encoder; DPT: the prompts on the frozen backbone), placed
    by the job's ``execution``."""
    encoder, tokenizer = encoder_of(trained if method["name"] == "ft" else backbone, layers)
    if method["name"] == "dpt":
        encoder = PeftModel.from_pretrained(encoder, trained)
    return execution.place(DenseRetriever(encoder, tokenizer, settings["q_max_len"], settings["p_max_len"])).eval()


def retriever_update(retriever: DenseRetriever, execution: Execution, topics: dict[str, str],
                     texts: Callable[[list[str]], dict[str, str]], chunk: Configured,
                     passages: int) -> Callable[[list], Tensor]:
    """One update's backward passes on a batch of passage groups (``passages``: the passages of a batch): the
    contrastive loss over every passage of the batch (in-batch negatives), through a gradient cache when the
    batch's queries or passages do not fit in one pass (64 × 30 RoBERTa-large passages), each pass as many texts
    as the execution decides for ``chunk`` (``auto`` or a number, recorded as ``train``); returns the loss."""
    tokens = retriever.max_len[PASSAGE] + prompt_length(retriever.encoder)     # deep prompts: keys and values too
    chunk = execution.rows_per_pass("train", chunk, passages, Encoder.of(retriever.encoder.config, retriever),
                                    Shape(tokens, True))

    def update(batch: list) -> Tensor:
        docs = [doc for _, passages in batch for doc in passages]
        found = texts(docs)
        sides = [(QUERY, [topics[qid] for qid, _ in batch]), (PASSAGE, [found[doc] for doc in docs])]
        chunks = [(role, rows[part]) for role, rows in sides for part in chunks_of(len(rows), chunk)]

        def loss(representations: list[torch.Tensor]) -> torch.Tensor:
            queries = [r for (role, _), r in zip(chunks, representations) if role == QUERY]
            passages = [r for (role, _), r in zip(chunks, representations) if role == PASSAGE]
            return contrastive_loss(torch.cat(queries), torch.cat(passages))

        return cached_gradient(execution, chunks, lambda part: (0.0, retriever.encode(part[1], part[0])), loss,
                               cache=len(chunks) > len(sides))

    return update


def training_groups(qrels: trec.Qrels, qids: list[str], negatives: list[str], settings: dict,
                    seed: int) -> PassageGroups:
    """Each training query's positives (judged at least ``positive_grade``) and negative pool: the top
    ``negative_depth`` of BM25's run, all of a mined pool, or with ``judged_negatives`` the judged non-relevant
    documents (DPR's answer-free BM25 negatives; BM25's unjudged candidates may hold the answer)."""
    bm25 = settings.get("negatives", "bm25") == "bm25"
    pools: Mapping[str, list[str]]
    if settings.get("judged_negatives") and bm25:
        pools = {qid: found for qid in qids if (found := trec.judged_non_relevant(qrels, qid))}
    else:
        pools = NegativePools(negatives, qrels, qids, settings["negative_depth"] if bm25 else None)
    return PassageGroups({qid: trec.relevant(qrels, qid, settings.get("positive_grade", 1)) for qid in qids},
                         pools, settings["passages"], seed)


def train_retriever(backbone: str, layers: int | None, method: dict, settings: dict, collection: Collection,
                    negatives: list[str], qids: list[str], seed: int, execution: Execution, output: str,
                    summary: str, prompts: str | None = None) -> dict:
    """The ``train_retriever`` rule: ``settings['steps']`` updates on the training queries ``qids``, negatives
    from the top ``negative_depth`` of the runs ``negatives`` (BM25's), or all of a mined pool
    (``settings['negatives']`` mined or denoised; ``training_groups``); the trained retriever to ``output`` and its
    facts (losses, trainable parameters, seconds, where it ran) to ``summary``; a DPT retriever starts from the
    pretrained prompts in ``prompts`` where its method names them."""
    torch.manual_seed(seed)
    started = time.monotonic()
    retriever = build_retriever(backbone, layers, method, settings, execution, prompts)
    groups = training_groups(trec.read_qrels(collection.qrels), qids, negatives, settings, seed)
    batches = groups.batches(settings["batch_size"])
    topics = trec.read_topics(collection.queries, set(groups.qids))
    steps = settings["steps"]
    with collection.store() as store:
        update = retriever_update(retriever, execution, topics, store.texts, settings["chunk"],
                                  settings["batch_size"] * settings["passages"])
        losses = train_updates(retriever, lambda step: update(next(batches)), steps, method["lr"],
                               round(settings["warmup_ratio"] * steps), settings["weight_decay"],
                               log_every=max(1, steps // 10), max_grad_norm=settings["max_grad_norm"])
    with atomic_directory(output) as building, audit.bookkeeping():   # peft runs its prompt encoder to save
        retriever.encoder.save_pretrained(building)
        if method["name"] == "ft":
            retriever.tokenizer.save_pretrained(building)
    encoder = retriever.encoder
    facts = {"method": method, "backbone": backbone, "seed": seed, "training_queries": len(groups.qids),
             "trainable_parameters": trainable(encoder),        # DPT with reparametrisation: its MLP too
             "kept_parameters": prompt_values(encoder) if method["name"] == "dpt" else trainable(encoder),
             "encoder_parameters": sum(p.numel() for p in encoder.parameters()),
             "losses": losses, "seconds": round(time.monotonic() - started, 1), "execution": execution.used()}
    write_json(summary, facts)
    return facts


def train_fold_retriever(spec: dict, collection: Collection, negatives: str, fold: str, seed: int, threads: int,
                         output: str, summary: str, backbone: str | None = None, prompts: str | None = None) -> dict:
    """The ``train_retriever`` rule: the retriever ``spec`` (the ``retriever`` param: backbone, layers, method,
    training settings) on the fold's training queries (a seeded sample of them for a low-data method), from the
    checkpoint ``backbone`` when the workflow made it (a pretraining run), else the named backbone; under the
    pretrained ``prompts`` where the method names a prompt-pretraining run."""
    qids = training_queries(collection.folds, fold, spec["method"].get("train_queries"), seed)
    return train_retriever(backbone or spec["backbone"], spec["layers"], spec["method"], spec["train"], collection,
                           [negatives], qids, seed, Execution.of(spec["execution"], threads), output, summary, prompts)

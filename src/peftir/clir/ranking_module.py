"""Ranking modules trained on source-language (English) relevance data with binary cross-entropy on one logit.

One job per module kind × reduction factor × seed, the ``ranking_adapter`` rule's:

- ``adapter`` (RA): a Pfeiffer adapter stacked on the frozen source-language adapter, ``Stack(la_en, ra)``;
- ``sftm`` (RM): a ranking mask by lottery-ticket sparse fine-tuning of the encoder with the source-language
  mask applied (θ0 = encoder + LM_en), K = the RA's size at the same reduction factor; the head dense;
- ``full``: monoBERT, every parameter of the encoder fine-tuned (the paper's baseline), no language module.

Training instances follow the authors' cross-encoder recipe: every ``negatives + 1``-th instance is a
(query, relevant document, 1) pair, the others (query, non-relevant candidate, 0), so positives:negatives
= 1:4 with the paper's value. Queries and documents come from the exported collection and its BM25 run.
"""
from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Iterator

import torch
from adapters.composition import Stack
from torch import Tensor, nn

from ..data import trec
from ..data.run_index import Ranked, RunIndex
from ..execution.gradients import accumulate, split
from ..execution.passes import Encoder, Shape
from ..execution.seam import Execution, Spec
from ..files import atomic_directory, write_json
from . import modular
from .sparse_fine_tuning import WEIGHT_DECAY as SFT_WEIGHT_DECAY, SparseFineTuning, lottery_ticket_sft
from .language_module import SFTM_FILE
from ..models.inputs import Collection
from ..training.steps import train_updates

FULL_MODEL_FILE = "model.pt"
Instance = tuple[str, str, float]


def relevance_instances(collection: Collection, candidates: str, depth: int, negatives: int,
                        seed: int) -> Iterator[Instance]:
    """(query text, document text, label) forever, 1 positive then ``negatives`` negatives, queries drawn at
    random among those with a relevant document and a non-relevant candidate; a query's candidates are read from
    the run when it is drawn (MS MARCO's 503 k training queries × depth 100 are never held)."""
    qrels = trec.read_qrels(collection.qrels)

    def relevant(qid: str) -> list[str]:
        return trec.relevant(qrels, qid)

    def other(qid: str, documents: Ranked) -> list[str]:
        return trec.not_relevant(qrels, qid, (d for d, _ in documents[:depth]))

    usable: list[str] = []
    run = RunIndex(candidates, visit=lambda qid, documents: usable.append(qid)
                   if relevant(qid) and other(qid, documents) else None)
    if not usable:
        raise ValueError(f"{collection.qrels}: no query has a relevant document and a non-relevant candidate in "
                         f"{candidates}")
    qids, rng = sorted(usable), random.Random(seed)
    topics = trec.read_topics(collection.queries, set(qids))
    with collection.store() as store:
        count = 0
        while True:
            qid = rng.choice(qids)
            positive = count % (negatives + 1) == 0
            doc = rng.choice(relevant(qid) if positive else other(qid, run.top(qid)))
            yield topics[qid], store.texts([doc])[doc], float(positive)
            count += 1


def ranking_loss(model: nn.Module, tokenizer, batch: list[Instance], max_len: int, execution: Execution) -> Tensor:
    """Binary cross-entropy of the model's one logit (the head in fp32: ``modular.ranking_logits``) against each
    instance's label."""
    encoded = execution.inputs(tokenizer([q for q, _, _ in batch], [d for _, d, _ in batch],
                                         truncation="longest_first", max_length=max_len, padding=True,
                                         return_tensors="pt"))
    logits = modular.ranking_logits(model, encoded, execution)
    labels = execution.inputs(torch.tensor([label for _, _, label in batch]))
    return nn.functional.binary_cross_entropy_with_logits(logits, labels)


def _ranking_adapter(model: nn.Module, language_module: str, source_language: str, settings: dict,
                     reduction_factor: int) -> None:
    language = model.load_adapter(language_module, load_as=modular.language_adapter_name(source_language),
                                  with_head=False)
    model.add_adapter(modular.RANKING_ADAPTER, config=modular.ranking_adapter_config(
        reduction_factor, settings["non_linearity"]))
    modular.add_ranking_head(model, settings["head_pooler"])
    model.train_adapter(modular.RANKING_ADAPTER)
    model.set_active_adapters(Stack(language, modular.RANKING_ADAPTER))   # after train_adapter, which resets it


def train_ranking_module(backbone: str, language_module: str | None, source_language: str, kind: str,
                         reduction_factor: int, settings: dict, collection: Collection, candidates: str, seed: int,
                         execution: Spec, threads: int, output: str, summary: str) -> dict:
    """One ranking module (module docstring), where ``execution`` says, written to the directory ``output``
    (an AdapterHub adapter with its head, ``sftm.pt``, or monoBERT's ``model.pt``), and its ``summary``. A batch's
    instances are independent, so its gradient accumulates over as many of them a pass as the execution decides for
    ``settings['chunk']`` (``auto`` or a number)."""
    execution = Execution.of(execution, threads)
    torch.manual_seed(seed)
    model, tokenizer = modular.load_encoder(backbone, with_mlm_head=False, pooler=settings["head_pooler"])
    instances = relevance_instances(collection, candidates, settings["train_depth"], settings["negatives"], seed)

    def train(steps: int, weight_decay: float = settings["weight_decay"]) -> list[float]:
        rows = execution.rows_per_pass("train", settings["chunk"], settings["batch_size"],
                                       Encoder.of(model.config, model), Shape(settings["max_len"], True))

        def update(step: int) -> Tensor:
            batch = [next(instances) for _ in range(settings["batch_size"])]
            return accumulate(split(batch, rows),
                              lambda part: ranking_loss(model, tokenizer, part, settings["max_len"], execution))

        return train_updates(model, update, steps, settings["lr"], settings["warmup"], weight_decay,
                             log_every=max(1, steps // 10), max_grad_norm=settings["max_grad_norm"],
                             execution=execution)

    started = time.monotonic()
    facts: dict = {"kind": kind, "reduction_factor": reduction_factor, "seed": seed,
                   "source_language": source_language}
    if kind == "adapter":
        _ranking_adapter(model, language_module, source_language, settings, reduction_factor)
        execution.place(model)
        facts["trainable_parameters"] = modular.trainable_parameters(model)
        facts["module_parameters"] = modular.adapter_parameters(model, modular.RANKING_ADAPTER)
        facts["losses"] = train(settings["steps"])
        with atomic_directory(output) as building:
            model.save_adapter(str(building), modular.RANKING_ADAPTER, with_head=True)
    elif kind == "sftm":
        SparseFineTuning.load(Path(language_module) / SFTM_FILE).apply(model, with_abs=False)
        modular.add_ranking_head(model, settings["head_pooler"])
        execution.place(model)
        maskable = modular.encoder_parameter_names(model, freeze_layer_norm=False)
        dense = [f"heads.{modular.RANKING_HEAD}.{n}" for n, _ in model.heads[modular.RANKING_HEAD].named_parameters()]
        modular.freeze_all_but(model, set(maskable + dense))
        k = modular.adapter_size(model, modular.ranking_adapter_config(reduction_factor, settings["non_linearity"]))
        phases = settings["phase_steps"]
        sft, facts["sft"] = lottery_ticket_sft(model, maskable, dense, k,
                                               lambda phase, _: train(phases[phase - 1], SFT_WEIGHT_DECAY))
        facts["sft"]["weight_decay"] = SFT_WEIGHT_DECAY
        facts["module_parameters"] = k
        facts["trainable_parameters"] = k + modular.head_parameters(model, modular.RANKING_HEAD)
        with atomic_directory(output) as building:
            sft.save(Path(building) / SFTM_FILE)
    else:
        modular.add_ranking_head(model, settings["head_pooler"])
        execution.place(model)
        facts["trainable_parameters"] = facts["module_parameters"] = modular.trainable_parameters(model)
        facts["losses"] = train(settings["steps"])
        with atomic_directory(output) as building:
            torch.save(model.state_dict(), Path(building) / FULL_MODEL_FILE)
    facts["seconds"] = round(time.monotonic() - started, 1)
    facts["execution"] = execution.used()
    write_json(summary, facts)
    return facts

"""Fitting the multilingual backbone's MLM head on text, before any language module is trained.

multilingual-e5 ships no MLM head: ``peftir.models.multilingual_e5`` gives it one whose decoder is the tied
word embeddings and whose transform starts as the identity. Language adapters and language masks are trained by
masked language modelling through that head; left untrained, their early updates would go into fitting the
head through the encoder, and their held-out loss would measure the head rather than the language. This step
fits the head alone (the transform's dense + LayerNorm and the decoder bias), the encoder and the tied embeddings
frozen, so that every language module starts from the same fitted head and changes only the encoder's side.

Data and objective are the language modules' (``peftir.training.mlm``): lines concatenated and cut into
``block_size``-token blocks, 15 % of tokens masked (80/10/10), held-out blocks masked once with a fixed seed so
the loss before and after is on the same tokens. The schedule is the project's (``train_steps``): AdamW, linear
decay to zero, no warm-up, no weight decay.

Speed on CPU: the encoder runs in eval mode under ``torch.no_grad`` (only the head needs gradients) and the head
runs on the masked positions only, the only ones the loss reads; the held-out hidden states are computed once.
"""
from __future__ import annotations

import math
import time

import torch
from torch import Tensor
from torch.nn import functional as F
from transformers import AutoTokenizer, BertForMaskedLM

from ..contract.backbones import resolve
from ..data.text_units import TextUnits
from ..execution.seam import CPU, Execution, Spec
from ..files import scratch_directory, write_json
from . import mlm
from .steps import train_steps
from ..models.multilingual_e5 import save_checkpoint

IGNORED = -100        # the collator's label for unmasked tokens
SCHEDULE = "AdamW, linear decay to 0, no warm-up, no weight decay"

Features = tuple[Tensor, Tensor]   # hidden states at the masked positions, and their labels


def head_parameters(model: BertForMaskedLM) -> list[torch.nn.Parameter]:
    """What this step trains: the transform and the decoder bias (not the decoder weight: the word embeddings)."""
    predictions = model.cls.predictions
    return [*predictions.transform.parameters(), predictions.bias]


def freeze_all_but_head(model: BertForMaskedLM) -> int:
    """Freeze the encoder and the tied embeddings; the number of parameters left trainable."""
    for parameter in model.parameters():
        parameter.requires_grad = False
    trainable = head_parameters(model)
    for parameter in trainable:
        parameter.requires_grad = True
    return sum(p.numel() for p in trainable)


def masked_features(model: BertForMaskedLM, batch: dict[str, Tensor], execution: Execution = CPU) -> Features:
    """The frozen encoder's last hidden states at the masked positions (blocks are full: no padding, one segment),
    in fp32 (the encoder in the execution's precision)."""
    batch = execution.inputs(batch)
    with torch.no_grad(), execution.precision():
        hidden = model.bert(input_ids=batch["input_ids"]).last_hidden_state.float()
    masked = batch["labels"] != IGNORED
    return hidden[masked], batch["labels"][masked]


def head_loss(model: BertForMaskedLM, features: Features) -> Tensor:
    """Mean cross-entropy of the masked tokens: the model's own MLM loss, computed on those positions only."""
    hidden, labels = features
    return F.cross_entropy(model.cls(hidden), labels)


def heldout_loss(model: BertForMaskedLM, heldout: list[Features]) -> dict[str, float]:
    """Masked-token cross-entropy on the held-out features (weighted by masked tokens) and its perplexity."""
    with torch.no_grad():
        total = sum(float(head_loss(model, features)) * len(features[1]) for features in heldout)
    tokens = sum(len(labels) for _, labels in heldout)
    loss = total / tokens
    return {"loss": loss, "perplexity": math.exp(loss), "masked_tokens": tokens}


def fit_mlm_head(backbone_dir: str, train_texts: list[str], heldout_texts: list[str], output_dir: str, steps: int,
                 batch_size: int, block_size: int, lr: float, seed: int, threads: int, summary: str | None = None,
                 execution: Spec | None = None) -> dict:
    """Fit the MLM head of the checkpoint in ``backbone_dir`` for ``steps`` batches of ``batch_size`` blocks of
    ``train_texts`` (their token ids on disk beside ``output_dir`` while it runs), where ``execution`` says, write
    the whole checkpoint to ``output_dir`` (built beside it, renamed at the end) and return the summary (written to
    ``summary`` when given: the ``mlm_head`` rule): held-out MLM loss and perplexity before and after, tokens
    seen, the units left out for holding no text (a collection's empty documents), seconds."""
    placement = Execution.of(execution, threads)
    torch.manual_seed(seed)
    started = time.monotonic()
    backbone_dir = resolve(backbone_dir)         # a hub name resolved once: each resolve asks the hub
    model = placement.place(BertForMaskedLM.from_pretrained(backbone_dir).eval())
    tokenizer = AutoTokenizer.from_pretrained(backbone_dir)
    trainable = freeze_all_but_head(model)
    with scratch_directory(output_dir) as scratch:
        units = {"train": TextUnits(train_texts), "heldout": TextUnits(heldout_texts)}
        blocks = mlm.write_blocks(tokenizer, units["train"].chunks(), block_size, scratch / "train.ids")
        heldout_blocks = mlm.write_blocks(tokenizer, units["heldout"].chunks(), block_size, scratch / "heldout.ids")
        heldout = [masked_features(model, batch, placement)
                   for batch in mlm.heldout_batches(heldout_blocks, batch_size, tokenizer)]
        before = heldout_loss(model, heldout)
        batches = mlm.training_batches(blocks, batch_size, tokenizer, seed)
        training = time.monotonic()
        losses = train_steps(model.cls, lambda step: head_loss(model, masked_features(model, next(batches), placement)),
                             steps, lr, log_every=max(1, steps // 10), execution=placement)
        training_seconds = time.monotonic() - training
    facts = {"backbone": backbone_dir, "train_texts": list(train_texts), "heldout_texts": list(heldout_texts),
             "steps": steps, "batch_size": batch_size, "block_size": block_size, "lr": lr, "schedule": SCHEDULE,
             "seed": seed, "threads": threads, "training_blocks": len(blocks), "heldout_blocks": len(heldout_blocks),
             "empty_units_dropped": {name: read.empty for name, read in units.items()},
             "tokens_seen": steps * batch_size * block_size, "trainable_parameters": trainable,
             "heldout_before": before, "heldout_after": heldout_loss(model, heldout), "losses": losses,
             "training_seconds": round(training_seconds, 1), "execution": placement.used()}
    save_checkpoint(model, tokenizer, output_dir)
    facts["seconds"] = round(time.monotonic() - started, 1)
    if summary:
        write_json(summary, facts)
    return facts

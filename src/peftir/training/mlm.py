"""Masked-language-model data and loss, as the authors' language-adapter script (Hugging Face ``run_mlm``) has them.

Each line of a corpus is tokenised with its special tokens, the token ids are concatenated and cut into
blocks of ``block_size`` (not line by line; the remainder is dropped), and ``DataCollatorForLanguageModeling``
masks 15 % of the tokens (80 % <mask>, 10 % random, 10 % kept). Held-out blocks are masked once with a fixed
seed, so the loss before and after training is measured on the same masked tokens.
"""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Iterator

import torch
from torch import Tensor, nn
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerBase

MLM_PROBABILITY = 0.15
HELDOUT_MASK_SEED = 0


def text_blocks(tokenizer: PreTrainedTokenizerBase, path: str | Path, block_size: int,
                max_blocks: int | None = None) -> Tensor:
    """The corpus as a ``[blocks, block_size]`` tensor of token ids (concatenated lines, cut into blocks)."""
    ids: list[int] = []
    wanted = None if max_blocks is None else max_blocks * block_size
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            text = line.strip()
            if text:
                ids.extend(tokenizer(text, truncation=False)["input_ids"])
            if wanted is not None and len(ids) >= wanted:
                break
    usable = len(ids) // block_size * block_size
    if usable == 0:
        raise ValueError(f"{path}: fewer than {block_size} tokens, not one block of text")
    return torch.tensor(ids[:usable], dtype=torch.long).view(-1, block_size)


def collator(tokenizer: PreTrainedTokenizerBase, seed: int | None = None) -> DataCollatorForLanguageModeling:
    return DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=MLM_PROBABILITY,
                                           return_tensors="pt", seed=seed)


def shuffled_batches(count: int, batch_size: int, rng: random.Random) -> Iterator[list[int]]:
    """Indices of ``count`` items, ``batch_size`` at a time, forever: a seeded random order, reshuffled each pass
    (a batch may span two passes)."""
    order: list[int] = []
    while True:
        if len(order) < batch_size:
            fresh = list(range(count))
            rng.shuffle(fresh)
            order += fresh
        chosen, order = order[:batch_size], order[batch_size:]
        yield chosen


def training_batches(blocks: Tensor, batch_size: int, tokenizer: PreTrainedTokenizerBase,
                     seed: int) -> Iterator[dict[str, Tensor]]:
    """Masked batches forever: the blocks in a seeded random order, reshuffled each pass, masked afresh."""
    masking = collator(tokenizer, seed=seed)
    for chosen in shuffled_batches(len(blocks), batch_size, random.Random(seed)):
        yield masking([{"input_ids": blocks[i]} for i in chosen])


def heldout_batches(blocks: Tensor, batch_size: int, tokenizer: PreTrainedTokenizerBase) -> list[dict[str, Tensor]]:
    """The held-out blocks masked once, with a fixed seed, in fixed batches."""
    masking = collator(tokenizer, seed=HELDOUT_MASK_SEED)
    return [masking([{"input_ids": block} for block in blocks[start:start + batch_size]])
            for start in range(0, len(blocks), batch_size)]


def mlm_loss(model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
    """Cross-entropy of the masked tokens (the model's MLM head computes it from ``labels``)."""
    return model(input_ids=batch["input_ids"], labels=batch["labels"]).loss


def heldout_loss(model: nn.Module, batches: list[dict[str, Tensor]]) -> dict[str, float]:
    """Mean masked-token cross-entropy on the held-out batches (weighted by masked tokens) and its perplexity."""
    model.eval()
    total, tokens = 0.0, 0
    with torch.no_grad():
        for batch in batches:
            masked = int((batch["labels"] != -100).sum())
            total += float(mlm_loss(model, batch)) * masked
            tokens += masked
    loss = total / tokens
    return {"loss": loss, "perplexity": math.exp(loss), "masked_tokens": tokens}

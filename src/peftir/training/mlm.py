"""Masked-language-model data and loss, as the authors' language-adapter script (Hugging Face ``run_mlm``) has them.

Each text unit of a corpus (a Wikipedia article) is tokenised with its special tokens, the token ids are
concatenated and cut into blocks of ``block_size`` (not line by line), about as ``run_mlm``'s ``group_texts``:
it runs under ``datasets.map`` in batches of ``RUN_MLM_GROUP`` units, each batch's remainder short of a block
dropped and no block spanning two batches (``group``; its worker shards end in shorter batches, and a batch of less
than a block stays one short block there); and ``DataCollatorForLanguageModeling``
masks 15 % of the tokens (80 % <mask>, 10 % random, 10 % kept). Held-out blocks are masked once with a fixed
seed, so the loss before and after training is measured on the same masked tokens.

The token ids go to a file as they are produced and are read back memory-mapped (``TokenBlocks``): a Wikipedia
of billions of tokens costs its size on disk (4 bytes a token), not in memory; a batch reads its blocks only.
"""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import torch
from torch import Tensor, nn
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerBase

from ..data.pretraining_text import TOKEN_TYPE
from ..execution.gradients import accumulate, split
from ..execution.seam import Execution

MLM_PROBABILITY = 0.15
HELDOUT_MASK_SEED = 0
RUN_MLM_GROUP = 1000      # units a ``group_texts`` call concatenates: ``datasets.map``'s default batch size


class TokenBlocks:
    """A corpus's ``[blocks, block_size]`` token ids, memory-mapped from the file ``write_blocks`` wrote."""

    def __init__(self, path: str | Path, block_size: int) -> None:
        self.path, self.block_size = Path(path), block_size
        tokens = self.path.stat().st_size // np.dtype(TOKEN_TYPE).itemsize
        self.ids = np.memmap(self.path, dtype=TOKEN_TYPE, mode="r", shape=(tokens // block_size, block_size))

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, indices: Sequence[int]) -> Tensor:
        """The blocks ``indices`` as a ``[len(indices), block_size]`` tensor of ids (read from disk)."""
        return torch.from_numpy(self.ids[np.asarray(indices, dtype=np.int64)].astype(np.int64))


def write_blocks(tokenizer: PreTrainedTokenizerBase, chunks: Iterable[list[str]], block_size: int, path: str | Path,
                 max_blocks: int | None = None, group: int | None = None) -> TokenBlocks:
    """Tokenise the text units of ``chunks`` (lists, for the tokenizer's batch calls) and write their ids to
    ``path`` until the text ends or ``max_blocks`` blocks are there; the blocks as ``TokenBlocks``. With ``group``,
    the ids of every ``group`` units in turn are cut to whole blocks, the rest of them dropped (``run_mlm``)."""
    wanted = None if max_blocks is None else max_blocks * block_size
    written = 0
    pending: list[int] = []             # the current group's ids not yet written

    def flush(cut: bool) -> None:
        nonlocal written, pending
        kept = pending[:len(pending) - len(pending) % block_size] if cut else pending
        kept = kept if wanted is None else kept[:wanted - written]
        np.asarray(kept, dtype=TOKEN_TYPE).tofile(out)
        written += len(kept)
        pending = []

    with open(path, "wb") as out:
        units = 0
        for chunk in chunks:
            for ids in tokenizer(chunk, truncation=False, verbose=False)["input_ids"]:
                pending += ids
                units += 1
                if group is None or units % group == 0:
                    flush(cut=group is not None)
            if wanted is not None and written >= wanted:
                break
        flush(cut=group is not None)
    if written < block_size:
        raise ValueError(f"{path}: fewer than {block_size} tokens of text, not one block")
    return TokenBlocks(path, block_size)


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


def training_batches(blocks: TokenBlocks, batch_size: int, tokenizer: PreTrainedTokenizerBase,
                     seed: int) -> Iterator[dict[str, Tensor]]:
    """Masked batches forever: the blocks in a seeded random order, reshuffled each pass, masked afresh."""
    masking = collator(tokenizer, seed=seed)
    for chosen in shuffled_batches(len(blocks), batch_size, random.Random(seed)):
        yield masking([{"input_ids": row} for row in blocks.rows(chosen)])


def heldout_batches(blocks: TokenBlocks, batch_size: int,
                    tokenizer: PreTrainedTokenizerBase) -> list[dict[str, Tensor]]:
    """The held-out blocks masked once, with a fixed seed, in fixed batches."""
    masking = collator(tokenizer, seed=HELDOUT_MASK_SEED)
    return [masking([{"input_ids": row} for row in blocks.rows(range(start, min(start + batch_size, len(blocks))))])
            for start in range(0, len(blocks), batch_size)]


def mlm_loss(model: nn.Module, batch: dict[str, Tensor], execution: Execution) -> Tensor:
    """Cross-entropy of the masked tokens (the model's MLM head computes it from ``labels``), the batch put on the
    execution's device and the model run in its precision."""
    batch = execution.inputs(batch)
    with execution.precision():
        return model(input_ids=batch["input_ids"], labels=batch["labels"]).loss


def accumulated_mlm(model: nn.Module, batch: dict[str, Tensor], execution: Execution, chunk: int) -> Tensor:
    """Back-propagate a batch's MLM loss ``chunk`` blocks at a time (gradient accumulation, each chunk weighted by
    its share of the blocks: the blocks are full, so by its share of the masked tokens in expectation); the loss."""
    return accumulate(split(batch, chunk), lambda part: mlm_loss(model, part, execution))


def heldout_loss(model: nn.Module, batches: list[dict[str, Tensor]], execution: Execution) -> dict[str, float]:
    """Mean masked-token cross-entropy on the held-out batches (weighted by masked tokens) and its perplexity."""
    model.eval()
    total, tokens = 0.0, 0
    with torch.no_grad():
        for batch in batches:
            masked = int((batch["labels"] != -100).sum())
            total += float(mlm_loss(model, batch, execution)) * masked
            tokens += masked
    loss = total / tokens
    return {"loss": loss, "perplexity": math.exp(loss), "masked_tokens": tokens}

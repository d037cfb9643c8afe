"""The in-batch contrastive part of coCondenser and RIP pretraining, with a gradient cache.

Both objectives put two pieces of one text side by side in a batch (coCondenser: two random spans of a
document; RIP: two sentences of a passage) and ask each piece's [CLS] to pick its partner among all other
pieces of the batch: cross-entropy over dot products, no temperature, the piece itself excluded (the
released ``CoCondenserForPretraining``; DPTDR eq. 4 with the temperature it does not state left out). The
masked-LM losses of the same batch are added 1:1.

``contrastive_step`` computes the gradient with a gradient cache (Gao et al. 2021c, as the released
``CoCondenserPretrainer``): every piece's [CLS] is computed without a graph, the contrastive loss is
back-propagated to those vectors only, and each chunk is then run again with its graph and back-propagated
with the cached gradient (plus its share of the MLM loss), replaying the chunk's dropout; the gradient is the
full batch's while memory holds one chunk. The gradient-cache library is not on the package index, so the
three steps are written out here.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor
from torch.nn import functional as F

Objective = Callable[..., tuple[Tensor, Tensor]]     # a batch's rows → (their MLM loss, their [CLS] vectors)


def pair_contrastive_loss(cls: Tensor) -> Tensor:
    """Rows 2i and 2i+1 are two pieces of one text: each must find the other among all rows but itself."""
    if len(cls) % 2:
        raise ValueError("a contrastive pretraining batch holds two pieces per text: an even number of rows")
    scores = cls @ cls.T
    scores = scores.masked_fill(torch.eye(len(cls), dtype=torch.bool, device=cls.device), float("-inf"))
    target = torch.arange(len(cls), device=cls.device).view(-1, 2).flip(1).reshape(-1)
    return F.cross_entropy(scores, target)


def contrastive_step(objective: Objective, batch: dict[str, Tensor], chunk: int) -> float:
    """Accumulate the gradient of MLM + pair-contrastive loss over ``batch``, ``chunk`` rows at a time; the loss.
    The MLM loss is the mean of the chunks' losses weighted by their share of the rows."""
    rows = len(batch["input_ids"])
    chunks = [{key: value[start:start + chunk] for key, value in batch.items()} for start in range(0, rows, chunk)]
    states, vectors = [], []
    with torch.no_grad():
        for part in chunks:
            states.append(torch.get_rng_state())
            vectors.append(objective(**part)[1])
    cached = torch.cat(vectors).requires_grad_(True)
    contrastive = pair_contrastive_loss(cached)
    contrastive.backward()
    total = float(contrastive.detach())
    for part, state, grad in zip(chunks, states, cached.grad.split(chunk)):
        torch.set_rng_state(state)
        mlm, cls = objective(**part)
        share = len(part["input_ids"]) / rows
        (mlm * share + (cls * grad).sum()).backward()
        total += float(mlm.detach()) * share
    return total

"""The in-batch contrastive part of coCondenser and RIP pretraining.

Both objectives put two pieces of one text side by side in a batch (coCondenser: two random spans of a
document; RIP: two sentences of a passage) and ask each piece's [CLS] to pick its partner among all other
pieces of the batch: cross-entropy over dot products, no temperature, the piece itself excluded (the
released ``CoCondenserForPretraining``; DPTDR eq. 4 with the temperature it does not state left out). The
masked-LM losses of the same batch are added 1:1. A paper's batch (2,048 texts) runs through the gradient cache
of ``peftir.execution.gradients`` (``retrieval_pretraining.pretraining_update``), as the released
``CoCondenserPretrainer`` runs through the gradient-cache library (not on the package index).
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F


def pair_contrastive_loss(cls: Tensor) -> Tensor:
    """Rows 2i and 2i+1 are two pieces of one text: each must find the other among all rows but itself."""
    if len(cls) % 2:
        raise ValueError("a contrastive pretraining batch holds two pieces per text: an even number of rows")
    scores = cls @ cls.T
    scores = scores.masked_fill(torch.eye(len(cls), dtype=torch.bool, device=cls.device), float("-inf"))
    target = torch.arange(len(cls), device=cls.device).view(-1, 2).flip(1).reshape(-1)
    return F.cross_entropy(scores, target)

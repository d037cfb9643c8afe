"""The in-batch contrastive part of coCondenser and RIP pretraining, and ICT's whole loss.

Both objectives put two pieces of one text side by side in a batch (coCondenser: two random spans of a
document; RIP: two sentences of a passage) and ask each piece's [CLS] to pick its partner among all other
pieces of the batch: cross-entropy over dot products, no temperature, the piece itself excluded (the
released ``CoCondenserForPretraining``; DPTDR eq. 4 with the temperature it does not state left out). The
masked-LM losses of the same batch are added 1:1. A paper's batch (2,048 texts) runs through the gradient cache
of ``peftir.execution.gradients`` (``retrieval_pretraining.pretraining_update``), as the released
``CoCondenserPretrainer`` runs through the gradient-cache library (not on the package index).

ICT (``peftir.dense.pretraining.ict``) puts a pseudo-query sentence and its context side by side instead, and asks
each query to pick its own context among the batch's contexts only (Lee et al.'s softmax over the query-block
inner products, no temperature): ``inverse_cloze_loss``.
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


def inverse_cloze_loss(cls: Tensor) -> Tensor:
    """Rows 2i (query) and 2i+1 (its context): each query's target is its own context among all contexts of the
    batch (the diagonal of the query × context score matrix); queries are not scored against queries."""
    if len(cls) % 2:
        raise ValueError("an ICT batch holds a query and its context per passage: an even number of rows")
    scores = cls[0::2] @ cls[1::2].T
    return F.cross_entropy(scores, torch.arange(len(scores), device=cls.device))

"""SPLADE's training objective (Adapters-SPLADE eq. 6–9): a ranking loss plus sparsity regularisers.

- ``contrastive_nll`` (eq. 6): each query's positive against its own BM25 negative and every other query's
  positive in the batch (the released ``InBatchPairwiseNLL``). The released ``adapter-splade`` branch sets
  ``augment_pair: in_batch_negatives`` while its trainer reads ``augment_pairs``, so in-batch scoring never
  switches on and its loss is the positive against the BM25 negative alone: ``in_batch=False`` is that
  behaviour, offered by name, never by default.
- ``margin_mse`` (eq. 7): distillation from a cross-encoder's scores.
- ``flops`` (eq. 9) on documents, ``l1`` on queries, each weighted by ``regulariser_weight``: λ·(t/T)² up to
  step T, then λ (Paria et al.'s quadratic warm-up). Eq. 9 as printed drops the square; the released code
  squares the mean activation, and so does ``flops``.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F


def contrastive_nll(queries: Tensor, positives: Tensor, negatives: Tensor, in_batch: bool = True) -> Tensor:
    """−log softmax of the positive's score among the query's candidates (rows aligned: query i, its positive
    i, its negative i); ``in_batch``: the other queries' positives are candidates too."""
    own_negative = (queries * negatives).sum(-1, keepdim=True)
    if in_batch:
        scores = torch.cat([queries @ positives.T, own_negative], dim=1)
        target = torch.arange(queries.shape[0], device=queries.device)
    else:
        scores = torch.cat([(queries * positives).sum(-1, keepdim=True), own_negative], dim=1)
        target = torch.zeros(queries.shape[0], dtype=torch.long, device=queries.device)
    return F.cross_entropy(scores, target)


def margin_mse(queries: Tensor, positives: Tensor, negatives: Tensor, teacher_positive: Tensor,
               teacher_negative: Tensor) -> Tensor:
    """MarginMSE: the squared difference of the student's and the teacher's positive − negative margins."""
    margin = (queries * positives).sum(-1) - (queries * negatives).sum(-1)
    return F.mse_loss(margin, teacher_positive - teacher_negative)


def flops(representations: Tensor) -> Tensor:
    """FLOPS regulariser: Σ_j (mean over the batch of |w_j|)², a smooth proxy of the expected posting work."""
    return representations.abs().mean(dim=0).pow(2).sum()


def l1(representations: Tensor) -> Tensor:
    """L1 regulariser: the batch mean of Σ_j |w_j|."""
    return representations.abs().sum(dim=-1).mean()


def regulariser_weight(weight: float, step: int, warmup: int) -> float:
    """λ at update ``step`` (1-based): λ·(step/T)² while step < T, then λ (the released RegWeightScheduler)."""
    return weight if step >= warmup else weight * (step / warmup) ** 2


def splade_loss(queries: Tensor, positives: Tensor, negatives: Tensor, step: int, regularisation: dict,
                in_batch: bool = True, teacher: tuple[Tensor, Tensor] | None = None) -> dict[str, Tensor]:
    """Eq. 8 at update ``step``: the ranking loss (eq. 6, or MarginMSE given the ``teacher``'s positive and
    negative scores) + λ_q·L1(queries) + λ_d·FLOPS(documents) (the mean of the positives' and the negatives'
    FLOPS, as the released code). ``regularisation``: ``lambda_q``, ``lambda_d``, ``warmup_steps`` (T)."""
    if teacher is None:
        ranking = contrastive_nll(queries, positives, negatives, in_batch)
    else:
        ranking = margin_mse(queries, positives, negatives, *teacher)
    warmup = regularisation["warmup_steps"]
    query_term = regulariser_weight(regularisation["lambda_q"], step, warmup) * l1(queries)
    documents = (flops(positives) + flops(negatives)) / 2
    document_term = regulariser_weight(regularisation["lambda_d"], step, warmup) * documents
    return {"loss": ranking + query_term + document_term, "ranking": ranking, "l1": query_term, "flops": document_term}

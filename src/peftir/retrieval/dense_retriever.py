"""A dual-encoder dense retriever as DPTDR and Condenser fine-tune it (Tevatron's ``DenseModel``).

One encoder, tied, for queries and passages (``q_max_len`` / ``p_max_len`` tokens); the representation is the
last layer's first token ([CLS]), no pooler, no projection, no normalisation; the score is the dot product.
Training (``contrastive_loss``) is cross-entropy over every passage of the batch: each query's group holds its
positive first and ``n − 1`` hard negatives, and the other queries' passages are in-batch negatives.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from ..execution.passes import Configured, Encoder, Shape
from ..execution.seam import CPU

QUERY, PASSAGE = "query", "passage"


class DenseRetriever(nn.Module):
    """``encoder``: a Hugging Face encoder, or the same wrapped by peft (deep prompts); it returns
    ``last_hidden_state``."""

    def __init__(self, encoder: nn.Module, tokenizer, q_max_len: int, p_max_len: int) -> None:
        super().__init__()
        self.encoder, self.tokenizer = encoder, tokenizer
        self.max_len = {QUERY: q_max_len, PASSAGE: p_max_len}
        self.execution = CPU          # where it runs and in which precision: ``Execution.place`` sets it

    def encode(self, texts: list[str], role: str) -> Tensor:
        """[CLS] of the last layer for each text (queries and passages cropped to their own lengths), in fp32 (the
        encoder in the execution's precision)."""
        batch = self.execution.inputs(self.tokenizer(texts, truncation=True, max_length=self.max_len[role],
                                                     padding=True, return_tensors="pt"))
        with self.execution.precision():
            states = self.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        return states.last_hidden_state[:, 0].float()


LENGTH_CHUNK = 4_096     # texts tokenised at a time to learn their lengths (their word pieces are let go)


def length_batches(tokenizer, texts: list[str], max_length: int, batch_size: int) -> Iterator[np.ndarray]:
    """The texts' positions in batches of similar token length, so a batch pads to its own longest text, not the
    corpus's (vaswani's abstracts: 50 word pieces on average, 147 at the 99th percentile). Only the lengths are
    kept: tokenising a 100,000-passage shard at once held 1.35 GB of word pieces."""
    lengths = np.concatenate([[len(ids) for ids in tokenizer(texts[start:start + LENGTH_CHUNK], truncation=True,
                                                             max_length=max_length)["input_ids"]]
                              for start in range(0, len(texts), LENGTH_CHUNK)] or [np.empty(0, int)])
    order = np.argsort(lengths, kind="stable")
    for start in range(0, len(texts), batch_size):
        yield order[start:start + batch_size]


def encode_all(retriever: DenseRetriever, texts: list[str], role: str, batch_size: Configured) -> np.ndarray:
    """Every text's vector, in order, without gradients, encoded in ``length_batches`` of as many texts as the
    execution decides for ``batch_size`` (``auto`` or a number; recorded as ``encode``)."""
    vectors = np.empty((len(texts), retriever.encoder.config.hidden_size), dtype=np.float32)
    batch_size = retriever.execution.rows_per_pass("encode", batch_size, len(texts),
                                                   Encoder.of(retriever.encoder.config, retriever),
                                                   Shape(retriever.max_len[role], False))
    with torch.no_grad():
        for chosen in length_batches(retriever.tokenizer, texts, retriever.max_len[role], batch_size):
            vectors[chosen] = retriever.encode([texts[i] for i in chosen], role).float().cpu().numpy()
    return vectors


def contrastive_loss(queries: Tensor, passages: Tensor) -> Tensor:
    """Cross-entropy of each query's positive against every passage of the batch (Tevatron, DPTDR eq. 3):
    ``passages`` holds the groups in query order, each ``passages / queries`` long with its positive first."""
    group = passages.shape[0] // queries.shape[0]
    if group * queries.shape[0] != passages.shape[0]:
        raise ValueError(f"{passages.shape[0]} passages do not split into groups for {queries.shape[0]} queries")
    scores = queries @ passages.T
    target = torch.arange(queries.shape[0], device=scores.device) * group
    return F.cross_entropy(scores, target)

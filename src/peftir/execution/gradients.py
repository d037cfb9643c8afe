"""Batch mechanics: a paper's whole batch on one device, a chunk of rows at a time, with the gradient unchanged.

- ``accumulate``: gradient accumulation, for objectives that are a mean over examples (MLM, Condenser's two MLM
  losses, cross-entropy over independent pairs): each chunk's loss weighted by its share of the batch and
  back-propagated on its own; the released Condenser code accumulates so.
- ``cached_gradient``: a gradient cache (Gao et al. 2021c, GC-DPR; what Tevatron, coCondenser and DPTDR train
  with), for contrastive objectives whose loss couples every row of the batch (in-batch negatives, FLOPS):
  every chunk's representation is computed without a graph, the loss is back-propagated to those
  representations only, then each chunk is run again with its graph and back-propagated with its cached
  gradient. The second pass replays the first's random state on the CPU and on the device (dropout masks are
  drawn on the GPU there), so both passes see the same masks and the gradient is the full batch's.
- ``clip``: the gradient's global norm cut to ``max_norm`` (the Hugging Face Trainer's default, 1.0, under
  which the Tevatron/Condenser and DPTDR codes trained); None: no clipping (CEDR's loop, naver/splade's trainer).

Memory holds one chunk's activations; the result does not depend on the chunk size (up to float rounding). How many
rows a chunk holds is the execution's decision (``Execution.rows_per_pass``). The losses come back as tensors on the
device, detached and summed in float64 (as the host's Python floats were): reading one on the host waits for the GPU,
which a loop does once per step at most (to log).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Callable, Iterable, Sequence, TypeVar

import torch
from torch import Tensor

from .seam import Execution

Chunk = TypeVar("Chunk")


def chunks_of(rows: int, chunk: int) -> list[slice]:
    """``rows`` in consecutive slices of at most ``chunk`` rows."""
    if chunk < 1:
        raise ValueError(f"chunk = {chunk}: at least one row per forward pass")
    return [slice(start, min(start + chunk, rows)) for start in range(0, rows, chunk)]


def split(batch: Chunk, chunk: int) -> list[tuple[Chunk, float]]:
    """``batch`` (a list of examples, or a dict of tensors with a row per example) in consecutive parts of at most
    ``chunk`` rows, each with its share of the rows: what ``accumulate`` weights each part's mean loss by."""
    rows = len(next(iter(batch.values()))) if isinstance(batch, Mapping) else len(batch)
    return [({key: value[part] for key, value in batch.items()} if isinstance(batch, Mapping) else batch[part],
             (part.stop - part.start) / rows) for part in chunks_of(rows, chunk)]


def accumulate(parts: Sequence[tuple[Chunk, float]], loss_of: Callable[[Chunk], Tensor]) -> Tensor:
    """Back-propagate ``Σ share × loss_of(chunk)`` over the ``(chunk, share)`` parts one chunk at a time; returns
    that sum (the batch's loss when the shares are each chunk's fraction of the examples, as ``split`` gives)."""
    total = None
    for chunk, share in parts:
        loss = loss_of(chunk) * share
        loss.backward()
        total = loss.detach().double() if total is None else total + loss.detach().double()
    return total


def cached_gradient(execution: Execution, chunks: Sequence[Chunk],
                    represent: Callable[[Chunk], tuple[Tensor | float, Tensor]],
                    combine: Callable[[list[Tensor]], Tensor], cache: bool = True) -> Tensor:
    """Back-propagate ``Σ local losses + combine(representations)`` over ``chunks`` with a gradient cache.

    ``represent(chunk)`` gives the chunk's own loss (its share of an MLM loss; 0 when it has none) and its
    representations (rows × dim); ``combine`` the loss of all chunks' representations, in chunk order. Returns the
    total loss. Without ``cache`` (the whole batch fits in one pass) or with one chunk: one forward with its graph
    and one backward, the same gradient at half the cost."""
    if not cache or len(chunks) == 1:
        parts = [represent(chunk) for chunk in chunks]
        loss = sum(local for local, _ in parts) + combine([representation for _, representation in parts])
        loss.backward()
        return loss.detach().double()
    states, cached = [], []
    with torch.no_grad():
        for chunk in chunks:
            states.append(execution.random_state())
            cached.append(represent(chunk)[1].detach().requires_grad_(True))
    coupled = combine(cached)
    coupled.backward()
    total = coupled.detach().double()
    for chunk, state, representation in zip(chunks, states, cached):
        execution.restore_random_state(state)
        local, again = represent(chunk)
        (local + (again * representation.grad).sum()).backward()
        total = total + (local.detach().double() if isinstance(local, Tensor) else local)
    return total


def clip(parameters: Iterable[Tensor], max_norm: float | None) -> Tensor | None:
    """Scale the gradients so that their global L2 norm is at most ``max_norm`` (no-op for None); the norm before,
    on the device (the scaling itself runs there, without the host reading the norm)."""
    if max_norm is None:
        return None
    return torch.nn.utils.clip_grad_norm_(list(parameters), max_norm)

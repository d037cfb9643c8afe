"""How many rows one forward pass takes: the execution's decision, from a memory model of the encoder.

A paper's batch (16 pairs of 512 tokens, 64 queries × 30 passages) was split into micro-batches or gradient-cache
chunks because the authors' GPUs could not hold it; the split changes no gradient (``peftir.execution.gradients``)
but on a modern GPU it leaves the device waiting on Python and kernel launches. So every training and encoding loop
asks ``Execution.rows_per_pass`` how many of its rows to put through the model at once, giving the configured
value: an integer is used as it is, on every device (the override); ``auto`` is sized here — the largest pass that
the device's free memory holds, up to the whole batch. On a CPU, where memory is the job's budget, the same rule:
a training step is fastest there in one pass too, while encoding stops gaining at a few dozen texts a pass, so it
takes at most ``CPU_ENCODE_ROWS`` (``benchmarks/pass_sizes.py`` measures both).

The memory model counts what a pass holds per row (``Shape``): activations saved for the backward pass, per token
and layer after Korthikanti et al. (2022) for an encoder whose attention runs in PyTorch's scaled-dot-product
kernels (no s² attention matrix on a GPU; the CPU's math path keeps one), an MLM head's vocabulary-wide logits and
their fp32 copies where the pass computes them (SPLADE, MLM); without gradients, the largest transient tensors of one
layer. What a pass needs beside its rows and is not allocated yet — the gradients, Adam moments and bf16 weight
copies still to come — is subtracted from the free memory first (the placed weights are already out of it), and a
``MARGIN`` of the rest is kept for the allocator's fragmentation. ``tests/test_passes.py`` holds the model against
what passes allocate: torch's memory profile of real passes on a CPU, ``torch.cuda.max_memory_allocated`` on a GPU
(it must not predict less than a pass takes).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from .memory import MEMORY_ENV

AUTO = "auto"
MARGIN = 0.8              # of the memory left after the fixed costs: what passes may fill
CPU_ENCODE_ROWS = 64      # texts per encoding pass on a CPU: within 3 % of the fastest for the embedded shapes
Configured = int | str    # a loop's configured rows per pass: a positive integer, or AUTO


@dataclass(frozen=True)
class Shape:
    """One row of a pass: the tokens it puts through the encoder (all of its sequences together: a monoBERT pair's
    chunks, a triple's query and two documents), whether the pass keeps activations for a backward pass, how many
    vocabulary-wide outputs it computes per token (an MLM head's logits: SPLADE 1, Condenser's two losses 2) and
    its longest sequence (what an attention matrix is as wide as; 0: all of the row's tokens are one sequence)."""

    tokens: int
    trains: bool
    heads: int = 0
    sequence: int = 0


@dataclass(frozen=True)
class Encoder:
    """The sizes of a transformer encoder the memory model needs, read from a Hugging Face config."""

    hidden: int
    intermediate: int
    layers: int
    attention_heads: int
    vocabulary: int
    parameters: int = 0          # all parameters (placed weights)
    trainable: int = 0           # what the optimiser updates: its gradients and Adam's two moments are still to come

    @classmethod
    def of(cls, config: Any, model: torch.nn.Module | None = None, extra_layers: int = 0) -> Encoder:
        """From a BERT, RoBERTa or DistilBERT config (``extra_layers``: a head's own layers, Condenser's), with the
        parameter counts of ``model`` when given."""
        hidden = getattr(config, "hidden_size", None) or config.dim
        intermediate = getattr(config, "intermediate_size", None) or getattr(config, "hidden_dim", 4 * hidden)
        layers = (getattr(config, "num_hidden_layers", None) or config.n_layers) + extra_layers
        heads = getattr(config, "num_attention_heads", None) or config.n_heads
        parameters = trainable = 0
        if model is not None:
            parameters = sum(p.numel() for p in model.parameters())
            trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        return cls(hidden, intermediate, layers, heads, config.vocab_size, parameters, trainable)


def row_bytes(encoder: Encoder, shape: Shape, autocast: bool, device: str) -> int:
    """Bytes one row of a pass holds at its peak (the module docstring's model)."""
    b = 2 if autocast else 4                               # bytes of an activation element
    h, i, s, a = encoder.hidden, encoder.intermediate, shape.tokens, encoder.attention_heads
    width = shape.sequence or s
    scores = a * width * b if device == "cpu" else 0       # the math path's attention matrix (a GPU's kernels: none)
    if shape.trains:
        # saved per token and layer: the attention's input, Q, K, V, their contiguous copies for the kernel, its
        # output and the projection's (9bh), the MLP's two intermediate activations (2bi), two dropout masks (2h)
        # and two LayerNorm inputs kept in fp32 (8h): 44h bytes at BERT's i = 4h in bf16, a little above what a
        # monoBERT pass of 16 and of 64 pairs of 512 tokens took on an H200 (8.3 and 28.1 GB at the step's peak)
        per_layer = 9 * b * h + 2 * b * i + 10 * h + (2 * scores + scores // b)     # on a CPU: softmax, mask
        # logits, their fp32 copy, what the loss or SPLADE's pooling keeps of them, and the backward's gradients
        head = shape.heads * (b + 24) * encoder.vocabulary
    else:
        per_layer = 0
        head = shape.heads * (b + 4) * encoder.vocabulary           # logits and their fp32 copy, pooled in place
    transient = b * (i + 2 * h) + 2 * scores                         # one layer's largest tensors, in and out
    return s * (encoder.layers * per_layer + transient + head)


def fixed_bytes(encoder: Encoder, shape: Shape, autocast: bool) -> int:
    """Memory the pass needs beside its rows that is not allocated yet: gradients and Adam's moments of what trains
    (12 bytes a parameter) and autocast's bf16 copies of the weights."""
    optimiser = 12 * encoder.trainable if shape.trains else 0
    return optimiser + (2 * encoder.parameters if autocast else 0)


def free_bytes(device: torch.device) -> int:
    """Memory a job may still fill on ``device``: the GPU's free memory; on a CPU, what is left of the job's budget
    (``PEFTIR_JOB_MEM_MB``, its rule's ``mem_mb``) beside the process's resident memory, or of the machine's
    available memory when smaller or when the job has no budget."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    available = _meminfo("MemAvailable") or os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    budget = os.environ.get(MEMORY_ENV)
    if budget:
        available = min(available, int(budget) * 2**20 - resident_bytes())
    return max(0, available)


def resident_bytes() -> int:
    """The process's resident memory now (Linux; 0 where /proc is not there)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _meminfo(key: str) -> int:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def fitting_rows(encoder: Encoder, shape: Shape, rows: int, free: int, autocast: bool, device: str) -> int:
    """The most rows, at least one and at most ``rows``, whose pass fits in ``free`` bytes beside the fixed costs."""
    usable = (free - fixed_bytes(encoder, shape, autocast)) * MARGIN
    return max(1, min(rows, int(usable // row_bytes(encoder, shape, autocast, device))))


def sized(configured: Configured, rows: int, encoder: Encoder, shape: Shape, free: int, autocast: bool,
          device: str) -> int:
    """Rows per pass of a loop whose batch holds ``rows`` rows: ``configured`` when it is a number (never more than
    the batch), else the largest pass that fits, capped at ``CPU_ENCODE_ROWS`` for encoding on a CPU."""
    rows = max(1, rows)             # an empty batch still asks for a pass size
    if configured != AUTO:
        if not isinstance(configured, int) or isinstance(configured, bool) or configured < 1:
            raise ValueError(f"rows per pass = {configured!r}: a positive integer or {AUTO!r}")
        return min(configured, rows)
    fits = fitting_rows(encoder, shape, rows, free, autocast, device)
    return min(fits, CPU_ENCODE_ROWS) if device == "cpu" and not shape.trains else fits

"""The execution seam: one object per job that says where its models run and puts them and their batches there.

A job builds it once (``Execution.of``: the config's ``execution`` section resolved on this machine, torch's CPU
threads set) and passes it to whatever builds a model or a batch. ``place`` moves a model to the device and
keeps the execution on it (``model.execution``), so the model's own forward passes run under its
``precision()``; ``inputs`` moves a batch (a tensor, a tokenizer's ``BatchEncoding``, a dict or list of tensors)
to the device. Nothing else in the package moves a model or a batch to a device (saved states load onto
``execution.device``) or opens ``torch.autocast``: a system that forgot the GPU would have to go around this
module, and ``peftir.execution.audit`` catches that.

Precision: ``bf16`` is bf16 autocast for the encoder on a CUDA GPU that has it, with TF32 for the matrix products
that stay fp32; fp32 on CPUs, where bf16 is slow on most processors and would change numbers for no gain.
"""
from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch import nn

from . import audit

Spec = Mapping[str, str]          # the config's execution section: device (auto, cpu, cuda), precision (fp32, bf16)
CPU_FP32: Spec = {"device": "cpu", "precision": "fp32"}
Model = TypeVar("Model", bound=nn.Module)
RandomState = tuple[torch.Tensor, torch.Tensor | None]   # the CPU generator's state, and the device's (CUDA)


def resolve_device(choice: str) -> torch.device:
    """``auto`` takes the GPU when there is one (the paper configurations), else the CPU."""
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(choice)


def moved(batch: Any, device: torch.device) -> Any:
    """``batch`` with every tensor in it (nested in mappings, lists and tuples) on ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, Mapping):
        return {key: moved(value, device) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(moved(value, device) for value in batch)
    return batch


@dataclass(frozen=True)
class Execution:
    """Where a job's models run (``device``) and in which precision (``autocast``: bf16, or None for fp32)."""

    device: torch.device = torch.device("cpu")
    autocast: torch.dtype | None = None

    @classmethod
    def of(cls, spec: Spec | None, threads: int | None = None) -> Execution:
        """The job's execution: ``spec`` (``{"device": ..., "precision": ...}``; None: the CPU in fp32) as this
        machine can run it; torch limited to ``threads`` CPU threads when given."""
        if threads:
            torch.set_num_threads(threads)
        spec = spec or CPU_FP32
        on = resolve_device(spec["device"])
        if spec["precision"] != "bf16" or on.type != "cuda" or not torch.cuda.is_bf16_supported():
            return cls(on)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        return cls(on, torch.bfloat16)

    def place(self, model: Model) -> Model:
        """``model`` on the device, with this execution kept on it for its forward passes (``model.execution``)."""
        model.to(self.device)
        model.execution = self
        audit.record_placement(model, self.device)
        return model

    def inputs(self, batch: Any) -> Any:
        """``batch`` on the device (``moved``): the only way a batch reaches a placed model."""
        batch = moved(batch, self.device)
        audit.produced(batch)
        return batch

    def precision(self) -> AbstractContextManager:
        """The forward pass's autocast: bf16 when the execution has it, plain fp32 otherwise."""
        return torch.autocast(self.device.type, dtype=self.autocast or torch.float32, enabled=self.autocast is not None)

    def used(self) -> dict[str, str]:
        """Where and in which precision models ran (what ``device: auto`` and ``precision: bf16`` became here)."""
        return {"device": self.device.type, "precision": "bf16" if self.autocast == torch.bfloat16 else "fp32"}

    def random_state(self) -> RandomState:
        """The state of every generator a forward pass on this device draws from (dropout: the device's)."""
        return torch.get_rng_state(), torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None

    def restore_random_state(self, state: RandomState) -> None:
        """Put back the generators ``random_state`` read, so a recomputed pass draws the same dropout masks."""
        cpu, device = state
        torch.set_rng_state(cpu)
        if device is not None:
            torch.cuda.set_rng_state(device, self.device)


CPU = Execution()     # what a model built outside a job (a unit test, a benchmark) runs on until placed


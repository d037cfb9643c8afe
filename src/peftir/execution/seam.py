"""The execution seam: one object per job that says where its models run and puts them and their batches there.

A job builds it once (``Execution.of``: the config's ``execution`` section resolved on this machine, torch's CPU
threads set) and passes it to whatever builds a model or a batch. ``place`` moves a model to the device and
keeps the execution on it (``model.execution``), so the model's own forward passes run under its
``precision()``; ``inputs`` moves a batch (a tensor, a tokenizer's ``BatchEncoding``, a dict or list of tensors)
to the device. Nothing else in the package moves a model or a batch to a device (saved states load onto
``execution.device``) or opens ``torch.autocast``: a system that forgot the GPU would have to go around this
module, and ``peftir.execution.audit`` catches that.

Precision: ``bf16`` is bf16 autocast for the encoder on a CUDA GPU that has it; fp32 on CPUs, where bf16 is slow on
most processors and would change numbers for no gain. To measure what bf16 does to a table without a GPU,
``PEFTIR_CPU_BF16=1`` in a run's environment gives ``precision: bf16`` its autocast on the CPU too
(``benchmarks/bf16_effect.py``; each job records the precision it ran in).

TF32: the matrix products that stay fp32 (outside autocast) run in full fp32 everywhere but inside a training step
(``training_step``), where a job in bf16 on a GPU lets them use TF32: speed, which the paper configurations choose
with ``precision: bf16`` (named there). Searches and scores are products whose order is the result: TF32 keeps 10
bits of mantissa, about three decimal digits, so neighbouring ranks would swap; exact search also says so itself
(``exact_products``), as faiss-gpu's flat index computes in fp32. PyTorch's flag is process-wide, so
``Execution.of`` turns it off for the job and each training step turns it on for its own span only.

Passes: how many rows of a batch one forward pass takes is the execution's decision too (``rows_per_pass``, sized by
``peftir.execution.passes``), recorded with the device and precision in what the job writes (``used``). With
``compile``, each Hugging Face model a job places is compiled by ``torch.compile`` (the same function, fewer kernel
launches; its first batches pay the compilation).
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch
from torch import nn

from . import audit, passes

Spec = Mapping[str, Any]   # the config's execution section: device (auto, cpu, cuda), precision (fp32, bf16), compile
CPU_FP32: Spec = {"device": "cpu", "precision": "fp32"}
CPU_BF16_ENV = "PEFTIR_CPU_BF16"        # set: bf16 autocast on the CPU too (a measurement, not a default)
Model = TypeVar("Model", bound=nn.Module)
RandomState = tuple[torch.Tensor, torch.Tensor | None]   # the CPU generator's state, and the device's (CUDA)


def resolve_device(choice: str) -> torch.device:
    """``auto`` takes the GPU when there is one (the paper configurations), else the CPU."""
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(choice)


def moved(batch: Any, device: torch.device) -> Any:
    """``batch`` with every tensor in it (nested in mappings, lists and tuples) on ``device``; to a GPU through pinned
    memory, so the copy is asynchronous and the host goes on building the next batch."""
    if isinstance(batch, torch.Tensor):
        if device.type == "cuda" and batch.device.type == "cpu":
            batch = batch.pin_memory()
        return batch.to(device, non_blocking=True)
    if isinstance(batch, Mapping):
        return {key: moved(value, device) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(moved(value, device) for value in batch)
    return batch


@contextmanager
def tf32(allowed: bool) -> Iterator[None]:
    """The body's fp32 matrix products on a CUDA GPU in TF32 (``allowed``) or in full fp32; the setting before is
    restored after. (PyTorch's legacy flag, the one transformers and accelerate set: mixing it with the newer
    ``fp32_precision`` settings makes PyTorch refuse to read either.)"""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def exact_products() -> AbstractContextManager:
    """Full fp32 products for the body, whatever the process set: exact search, where the order is the result."""
    return tf32(False)


@dataclass(frozen=True)
class Execution:
    """Where a job's models run (``device``), in which precision (``autocast``: bf16, or None for fp32), with TF32
    in its training steps or not (``tf32``), compiled or not; and the rows per pass it chose for each of the job's
    loops (``chosen``, by loop name)."""

    device: torch.device = torch.device("cpu")
    autocast: torch.dtype | None = None
    compile: bool = False
    chosen: dict[str, dict] = field(default_factory=dict, compare=False, repr=False)
    tf32: bool = False

    @classmethod
    def of(cls, spec: Spec | None, threads: int | None = None) -> Execution:
        """The job's execution: ``spec`` (``{"device": ..., "precision": ...}``; None: the CPU in fp32) as this
        machine can run it; torch limited to ``threads`` CPU threads when given."""
        if threads:
            torch.set_num_threads(threads)
        torch.backends.cuda.matmul.allow_tf32 = False     # the job's products in fp32 outside its training steps
        spec = spec or CPU_FP32
        on = resolve_device(spec["device"])
        compiled = bool(spec.get("compile", False))
        if on.type == "cpu" and spec["precision"] == "bf16" and os.environ.get(CPU_BF16_ENV):
            return cls(on, torch.bfloat16, compiled)
        if spec["precision"] != "bf16" or on.type != "cuda" or not torch.cuda.is_bf16_supported():
            return cls(on, compile=compiled)
        return cls(on, torch.bfloat16, compiled, tf32=True)

    def place(self, model: Model) -> Model:
        """``model`` on the device, with this execution kept on it for its forward passes (``model.execution``);
        its Hugging Face models compiled when the execution compiles."""
        model.to(self.device)
        model.execution = self
        if self.compile:
            compile_models(model)
        audit.record_placement(model, self.device)
        return model

    def rows_per_pass(self, loop: str, configured: passes.Configured, rows: int, encoder: passes.Encoder,
                      shape: passes.Shape) -> int:
        """How many of a batch's ``rows`` the loop ``loop`` puts through the model at once (``passes.sized``:
        ``configured`` when a number, else the largest pass that fits here), recorded for ``used``."""
        free = passes.free_bytes(self.device)
        if self.device.type == "cuda":          # blocks the caching allocator holds but nothing uses
            free += torch.cuda.memory_reserved(self.device) - torch.cuda.memory_allocated(self.device)
        autocast = self.autocast is not None
        chosen = passes.sized(configured, rows, encoder, shape, free, autocast, self.device.type)
        predicted = chosen * passes.row_bytes(encoder, shape, autocast, self.device.type)
        if self is not CPU:        # the shared default of models no job placed: nothing to record for
            self.chosen[loop] = {"rows": chosen, "of": rows, "configured": configured,
                                 "predicted_gb": round(predicted / 1e9, 3)}
        return chosen

    def inputs(self, batch: Any) -> Any:
        """``batch`` on the device (``moved``): the only way a batch reaches a placed model."""
        batch = moved(batch, self.device)
        audit.produced(batch)
        return batch

    def training_step(self) -> AbstractContextManager:
        """A training step's span: its fp32 products in TF32 where the execution chose bf16 on a GPU (``tf32``),
        in full fp32 otherwise; a validation or search between steps runs outside it, in fp32."""
        return tf32(self.tf32)

    def precision(self) -> AbstractContextManager:
        """The forward pass's autocast: bf16 when the execution has it, plain fp32 otherwise."""
        return torch.autocast(self.device.type, dtype=self.autocast or torch.float32, enabled=self.autocast is not None)

    def used(self) -> dict[str, Any]:
        """Where and in which precision models ran (what ``device: auto`` and ``precision: bf16`` became here),
        compiled or not, the rows per pass of each loop and, on a GPU, the most memory the job allocated."""
        used: dict[str, Any] = {"device": self.device.type,
                                "precision": "bf16" if self.autocast == torch.bfloat16 else "fp32"}
        if self.compile:
            used["compile"] = True
        if self.tf32:
            used["tf32"] = "training steps"
        if self.chosen:
            used["passes"] = {loop: dict(choice) for loop, choice in self.chosen.items()}
        if self.device.type == "cuda":
            used["max_allocated_gb"] = round(torch.cuda.max_memory_allocated(self.device) / 1e9, 3)
        return used

    def random_state(self) -> RandomState:
        """The state of every generator a forward pass on this device draws from (dropout: the device's)."""
        return torch.get_rng_state(), torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None

    def restore_random_state(self, state: RandomState) -> None:
        """Put back the generators ``random_state`` read, so a recomputed pass draws the same dropout masks."""
        cpu, device = state
        torch.set_rng_state(cpu)
        if device is not None:
            torch.cuda.set_rng_state(device, self.device)


def compile_models(model: nn.Module) -> None:
    """Compile, in place, each outermost Hugging Face model inside ``model`` (the encoder a ranker, retriever or
    pretraining model wraps; ``model`` itself when it is one): the hooks methods put on it are compiled with it, the
    parameter names stay as they are. Shapes that vary between batches are compiled dynamic after the first."""
    from transformers import PreTrainedModel

    inner: set[int] = set()
    for module in model.modules():
        if isinstance(module, PreTrainedModel) and id(module) not in inner:
            inner.update(id(sub) for sub in module.modules())
            module.compile()


CPU = Execution()     # what a model built outside a job (a unit test, a benchmark) runs on until placed


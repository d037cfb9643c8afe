"""The record of what entered each model of a job, and from where: the check that no job goes around the seam.

On a CPU-only machine every tensor is on the CPU, so "the batch is on the model's device" proves nothing there.
What the record checks instead holds on any machine: every model a job calls was placed by
``Execution.place``, and every integer or boolean tensor (ids, masks, labels: what a batch is made of) entering a
model's outermost call was handed out by ``Execution.inputs`` (or is a view of one), on the device the model was
placed on. A job that builds a model or a batch outside the seam would run on a GPU node's CPU or fail there; here
it leaves a violation in the record. Calls on no data (an empty tensor, as AdapterHub's reset of its prefix pool)
are configuration and not checked; a library running a module on its own tensors to save it is declared
(``bookkeeping``).

Off by default (no hook, no cost). With ``PEFTIR_SEAM_AUDIT`` set to a directory, every job
(``peftir.pipeline.job``) records its models' calls and writes ``<rule>-<pid>.json`` there; tests call
``recording()``. Float tensors entering a model come from another model's output or a loss (pooled vectors, the
hidden states an MLM head reads) and are checked for their device only.
"""
from __future__ import annotations

import json
import os
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:          # torch is imported where a recording starts: a job's process that hands its work to
    import torch           # the warm worker imports this module and must stay light
    from torch import nn

AUDIT_ENV = "PEFTIR_SEAM_AUDIT"
KEPT = 20             # violations kept in a record (the rest counted)


@dataclass
class Record:
    """One job's models (class and device), its outermost model calls and what went wrong."""

    job: str
    models: list[dict[str, str]] = field(default_factory=list)
    calls: int = 0
    violations: list[str] = field(default_factory=list)
    violation_count: int = 0

    def violation(self, what: str) -> None:
        """Count a violation; keep the first ``KEPT`` distinct ones, so a job that breaks the seam on every batch
        writes a short record."""
        self.violation_count += 1
        if len(self.violations) < KEPT and what not in self.violations:
            self.violations.append(what)


class _Recorder:
    """The process's recording: placed modules, tensors the seam handed out, the depth of module calls."""

    def __init__(self, job: str) -> None:
        from torch import nn

        self.record = Record(job)
        self.placed: weakref.WeakKeyDictionary[nn.Module, torch.device] = weakref.WeakKeyDictionary()
        self.produced: dict[int, weakref.ref] = {}     # by identity: tensors compare element-wise, not as objects
        self.depth = 0
        self.bookkeeping = 0          # > 0: a library computes what it saves (peft's prompts), not a batch
        self.handles = [
            nn.modules.module.register_module_forward_pre_hook(self._enter),
            nn.modules.module.register_module_forward_hook(self._leave, always_call=True)]

    def _enter(self, module: nn.Module, args: tuple) -> None:
        if self.depth == 0 and not self.bookkeeping and module not in self.placed and _carries_data(args):
            self.record.violation(f"{type(module).__name__} called without Execution.place")
        self.depth += 1

    def _leave(self, module: nn.Module, args: tuple, output: Any) -> None:
        self.depth -= 1

    def check_inputs(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        """A placed module's pre-hook: at the outermost call, where its inputs come from."""
        if self.depth != 1 or self.bookkeeping or not _carries_data((args, kwargs)):
            return
        self.record.calls += 1
        device = self.placed.get(module)
        for tensor in _tensors((args, kwargs)):
            name = type(module).__name__
            if device is not None and not _on(tensor, device):
                self.record.violation(f"{name} placed on {device} got a tensor on {tensor.device}")
            if not (tensor.is_floating_point() or tensor.is_complex()) and not self._from_seam(tensor):
                self.record.violation(f"{name} got a {tuple(tensor.shape)} {tensor.dtype} tensor that "
                                      f"Execution.inputs did not hand out")

    def produce(self, tensor: torch.Tensor) -> None:
        key = id(tensor)
        self.produced[key] = weakref.ref(tensor, lambda _: self.produced.pop(key, None))

    def _handed_out(self, tensor: torch.Tensor | None) -> bool:
        kept = None if tensor is None else self.produced.get(id(tensor))
        return kept is not None and kept() is tensor

    def _from_seam(self, tensor: torch.Tensor) -> bool:
        return self._handed_out(tensor) or self._handed_out(tensor._base)

    def close(self) -> Record:
        for handle in self.handles:
            handle.remove()
        return self.record


_active: _Recorder | None = None


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def _carries_data(value: Any) -> bool:
    """Whether a call gets any data: AdapterHub runs its prefix-tuning pool on an empty tensor whenever the active
    adapters change, which is configuration, not a forward pass."""
    return any(tensor.numel() for tensor in _tensors(value))


def _on(tensor: torch.Tensor, device: torch.device) -> bool:
    return tensor.device.type == device.type and (device.index is None or tensor.device.index == device.index)


def record_placement(model: nn.Module, device: torch.device) -> None:
    """``Execution.place`` calls this: the model and every module in it count as placed on ``device``."""
    if _active is None:
        return
    _active.record.models.append({"model": type(model).__name__, "device": str(device)})
    for module in model.modules():
        if module not in _active.placed:
            # first, before a method's own hooks rewrite the inputs (prompt-tuning widens the mask)
            module.register_forward_pre_hook(_active.check_inputs, with_kwargs=True, prepend=True)
        _active.placed[module] = device


def produced(batch: Any) -> None:
    """``Execution.inputs`` calls this: the tensors it handed out."""
    if _active is not None:
        for tensor in _tensors(batch):
            _active.produce(tensor)


@contextmanager
def bookkeeping() -> Iterator[None]:
    """A block in which a library runs a model's module on tensors of its own to save or count it (peft computes
    a prefix-tuned model's prompts to save them): no batch, not checked."""
    if _active is not None:
        _active.bookkeeping += 1
    try:
        yield
    finally:
        if _active is not None:
            _active.bookkeeping -= 1


def start(job: str) -> None:
    """Start recording this process's module calls as ``job`` (a no-op while a recording runs)."""
    global _active
    if _active is None:
        _active = _Recorder(job)


def stop() -> Record | None:
    """End the recording; what it recorded (None when none ran)."""
    global _active
    recorder, _active = _active, None
    return recorder.close() if recorder else None


@contextmanager
def recording(job: str = "test") -> Iterator[Record]:
    """Record the module calls of the block (the hooks placed on its models stay, inert, once it ends)."""
    start(job)
    try:
        yield _active.record
    finally:
        stop()


def job_directory() -> Path | None:
    """Where jobs write their records when the audit is on (``PEFTIR_SEAM_AUDIT``), else None."""
    directory = os.environ.get(AUDIT_ENV)
    return Path(directory) if directory else None


def write(record: Record, directory: Path) -> Path:
    """Write ``record`` as one JSON file per job process in ``directory`` (a test's, outside ``results/``)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{record.job.replace('/', '_')}-{os.getpid()}.json"
    path.write_text(json.dumps(vars(record), indent=1))
    return path

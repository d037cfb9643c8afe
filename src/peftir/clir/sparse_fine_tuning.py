"""Sparse fine-tuning masks (SFTMs): lottery-ticket sparse fine-tuning (Ansell et al. 2022), as Litschko et al. use it.

composable-sft, the authors' library, is not on PyPI; this module is its procedure (REFERENCE, modular-clir.md §5):

1. phase 1 fine-tunes every trainable parameter from θ0 to θ1 (an L1 pull toward θ0 if asked);
2. the mask keeps the K maskable entries with the largest |θ1 − θ0|, over all maskable parameters jointly
   (ties at the threshold kept, as ``np.partition`` does there);
3. every parameter, the head included, is reset to θ0 and phase 2 trains again with the maskable
   parameters' gradients multiplied by the mask (non-maskable trainable parameters, e.g. a ranking
   head, are trained densely), from a fresh optimizer and schedule;
4. the SFTM is θ2 − θ0 on the masked entries (``diffs``) plus the full values of the non-maskable trained
   parameters (``abs``). Composition adds diffs to θ0 (``apply``), so language and ranking masks add up.

Both phases train without weight decay (``WEIGHT_DECAY``), as composable-sft's trainer does (the Hugging Face
Trainer's default AdamW). With decay, phase 1's mask would favour the large weights decay moves most, and in
phase 2 AdamW would shrink every unmasked weight too (a masked gradient is zero, not absent): the model trained
would not be θ0 + the saved diffs.

K is set by the caller to the parameter count of the matching adapter (``peftir.clir.modular``), for a
fair comparison at equal size.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch
from torch import Tensor, nn

DIFF_EPSILON = 1e-7    # composable-sft keeps a masked entry only where |θ2 − θ0| exceeds this
WEIGHT_DECAY = 0.0     # both phases (module docstring)


@dataclass
class SparseFineTuning:
    """A sparse update of a model: ``diffs`` by parameter name (sparse COO tensors), ``abs`` full values."""

    diffs: dict[str, Tensor] = field(default_factory=dict)
    absolute: dict[str, Tensor] = field(default_factory=dict)

    def apply(self, model: nn.Module, with_abs: bool = True) -> None:
        """Add the diffs to the model's parameters (θ0 + M); with ``with_abs``, set the absolute ones too."""
        parameters = dict(model.named_parameters())
        with torch.no_grad():
            for name, diff in self.diffs.items():
                parameters[name].add_(diff.to(parameters[name].device).to_dense().to(parameters[name].dtype))
            if with_abs:
                for name, value in self.absolute.items():
                    parameters[name].copy_(value)

    def revert(self, model: nn.Module) -> None:
        """Subtract the diffs again (absolute values are not undone: reload the model for that)."""
        parameters = dict(model.named_parameters())
        with torch.no_grad():
            for name, diff in self.diffs.items():
                parameters[name].sub_(diff.to(parameters[name].device).to_dense().to(parameters[name].dtype))

    def size(self) -> int:
        """Entries the SFTM changes: the masked diffs' non-zeros plus the absolute parameters' sizes."""
        return sum(int(diff._nnz()) for diff in self.diffs.values()) + sum(v.numel() for v in self.absolute.values())

    def save(self, path: str | os.PathLike) -> None:
        torch.save({"diffs": {n: d.coalesce() for n, d in self.diffs.items()}, "abs": self.absolute}, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> SparseFineTuning:
        state = torch.load(path, map_location="cpu", weights_only=True)
        return cls(diffs=state["diffs"], absolute=state["abs"])


def snapshot(model: nn.Module, names: Iterable[str]) -> dict[str, Tensor]:
    """Copies of the named parameters' current values (θ0 of the next phase)."""
    parameters = dict(model.named_parameters())
    return {name: parameters[name].detach().clone() for name in names}


def restore(model: nn.Module, values: dict[str, Tensor]) -> None:
    parameters = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in values.items():
            parameters[name].copy_(value)


def top_k_mask(theta0: dict[str, Tensor], theta1: dict[str, Tensor], k: int) -> dict[str, Tensor]:
    """Boolean masks of the K entries with the largest |θ1 − θ0| over all parameters jointly (ties kept)."""
    changes = {name: (theta1[name] - theta0[name]).abs() for name in theta0}
    every = torch.cat([change.flatten() for change in changes.values()])
    if not 0 < k <= every.numel():
        raise ValueError(f"mask size {k} is not between 1 and the {every.numel()} maskable entries")
    threshold = torch.kthvalue(every, every.numel() - k + 1).values
    return {name: change >= threshold for name, change in changes.items()}


def l1_toward(model: nn.Module, theta0: dict[str, Tensor], weight: float) -> Tensor:
    """The L1 pull toward θ0: ``weight`` · Σ|θ − θ0| / N over the maskable parameters. composable-sft's 2022
    trainer summed every trainable parameter's distance (a head's too) and divided by all the model's parameters: a
    pull about 1.5 times weaker per weight for mBERT's language masks; its later versions dropped the term (named
    in the README)."""
    parameters = dict(model.named_parameters())
    total = sum((parameters[name] - value).abs().sum() for name, value in theta0.items())
    count = sum(value.numel() for value in theta0.values())
    return weight * total / count


def mask_gradients(model: nn.Module, masks: dict[str, Tensor]) -> Callable[[], None]:
    """Gradient hooks that zero the unmasked entries of the maskable parameters; returns their remover."""
    parameters = dict(model.named_parameters())
    handles = [parameters[name].register_hook(lambda grad, mask=mask: grad * mask.to(grad.dtype))
               for name, mask in masks.items()]
    return lambda: [handle.remove() for handle in handles]


def sparse_diffs(model: nn.Module, theta0: dict[str, Tensor], masks: dict[str, Tensor]) -> dict[str, Tensor]:
    """θ2 − θ0 on the masked entries whose change exceeds ``DIFF_EPSILON``, as sparse tensors."""
    parameters = dict(model.named_parameters())
    diffs = {}
    for name, start in theta0.items():
        diff = (parameters[name].detach() - start) * masks[name]
        diff = torch.where(diff.abs() > DIFF_EPSILON, diff, torch.zeros_like(diff))
        if diff.any():
            diffs[name] = diff.to_sparse().coalesce()
    return diffs


def lottery_ticket_sft(model: nn.Module, maskable: list[str], dense: list[str], k: int,
                       train_phase: Callable[[int, Callable[[], Tensor]], list[float]],
                       l1: tuple[float, float] = (0.0, 0.0)) -> tuple[SparseFineTuning, dict]:
    """Run both phases (module docstring). ``train_phase(phase, regulariser)`` trains the model's trainable
    parameters with a fresh optimizer, adding ``regulariser()`` to each step's loss, and returns its losses;
    ``l1`` = the L1 weights of phases 1 and 2. Returns the SFTM and a summary of the phases."""
    theta0 = snapshot(model, maskable)
    start = snapshot(model, maskable + dense)
    losses1 = train_phase(1, lambda: l1_toward(model, theta0, l1[0]))
    masks = top_k_mask(theta0, snapshot(model, maskable), k)
    restore(model, start)
    remove = mask_gradients(model, masks)
    try:
        losses2 = train_phase(2, lambda: l1_toward(model, theta0, l1[1]))
    finally:
        remove()
    sft = SparseFineTuning(diffs=sparse_diffs(model, theta0, masks),
                           absolute={name: value.detach().clone() for name, value in snapshot(model, dense).items()})
    selected = sum(int(mask.sum()) for mask in masks.values())
    return sft, {"mask_size": k, "masked_entries": selected, "changed_entries": sft.size() - sum(
        v.numel() for v in sft.absolute.values()), "dense_parameters": sum(v.numel() for v in sft.absolute.values()),
        "phase1_losses": losses1, "phase2_losses": losses2}

"""What a run learns: the parameters it saves, loads back and counts.

Trainable-parameter counts follow the paper's convention (REFERENCE.md §1): the parameters that
remain after training — learned encoder weights of every part, plus generated prompts and
prefixes, not their reparametrisation MLPs; the ranker head is not counted.
"""
from __future__ import annotations

import torch
from torch import nn

from torch.nn import Module as Ranker


def learned_parameters(ranker: Ranker) -> dict[str, nn.Parameter]:
    """What a run adds to or changes in the pretrained model: the method's modules (trained now or
    frozen from a first stage) and the head. All that must be saved to rebuild the run."""
    return {name: p for name, p in ranker.named_parameters()
            if p.requires_grad or name.startswith("peft.") or ".lora_" in name}


def learned_state(ranker: Ranker) -> dict[str, torch.Tensor]:
    """A copy of the learned parameters (what a run's weights file holds)."""
    return {name: p.detach().clone() for name, p in learned_parameters(ranker).items()}


def _check_names(state: dict, expected: set[str]) -> None:
    missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or unexpected:
        raise ValueError(f"saved weights do not match the method: missing {missing[:5]}, unexpected {unexpected[:5]}")


def load_learned_state(ranker: Ranker, state: dict[str, torch.Tensor]) -> None:
    """Load a run's saved weights; every learned parameter must be in ``state`` and nothing else."""
    _check_names(state, set(learned_parameters(ranker)))
    ranker.load_state_dict(state, strict=False)


def load_first_stage(ranker: Ranker, state: dict[str, torch.Tensor]) -> None:
    """Start a sequential hybrid from its first stage's kept weights (frozen modules and head).

    The state must cover every frozen learned parameter and may add only the head, which goes on
    training; the second stage's own modules start fresh.
    """
    learned = learned_parameters(ranker)
    second = {name for name, p in learned.items() if p.requires_grad and name.startswith(("bert.", "peft."))}
    _check_names(state, set(learned) - second)
    ranker.load_state_dict(state, strict=False)


def count_trainable(ranker: Ranker) -> int:
    """Parameters that remain after training (paper convention): learned encoder weights (all stages) plus
    the generated prompts/prefixes, not their reparametrisation MLPs; the ranker head is not counted."""
    encoder = sum(p.numel() for name, p in learned_parameters(ranker).items() if name.startswith("bert."))
    return encoder + sum(module.generated_parameters for module in ranker.peft.values())

"""Fine-tuning methods: which parameters of a ranker train, and at which learning rate.

A method freezes or augments the ranker's BERT in place and returns Adam
parameter groups. The ranker head (everything outside ``ranker.bert``) always
trains at the head learning rate (Table 8). Trainable-parameter counts follow
the paper's convention: parameters of the encoder that remain after training,
the ranker head excluded (REFERENCE.md §1).
"""
from __future__ import annotations

from typing import Callable

import torch
from peft import LoraConfig, inject_adapter_in_model
from torch import nn

from . import catalogue
from .prefix import KeyValuePrefixTuning, PrefixTuning, PromptTuning
from .rankers import Ranker
from .semi_siamese import SemiSiameseLoRA, SemiSiamesePrefixTuning

ParamGroups = list[dict]


def full_finetuning(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Every BERT weight trains at the BERT learning rate."""
    for parameter in ranker.bert.parameters():
        parameter.requires_grad_(True)
    return [{"params": list(ranker.bert.parameters()), "lr": lr["bert"]}]


def lora_config(settings: dict) -> LoraConfig:
    """peft LoRA config; ``scaling`` picks alpha/r (peft, Hu et al.) or r/alpha (the released code)."""
    rank, alpha = settings["rank"], settings["alpha"]
    if settings["scaling"] == "r_over_alpha":
        alpha = rank * rank / alpha  # peft scales by alpha'/r; alpha' = r²/alpha gives r/alpha
    return LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=settings["dropout"],
                      target_modules=list(settings["target_modules"]), bias="none")


def freeze(ranker: Ranker) -> None:
    for parameter in ranker.bert.parameters():
        parameter.requires_grad_(False)


def lora(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT plus rank-r updates on the configured projections (query and value by default)."""
    freeze(ranker)
    inject_adapter_in_model(lora_config(settings), ranker.bert, adapter_name="default")
    return _lora_groups(ranker, ["default"], lr)


def _lora_groups(ranker: Ranker, adapters: list[str], lr: dict) -> ParamGroups:
    """The named adapters' LoRA matrices, trainable at the PEFT learning rate (an earlier stage's stay frozen)."""
    params = [p for name, p in ranker.bert.named_parameters()
              if any(f".lora_A.{a}." in name or f".lora_B.{a}." in name for a in adapters)]
    for parameter in params:
        parameter.requires_grad_(True)
    return [{"params": params, "lr": lr["peft"]}]


def _bottleneck(ranker: Ranker, settings: dict) -> int:
    """The reparametrisation MLP's width, given at BERT-base size (768) and scaled to the backbone."""
    return max(1, round(settings["bottleneck"] * ranker.hidden / 768))


def _attach(ranker: Ranker, name: str, module: nn.Module, lr: dict) -> ParamGroups:
    ranker.peft[name] = module
    return [{"params": list(module.parameters()), "lr": lr["peft"]}]


def prompt_tuning(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT; soft prompts before [CLS]. Sequences shrink by the prompt length to keep within positions."""
    freeze(ranker)
    ranker.max_seq_len -= settings["length"]
    return _attach(ranker, "prompt", PromptTuning(ranker.bert, settings["length"], _bottleneck(ranker, settings)), lr)


def prefix_tuning(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT; per-layer prefixes (hidden-state prefixes, the paper's; or Li & Liang's key/value)."""
    freeze(ranker)
    kind = {"hidden": PrefixTuning, "kv": KeyValuePrefixTuning}[settings["kind"]]
    return _attach(ranker, "prefix", kind(ranker.bert, settings["length"], _bottleneck(ranker, settings)), lr)


def ss_prefix_tuning(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT; query and document prefixes from one shared source (Table 6 variant)."""
    if settings["kind"] != "hidden":
        raise ValueError("semi-Siamese prefix-tuning is defined on hidden-state prefixes (methods.prefix.kind: hidden)")
    freeze(ranker)
    module = SemiSiamesePrefixTuning(ranker.bert, settings["length"], _bottleneck(ranker, settings),
                                     settings["variant"], settings["common_length"])
    ranker.role_hooks.append(module.set_role)
    return _attach(ranker, "ss_prefix", module, lr)


def ss_lora(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT; LoRA shared on one projection, per role on the other (Table 7 variant)."""
    freeze(ranker)
    module = SemiSiameseLoRA(ranker.bert, lora_config(settings), settings["variant"])
    ranker.role_hooks.append(module.set_role)
    ranker.peft["ss_lora"] = module
    return _lora_groups(ranker, module.adapters, lr)


BUILDERS: dict[str, Callable[[Ranker, dict, dict], ParamGroups]] = {
    "full": full_finetuning,
    "prompt": prompt_tuning,
    "prefix": prefix_tuning,
    "lora": lora,
    "ss_prefix": ss_prefix_tuning,
    "ss_lora": ss_lora,
}


def _build(ranker: Ranker, method: str, settings: dict, lr: dict) -> ParamGroups:
    """Attach ``method``'s modules; composites attach their parts (a sequential one freezes its first)."""
    entry = catalogue.spec(method)
    if entry.bi_encoder_only and not ranker.bi_encoder:
        raise ValueError(f"{method} is semi-Siamese: it applies to bi-encoders (twinbert, colbert) only")
    if not entry.parts:
        return BUILDERS[entry.builder](ranker, settings, lr)
    first, second = entry.parts
    groups = _build(ranker, first, settings[first], lr)
    if entry.sequential:   # the first stage is loaded from its own run and frozen (load_first_stage)
        for parameter in learned_parameters(ranker).values():
            parameter.requires_grad_(False)
        groups = []
    return groups + _build(ranker, second, settings[second], lr)


def apply(ranker: Ranker, method: str, settings: dict, lr: dict) -> ParamGroups:
    """Prepare ``ranker`` for ``method`` (with ``catalogue.settings_for`` settings); Adam groups include the head's."""
    groups = _build(ranker, method, settings, lr)
    for parameter in ranker.head_parameters():
        parameter.requires_grad_(True)
    return groups + [{"params": ranker.head_parameters(), "lr": lr["ranker"]}]


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

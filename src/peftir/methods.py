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
    return _lora_groups(ranker, lr)


def _lora_groups(ranker: Ranker, lr: dict) -> ParamGroups:
    """Every LoRA matrix in the encoder, trainable at the PEFT learning rate."""
    params = [p for name, p in ranker.bert.named_parameters() if "lora_" in name]
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


def concurrent_prefix_lora(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Prefix-tuning and LoRA trained together (paper Figure 4's "concurrent" hybrid)."""
    return prefix_tuning(ranker, settings["prefix"], lr) + lora(ranker, settings["lora"], lr)


def _bi_encoder_only(ranker: Ranker, method: str) -> None:
    if not ranker.bi_encoder:
        raise ValueError(f"{method} is semi-Siamese: it applies to bi-encoders (twinbert, colbert) only")


def ss_prefix_tuning(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT; query and document prefixes from one shared source (Table 6 variant)."""
    _bi_encoder_only(ranker, "ss_prefix")
    freeze(ranker)
    module = SemiSiamesePrefixTuning(ranker.bert, settings["length"], _bottleneck(ranker, settings),
                                     settings["variant"], settings["common_length"])
    ranker.role_hooks.append(module.set_role)
    return _attach(ranker, "ss_prefix", module, lr)


def ss_lora(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT; LoRA shared on one projection, per role on the other (Table 7 variant)."""
    _bi_encoder_only(ranker, "ss_lora")
    freeze(ranker)
    module = SemiSiameseLoRA(ranker.bert, lora_config(settings), settings["variant"])
    ranker.role_hooks.append(module.set_role)
    ranker.peft["ss_lora"] = module
    return _lora_groups(ranker, lr)


METHODS: dict[str, Callable[[Ranker, dict, dict], ParamGroups]] = {
    "full": full_finetuning,
    "prompt": prompt_tuning,
    "prefix": prefix_tuning,
    "lora": lora,
    "lora_pp": lora,               # LoRA++: the same module, with attention.output.dense among its targets
    "prefix_lora": concurrent_prefix_lora,
    "ss_prefix": ss_prefix_tuning,
    "ss_lora": ss_lora,
}


def apply(ranker: Ranker, method: str, settings: dict, lr: dict) -> ParamGroups:
    """Prepare ``ranker`` for ``method`` (with that method's ``settings``); Adam groups include the head's."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
    groups = METHODS[method](ranker, settings, lr)
    for parameter in ranker.head_parameters():
        parameter.requires_grad_(True)
    return groups + [{"params": ranker.head_parameters(), "lr": lr["ranker"]}]


def trainable_state(ranker: Ranker) -> dict[str, torch.Tensor]:
    """The parameters a run learns (method modules + head): all that must be saved to rebuild it."""
    return {name: p.detach().clone() for name, p in ranker.named_parameters() if p.requires_grad}


def load_trainable_state(ranker: Ranker, state: dict[str, torch.Tensor]) -> None:
    """Load saved weights; every trainable parameter must be in ``state`` and nothing else."""
    expected = {name for name, p in ranker.named_parameters() if p.requires_grad}
    if set(state) != expected:
        missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
        raise ValueError(f"saved weights do not match the method: missing {missing[:5]}, unexpected {unexpected[:5]}")
    ranker.load_state_dict(state, strict=False)


def count_trainable(ranker: Ranker) -> int:
    """Parameters that remain after training (paper convention): trainable encoder weights plus the
    generated prompts/prefixes, not their reparametrisation MLPs; the ranker head is not counted."""
    encoder = sum(p.numel() for p in ranker.bert.parameters() if p.requires_grad)
    return encoder + sum(module.generated_parameters for module in ranker.peft.values())

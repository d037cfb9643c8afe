"""LoRA (and LoRA++, the same builder with the attention-output dense layer among its targets) via peft."""
from __future__ import annotations

from peft import LoraConfig, inject_adapter_in_model

from ..rankers import Ranker
from .base import ParamGroups, freeze


def lora_config(settings: dict) -> LoraConfig:
    """peft LoRA config; ``scaling`` picks alpha/r (peft, Hu et al.) or r/alpha (the released code)."""
    rank, alpha = settings["rank"], settings["alpha"]
    if settings["scaling"] == "r_over_alpha":
        alpha = rank * rank / alpha  # peft scales by alpha'/r; alpha' = r²/alpha gives r/alpha
    return LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=settings["dropout"],
                      target_modules=list(settings["target_modules"]), bias="none")


def lora_groups(ranker: Ranker, adapters: list[str], lr: dict) -> ParamGroups:
    """The named adapters' LoRA matrices, trainable at the PEFT learning rate (an earlier stage's stay frozen)."""
    params = [p for name, p in ranker.bert.named_parameters()
              if any(f".lora_A.{a}." in name or f".lora_B.{a}." in name for a in adapters)]
    for parameter in params:
        parameter.requires_grad_(True)
    return [{"params": params, "lr": lr["peft"]}]


def build(ranker: Ranker, settings: dict, lr: dict) -> ParamGroups:
    """Frozen BERT plus rank-r updates on the configured projections (query and value by default)."""
    freeze(ranker)
    inject_adapter_in_model(lora_config(settings), ranker.bert, adapter_name="default")
    return lora_groups(ranker, ["default"], lr)

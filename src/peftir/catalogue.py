"""The fine-tuning methods the workflow knows by name, and how each one's settings are assembled.

Standard library only: the Snakefile plans jobs from this table (without
importing torch), and ``methods.apply`` builds rankers from it. A method is
either built directly (``builder``, from the config entries it names, plus a
fixed variant for the Table 6/7 variants), or combines two named methods, at
the same time (the concurrent hybrid) or one after the other (sequential
hybrids: the first part is trained, kept and frozen before the second trains).
Settings come only from the config entries a method uses, so changing one
entry reruns exactly the methods built from it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    builder: str | None = None              # methods.BUILDERS key (simple methods)
    entries: tuple[str, ...] = ()           # config `methods` entries merged into the settings
    variant: str | None = None              # fixed variant (semi-Siamese Tables 6 and 7)
    parts: tuple[str, ...] = ()             # composite: the named methods it combines, in order
    sequential: bool = False                # composite trained part after part, the first frozen
    bi_encoder_only: bool = False           # semi-Siamese: query and document paths differ


def _sequential(first: str, second: str) -> Method:
    return Method(parts=(first, second), sequential=True,
                  bi_encoder_only=first.startswith("ss_") or second.startswith("ss_"))


CATALOGUE: dict[str, Method] = {
    "full": Method("full", ("full",)),
    "prompt": Method("prompt", ("prompt",)),
    "prefix": Method("prefix", ("prefix",)),
    "lora": Method("lora", ("lora",)),
    "lora_pp": Method("lora", ("lora_pp",)),            # LoRA++: LoRA whose targets add attention.output.dense
    "prefix_lora": Method(parts=("prefix", "lora")),    # concurrent hybrid (Figure 4)
    "prefix_then_lora": _sequential("prefix", "lora"),
    "lora_then_prefix": _sequential("lora", "prefix"),
    "ss_prefix": Method("ss_prefix", ("prefix", "ss_prefix"), "average", bi_encoder_only=True),
    "ss_prefix_concat": Method("ss_prefix", ("prefix", "ss_prefix"), "concat", bi_encoder_only=True),
    "ss_prefix_none": Method("ss_prefix", ("prefix", "ss_prefix"), "none", bi_encoder_only=True),
    "ss_lora": Method("ss_lora", ("lora",), "hetero_value", bi_encoder_only=True),
    "ss_lora_hetero_query": Method("ss_lora", ("lora",), "hetero_query", bi_encoder_only=True),
    "ss_lora_none": Method("ss_lora", ("lora",), "none", bi_encoder_only=True),
    "prefix_then_ss_lora": _sequential("prefix", "ss_lora"),
    "ss_lora_then_prefix": _sequential("ss_lora", "prefix"),
}
BASELINE = "full"          # every table's t-tests compare against full fine-tuning
BEST_OF = "lft_best"       # Table 5's "LFT (best)" row: per column, the best method of another table


def spec(method: str) -> Method:
    if method not in CATALOGUE:
        raise ValueError(f"unknown method {method!r}; allowed: {', '.join(CATALOGUE)}")
    return CATALOGUE[method]


def settings_for(method: str, configured: dict) -> dict:
    """The settings a method's jobs get: its entries merged (plus its variant), or its parts' settings."""
    entry = spec(method)
    if entry.parts:
        return {part: settings_for(part, configured) for part in entry.parts}
    settings = {key: value for name in entry.entries for key, value in configured[name].items()}
    return settings if entry.variant is None else {**settings, "variant": entry.variant}


def first_stage(method: str) -> str | None:
    """The method whose kept weights a sequential hybrid starts from (frozen), else None."""
    entry = spec(method)
    return entry.parts[0] if entry.sequential else None

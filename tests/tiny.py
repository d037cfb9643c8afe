"""A tiny randomly initialised BERT (no download) for fast, exact unit tests of rankers and methods."""
from __future__ import annotations

from pathlib import Path

import torch
import yaml
from transformers.models.bert.modeling_bert import BertConfig

from peftir.semi_siamese.contract import resolve_method
from peftir.semi_siamese.configured import apply
from peftir.models import backbone
from peftir.semi_siamese import rankers as models

SETTINGS = {"max_query_len": 6, "max_doc_len": 40, "max_seq_len": 24,
            "monobert": {"dropout": 0.1}, "twinbert": {"pooling": "mean"}, "colbert": {"dim": 8}}
CONFIGURED = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())["methods"]
LR = {"ranker": 1e-2, "bert": 1e-2, "peft": 1e-2}


def tiny_backbone(layers: int = 2, hidden: int = 32) -> backbone.Backbone:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                        intermediate_size=2 * hidden, max_position_embeddings=128, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    return backbone.from_config(config)


def tiny_ranker(name: str, **overrides) -> models.Ranker:
    loaded = tiny_backbone()
    settings = {**SETTINGS, **overrides}
    return models.build(name, loaded.model, loaded.tokenizer, settings)


def method(name: str, **entries: dict) -> dict:
    """Method ``name`` resolved from config.yaml's `methods`, with some entries replaced."""
    return resolve_method(name, {**CONFIGURED, **entries})


def apply_method(ranker: models.Ranker, name: str, lr: dict = LR, **entries: dict) -> list[dict]:
    """Attach method ``name`` (config.yaml's settings, ``entries`` replaced) as a job does."""
    return apply(ranker, method(name, **entries), lr)


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def backbone_weights(ranker: models.Ranker) -> dict[str, torch.Tensor]:
    """BERT's own weights by their original names (peft moves a wrapped layer's to ``base_layer``)."""
    return {name.replace(".base_layer.", "."): p.detach().clone() for name, p in ranker.bert.named_parameters()
            if "lora_" not in name}


class Pretokenized(dict):
    """Word-piece ids given by hand, looked up as a job looks up ``peftir.models.inputs.Tokenized``."""

    def many(self, keys):
        return [self[key] for key in keys]

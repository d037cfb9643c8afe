"""A tiny randomly initialised BERT (no download) for fast, exact unit tests of the rankers."""
from __future__ import annotations

import torch
from transformers.models.bert.modeling_bert import BertConfig

from peftir import backbone, rankers

SETTINGS = {"max_query_len": 6, "max_doc_len": 40, "max_seq_len": 24,
            "monobert": {"dropout": 0.1}, "twinbert": {"pooling": "mean"}, "colbert": {"dim": 8}}


def tiny_backbone(layers: int = 2, hidden: int = 32) -> backbone.Backbone:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                        intermediate_size=2 * hidden, max_position_embeddings=128, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    return backbone.from_config(config)


def tiny_ranker(name: str, **overrides) -> rankers.Ranker:
    loaded = tiny_backbone()
    settings = {**SETTINGS, **overrides}
    return rankers.build(name, loaded.model, loaded.tokenizer, settings)


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def backbone_weights(ranker: rankers.Ranker) -> dict[str, torch.Tensor]:
    """BERT's own weights by their original names (peft moves a wrapped layer's to ``base_layer``)."""
    return {name.replace(".base_layer.", "."): p.detach().clone() for name, p in ranker.bert.named_parameters()
            if "lora_" not in name}

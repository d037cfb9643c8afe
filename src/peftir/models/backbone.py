"""Loading the BERT backbone and its tokenizer (``peftir.contract.backbones`` finds its files)."""
from __future__ import annotations

from dataclasses import dataclass

from transformers import AutoTokenizer, PreTrainedTokenizerBase
from transformers.models.bert.modeling_bert import BertConfig, BertModel
from transformers.utils import logging as hf_logging

from ..errors import ActionableError
from ..contract.backbones import EMBEDDED, resolve


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
    pretrained = BertConfig.from_pretrained(path)
    if layers and layers > pretrained.num_hidden_layers:
        # from_pretrained would add the missing layers randomly initialised, under a silenced warning
        raise ActionableError(f"backbone.layers = {layers}: {name} has {pretrained.num_hidden_layers} "
                              f"pretrained layers; use at most that (or null for all)")
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

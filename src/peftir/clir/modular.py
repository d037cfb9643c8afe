"""Language and ranking modules on one multilingual encoder (Litschko et al.): AdapterHub adapters and SFTMs.

Adapters go through the ``adapters`` library's public API (REFERENCE, adapters-api.md): a language adapter
(LA) is a Pfeiffer bottleneck after each FFN with a NICE invertible adapter on the embeddings and its inverse
before the MLM decoder (``SeqBnInvConfig``, the old "pfeiffer+inv"); a ranking adapter (RA) is a Pfeiffer
bottleneck (``SeqBnConfig``) trained stacked on the source-language LA (``Stack(la, ra)``) with a one-logit
head. SFTMs (``peftir.clir.sparse_fine_tuning``) are sparse diffs added to the encoder.

A model here is an ``AutoAdapterModel`` (flexible heads): its MLM head ("default", converted from the
checkpoint's) applies the LA's inverse invertible adapter, as the authors' adapter-transformers did.
"""
from __future__ import annotations

from pathlib import Path

import torch
from adapters import AutoAdapterModel, ForwardContext, SeqBnConfig, SeqBnInvConfig
from torch import Tensor, nn
from transformers import AutoTokenizer, PreTrainedTokenizerBase
from transformers.utils import logging as hf_logging

from ..contract.backbones import resolve
from ..errors import ActionableError
from ..execution.seam import Execution

MLM_HEAD = "default"          # the checkpoint's MLM head as AdapterHub converts it
RANKING_ADAPTER = "ranking"
RANKING_HEAD = RANKING_ADAPTER   # AdapterHub saves and loads a head with the adapter of the same name


def language_adapter_name(language: str) -> str:
    return f"la_{language}"


def load_encoder(path: str | Path, with_mlm_head: bool, pooler: bool) -> tuple[nn.Module, PreTrainedTokenizerBase]:
    """The encoder checkpoint (a directory or a hub name, pinned or not) as an ``AutoAdapterModel`` and its
    tokenizer; its MLM head kept only when asked.
    The pooler is frozen out of every count and update unless the ranking head uses it (a checkpoint without a
    trained pooler, as multilingual-e5, gets a random one, which AdapterHub's forward still computes). A ranking head
    on the pooler (``pooler``) of a checkpoint that has none is refused: every job would draw its own random pooler,
    which no module saves, so a ranking module would be scored through another pooler than it trained with."""
    path = resolve(str(path))
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()     # a checkpoint without a pooler (multilingual-e5) is expected, not news
    try:
        model, loading = AutoAdapterModel.from_pretrained(path, output_loading_info=True)
    finally:
        hf_logging.set_verbosity(verbosity)
    drawn = sorted(key for key in loading["missing_keys"] if ".pooler." in f".{key}")
    if pooler and drawn:
        raise ActionableError(f"{path}: clir.backbone.head_pooler is true, but the checkpoint has no trained pooler "
                              f"({', '.join(drawn)} would be drawn at random, anew in each job); set head_pooler: "
                              f"false for a checkpoint without one (multilingual-e5), or use one that has it (mBERT)")
    if not with_mlm_head and MLM_HEAD in model.heads:
        model.delete_head(MLM_HEAD)
    if not pooler:
        for parameter in model.base_model.pooler.parameters():
            parameter.requires_grad = False
    return model, AutoTokenizer.from_pretrained(path)


def language_adapter_config(reduction_factor: int, non_linearity: str = "relu") -> SeqBnInvConfig:
    """Pfeiffer + NICE invertible adapter (the paper: reduction factor 2, relu). The non-linearity does not
    change the size, so an SFTM's K needs only the reduction factor."""
    return SeqBnInvConfig(reduction_factor=reduction_factor, non_linearity=non_linearity)


def ranking_adapter_config(reduction_factor: int, non_linearity: str) -> SeqBnConfig:
    return SeqBnConfig(reduction_factor=reduction_factor, non_linearity=non_linearity)


def add_ranking_head(model: nn.Module, pooler: bool) -> None:
    """One logit from the [CLS] output: through BERT's pooler (tanh, frozen with the encoder) when the
    checkpoint has a trained one (mBERT), as BertForSequenceClassification; directly otherwise."""
    model.add_classification_head(RANKING_HEAD, num_labels=1, layers=1, use_pooler=pooler)
    model.active_head = RANKING_HEAD


def ranking_logits(model: nn.Module, encoded: dict[str, Tensor], execution: Execution) -> Tensor:
    """The ranking head's logit of each (query, document) pair in ``encoded`` (on the execution's device): the
    encoder, with whatever adapters, masks and compositions are active, in the execution's precision; the pooler
    and the head in fp32, as every score of the package (in bf16 logits a few units large are about 0.02 apart, and
    a hundred candidates' ties would be broken by document id). The encoder runs inside the forward context the
    model's own forward opens, which its adapters read."""
    head = model.heads[RANKING_HEAD]
    with ForwardContext(model, **encoded):
        with execution.precision():
            states = model.base_model(**encoded).last_hidden_state
    with torch.autocast(execution.device.type, enabled=False):
        states = states.float()
        pooled = model.base_model.pooler(states) if head.config["use_pooler"] else None
        return head((states,), cls_output=pooled, attention_mask=encoded.get("attention_mask"))[0][:, 0]


def adapter_parameters(model: nn.Module, name: str) -> int:
    """An adapter's parameter count (its bottlenecks and invertible adapter), from AdapterHub's own summary."""
    for row in model.adapter_summary(as_dict=True):
        if row["name"] == name:
            return int(row["#param"])
    raise KeyError(f"no adapter {name!r} in the model")


def adapter_size(model: nn.Module, config) -> int:
    """The size an adapter of ``config`` would have on this model (an SFTM's K), measured by adding and removing it."""
    model.add_adapter("size_probe", config=config)
    size = adapter_parameters(model, "size_probe")
    model.delete_adapter("size_probe")
    return size


def head_parameters(model: nn.Module, head: str) -> int:
    return sum(p.numel() for p in model.heads[head].parameters())


def trainable_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def encoder_parameter_names(model: nn.Module, freeze_layer_norm: bool) -> list[str]:
    """The encoder's parameters an SFTM may change (composable-sft: the trainable ``bert.*``; LayerNorms left
    out when frozen), never a head's."""
    prefix = model.base_model_prefix + "."
    return [name for name, p in model.named_parameters()
            if p.requires_grad and name.startswith(prefix) and not (freeze_layer_norm and "LayerNorm" in name)]


def freeze_all_but(model: nn.Module, names: set[str]) -> None:
    for name, parameter in model.named_parameters():
        parameter.requires_grad = name in names


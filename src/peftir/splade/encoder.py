"""The SPLADE encoder (Formal et al.; Adapters-SPLADE eq. 4–5) and how each method makes it trainable.

A text's representation is ``max over its tokens of log(1 + ReLU(MLM logits))``, padding masked out (the
released ``Splade`` with ``agg="max"``; the product with the mask is exact because every value is ≥ 0), one
weight per vocabulary entry; a document's score for a query is the dot product.

Methods (REFERENCE ``reference/splade-adapters.md``), all through AdapterHub ``adapters``' public API:

- ``ft``: every parameter trains;
- ``adapter``: one Houlsby adapter set (``DoubleSeqBnConfig``: after attention and after the FFN, swish,
  reduction factor 16) shared by queries and documents on the frozen backbone; the MLM head trains too, its
  decoder bias included (adapter-transformers 2.x/3.x, which the authors used, left it trainable; adapters 1.x
  freezes it, so it is unfrozen here: 1,517,178 trainable parameters at DistilBERT = the paper's 2.23 %);
- ``bi_adapter``: a query adapter set and a document adapter set on one frozen backbone, each side with its own
  MLM head (the released code holds two whole copies of the backbone, both frozen: the same function and
  trainable parameters, half the memory here);
- ``leave_out``: the layers (0-based from the input) without adapters, Table 4's ablation.
"""
from __future__ import annotations

import copy
from contextlib import nullcontext

import adapters
import torch
from adapters import AdapterSetup, DoubleSeqBnConfig, Stack
from torch import Tensor, nn
from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer, PreTrainedModel

from ..contract.backbones import resolve
from ..execution.seam import CPU

QUERY, DOCUMENT = "query", "document"
METHODS = ("ft", "adapter", "bi_adapter", "none")     # none: the backbone as it comes (a trained SPLADE, zero-shot)
SHARED = "splade"          # the mono-adapter's adapter set


def splade_pooling(logits: Tensor, attention_mask: Tensor) -> Tensor:
    """Eq. 5: each vocabulary entry's weight, the maximum over the unmasked tokens of log(1 + ReLU(logit)). Without
    gradients (encoding a corpus) it works in place on the logits, the batch's only |V|-wide tensor then."""
    mask = attention_mask.unsqueeze(-1)
    if logits.requires_grad:
        return (torch.log1p(torch.relu(logits)) * mask).max(dim=1).values
    return logits.relu_().log1p_().mul_(mask).max(dim=1).values


class Splade(nn.Module):
    """Queries and documents through one masked LM (``ft``, ``adapter``), or through their own adapter set and
    MLM head on a shared frozen backbone (``bi_adapter``: ``query_model`` shares ``model``'s backbone)."""

    def __init__(self, model: PreTrainedModel, tokenizer, max_len: dict[str, int],
                 query_model: PreTrainedModel | None = None, adapter_of: dict[str, str] | None = None) -> None:
        super().__init__()
        self.model, self.query_model, self.tokenizer = model, query_model, tokenizer
        self.max_len, self.adapter_of = max_len, adapter_of or {}
        self.execution = CPU          # where it runs and in which precision: ``Execution.place`` sets it

    def vocabulary(self) -> list[str]:
        """The word pieces in vocabulary order: a representation's entry j is the weight of piece j."""
        pieces = self.tokenizer.convert_ids_to_tokens(list(range(self.model.config.vocab_size)))
        return [piece if piece is not None else f"[id{index}]" for index, piece in enumerate(pieces)]

    def encode(self, texts: list[str], role: str) -> Tensor:
        """The texts' SPLADE vectors (len(texts) × |V|), cropped to the role's maximum length."""
        batch = self.execution.inputs(self.tokenizer(texts, truncation=True, max_length=self.max_len[role],
                                                     padding=True, return_tensors="pt"))
        model = self.query_model if role == QUERY and self.query_model is not None else self.model
        adapter = self.adapter_of.get(role)
        with AdapterSetup(adapter) if adapter else nullcontext(), self.execution.precision():
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        return splade_pooling(logits.float(), batch["attention_mask"])


def masked_lm(path: str, layers: int | None = None) -> tuple[PreTrainedModel, object]:
    """A checkpoint (a directory or a hub name, pinned or not) with its MLM head (``AutoModelForMaskedLM``: BERT,
    DistilBERT, RoBERTa), its lowest ``layers`` layers when given, and its tokenizer."""
    path = resolve(path)
    config = AutoConfig.from_pretrained(path)
    if layers:
        setattr(config, "n_layers" if config.model_type == "distilbert" else "num_hidden_layers", layers)
    return AutoModelForMaskedLM.from_pretrained(path, config=config), AutoTokenizer.from_pretrained(path)


def offset_logits(model: PreTrainedModel, offset: float) -> None:
    """Add ``offset`` to every MLM logit (through the decoder bias). A pretrained BERT's head puts most logits well
    below 0, so a SPLADE vector starts with hundreds of pieces; a head fitted briefly by cross-entropy (which does
    not see the logits' level), as the embedded MiniLM's, is centred on 0 and its vectors start with nearly the
    whole vocabulary, which a short schedule's FLOPS term cannot undo. Ours, named: 0 for a pretrained head."""
    if offset:
        with torch.no_grad():
            model.get_output_embeddings().bias += offset


def adapter_config(method: dict) -> DoubleSeqBnConfig:
    """Houlsby adapters (adapters 1.x's ``DoubleSeqBnConfig``, the old "houlsby") at the method's reduction
    factor, without those of the layers in ``leave_out``."""
    return DoubleSeqBnConfig(reduction_factor=method["reduction_factor"], leave_out=list(method.get("leave_out") or []))


def _train_head_bias(model: PreTrainedModel) -> None:
    """The MLM decoder's bias trains with the adapters (its weight stays tied to the frozen word embeddings)."""
    model.get_output_embeddings().bias.requires_grad = True


def with_method(model: PreTrainedModel, tokenizer, method: dict, max_len: dict[str, int]) -> Splade:
    """The SPLADE encoder of ``method`` (``name``: ft, adapter, bi_adapter, none; ``reduction_factor``,
    ``leave_out``) on a masked LM as loaded."""
    name = method["name"]
    if name == "ft":
        return Splade(model, tokenizer, max_len)
    if name == "none":
        model.requires_grad_(False)
        return Splade(model, tokenizer, max_len)
    if name not in METHODS:
        raise ValueError(f"SPLADE method {name!r}: one of {', '.join(METHODS)}")
    adapters.init(model)
    if name == "adapter":
        model.add_adapter(SHARED, config=adapter_config(method))
        model.train_adapter(SHARED)
        _train_head_bias(model)
        return Splade(model, tokenizer, max_len)
    for role in (QUERY, DOCUMENT):
        model.add_adapter(role, config=adapter_config(method))
    model.train_adapter(Stack(QUERY, DOCUMENT))   # both trainable; each forward picks one (``AdapterSetup``)
    _train_head_bias(model)
    query_model = copy.deepcopy(model)           # its own MLM head; then the backbone (with both adapter sets) shared
    setattr(query_model, model.base_model_prefix, model.base_model)
    query_model.tie_weights()
    return Splade(model, tokenizer, max_len, query_model, {QUERY: QUERY, DOCUMENT: DOCUMENT})


def parameter_counts(encoder: Splade) -> dict[str, int | float]:
    """Trainable parameters, all parameters held here, and the paper's percentage: trainable over the model as the
    released code builds it (the frozen backbone, twice for the bi-adapter's two copies, plus what trains: the
    paper's "1.5M/67M", "3M/135M")."""
    trainable = sum(p.numel() for p in encoder.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in encoder.parameters() if not p.requires_grad)
    copies = 2 if encoder.query_model is not None else 1
    released = copies * frozen + trainable
    return {"trainable": trainable, "total": trainable + frozen, "released_model": released,
            "percent_trainable": round(100 * trainable / released, 3)}

"""Adapters-SPLADE's rerankers (Table 7): a cross-encoder initialised from a first-stage model's encoder.

``[CLS] query [SEP] document [SEP]`` (the document as segment B where the backbone has segment embeddings, as
monoBERT) through the backbone's encoder (``AutoModel``: a DistilBERT, a SPLADE
checkpoint without its MLM head, TCT-ColBERT's BERT), a linear head on [CLS] initialised at random (§4.4), fully
fine-tuned (``ft``) or through Houlsby adapters with the head trainable (``adapter``: the same
``DoubleSeqBnConfig`` as the SPLADE adapters, ``peftir.splade.encoder.adapter_config``).
"""
from __future__ import annotations

import adapters
from torch import Tensor, nn
from transformers import AutoModel, AutoTokenizer, PreTrainedModel

from ..execution.seam import CPU, Execution
from .encoder import adapter_config
from ..contract.backbones import resolve

METHODS = ("ft", "adapter")
ADAPTER = "rerank"          # the adapter set's name


class CrossEncoder(nn.Module):
    def __init__(self, encoder: PreTrainedModel, tokenizer, max_len: int) -> None:
        super().__init__()
        self.encoder, self.tokenizer, self.max_len = encoder, tokenizer, max_len
        self.head = nn.Linear(encoder.config.hidden_size, 1)
        # the query as segment A and the document as segment B where the backbone has segment embeddings (BERT,
        # SPLADE++'s, TCT-ColBERT's; DistilBERT has none): frozen under adapters, nothing could learn them otherwise
        self.segments = getattr(encoder.config, "type_vocab_size", 0) > 1
        self.execution = CPU          # where it runs and in which precision: ``Execution.place`` sets it

    def score(self, queries: list[str], documents: list[str]) -> Tensor:
        """Each (query, document) pair's relevance score; the pair is cropped from the document's end."""
        batch = self.execution.inputs(self.tokenizer(queries, documents, truncation="only_second",
                                                     max_length=self.max_len, padding=True, return_tensors="pt",
                                                     return_token_type_ids=self.segments))
        segments = {"token_type_ids": batch["token_type_ids"]} if self.segments else {}
        with self.execution.precision():
            states = self.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], **segments)
        return self.head(states.last_hidden_state[:, 0].float()).squeeze(-1)


def build_cross_encoder(backbone: str, method: dict, max_len: int, execution: Execution = CPU) -> CrossEncoder:
    """The untrained reranker of ``method`` (``name``: ft or adapter; ``reduction_factor``) on the backbone, placed
    by the job's ``execution``."""
    if method["name"] not in METHODS:
        raise ValueError(f"reranker method {method['name']!r}: one of {', '.join(METHODS)}")
    path = resolve(backbone)
    encoder = AutoModel.from_pretrained(path)
    if method["name"] == "adapter":
        adapters.init(encoder)
        encoder.add_adapter(ADAPTER, config=adapter_config(method))
        encoder.train_adapter(ADAPTER)
    return execution.place(CrossEncoder(encoder, AutoTokenizer.from_pretrained(path), max_len))

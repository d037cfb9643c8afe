"""How broadly a backbone's [CLS] attends, layer by layer: the Condenser paper's attention analysis (§5, Figure 2).

Clark et al. (2019)'s measure: for each layer, the entropy of the [CLS] token's attention distribution over the
passage's tokens, averaged over the layer's heads and then over a seeded random sample of passages. High entropy is
broad attention; low, focused. The entropy is in nats (natural logarithm), ``−Σ p log p`` over the non-padding keys
of the row as softmax gave it (padding gets no weight; nothing is renormalised). Passages are cut to the retrievers'
``p_max_len`` tokens, as the retrievers see them.

The sample is drawn in one pass over the collection (a seeded reservoir), so a job holds ``passages`` texts, never
the collection; every model of a figure sees the same passages (the same file, count and seed), which the figure
checks through the sample's digest.
"""
from __future__ import annotations

import hashlib
import random
from statistics import fmean

import torch
from torch import Tensor
from transformers import AutoModel, AutoTokenizer, PreTrainedModel

from ..data.docstore import document_windows
from ..data.empty_documents import is_empty
from ..execution.seam import Execution
from ..files import write_json
from ..contract.backbones import resolve
from ..retrieval.dense_retriever import length_batches

UNIT = "nats"
# Passages per forward pass: every layer's full attention maps come back (layers × heads × length² each), so a batch
# is small (BERT-base at 128 tokens: ~110 MB); the entropies do not depend on it (padding gets no weight).
BATCH = 16


def sample_passages(docs: str, count: int, seed: int) -> tuple[list[str], list[str], int]:
    """``count`` documents of ``docs.jsonl`` drawn uniformly with ``seed`` (Algorithm R, one pass, ``count`` texts
    held), as (ids, texts) in file order, every document when the collection has fewer; and how many documents were
    left out for holding no text (not passages: [CLS] would attend to [SEP] alone)."""
    chooser = random.Random(seed)
    kept: list[tuple[int, str, str]] = []
    seen = empty = 0
    for ids, texts in document_windows(docs):
        for docid, text in zip(ids, texts):
            if is_empty(text):
                empty += 1
                continue
            if seen < count:
                kept.append((seen, docid, text))
            else:
                slot = chooser.randrange(seen + 1)
                if slot < count:
                    kept[slot] = (seen, docid, text)
            seen += 1
    kept.sort()
    return [docid for _, docid, _ in kept], [text for _, _, text in kept], empty


def sample_digest(ids: list[str]) -> str:
    """What names a sample in the figure's provenance: the sha256 of its document ids, one per line, in order."""
    return hashlib.sha256("".join(f"{docid}\n" for docid in ids).encode()).hexdigest()


def cls_entropy(attentions: tuple[Tensor, ...], mask: Tensor) -> Tensor:
    """(passages, layers): each layer's [CLS]-row attention entropy in nats over the keys ``mask`` keeps, mean over
    heads. ``attentions``: a model's ``output_attentions``, one (passages, heads, length, length) map per layer."""
    keys = mask[:, None, :].float()
    return torch.stack([(-torch.xlogy(layer[:, :, 0, :].float(), layer[:, :, 0, :].float()) * keys).sum(-1).mean(-1)
                        for layer in attentions], dim=1)


def load_encoder(path: str, layers: int | None, execution: Execution) -> tuple[PreTrainedModel, object]:
    """A checkpoint's encoder with eager attention (the fused kernels return no attention maps), its lowest
    ``layers`` layers when given (as the retrievers keep them), placed by the job's ``execution``."""
    kwargs = {"num_hidden_layers": layers} if layers else {}
    model = AutoModel.from_pretrained(path, add_pooling_layer=False, attn_implementation="eager", **kwargs)
    return execution.place(model).eval(), AutoTokenizer.from_pretrained(path)


def passage_entropies(model: PreTrainedModel, tokenizer, texts: list[str], max_len: int,
                      execution: Execution) -> list[list[float]]:
    """Each text's per-layer [CLS] attention entropy (``cls_entropy``), in the texts' order."""
    found: list[list[float] | None] = [None] * len(texts)
    with torch.no_grad():
        for chosen in length_batches(tokenizer, texts, max_len, BATCH):
            batch = execution.inputs(tokenizer([texts[i] for i in chosen], truncation=True, max_length=max_len,
                                               padding=True, return_tensors="pt"))
            with execution.precision():
                out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                            output_attentions=True)
            for index, row in zip(chosen, cls_entropy(out.attentions, batch["attention_mask"]).cpu().tolist()):
                found[index] = row
    return found


def attention_entropy(spec: dict, docs: str, threads: int, output: str, trained: str | None = None) -> dict:
    """The ``attention_entropy`` rule: the [CLS] attention entropy per layer of the backbone ``spec['backbone']`` as
    it comes, or of the retriever fine-tuned from it (``trained``: its directory), on ``spec['passages']`` passages
    of ``docs`` drawn with ``spec['seed']``; per passage and their means, with the sample's ids, to ``output``."""
    execution = Execution.of(spec["execution"], threads)
    ids, texts, empty = sample_passages(docs, spec["passages"], spec["seed"])
    if not ids:
        raise ValueError(f"{docs}: no documents to sample")
    model, tokenizer = load_encoder(trained or resolve(spec["backbone"]), spec["layers"], execution)
    per_passage = passage_entropies(model, tokenizer, texts, spec["p_max_len"], execution)
    facts = {"checkpoint": trained or spec["backbone"], "unit": UNIT, "p_max_len": spec["p_max_len"],
             "entropy": [fmean(column) for column in zip(*per_passage)],
             "sample": {"docs": docs, "requested": spec["passages"], "passages": len(ids), "seed": spec["seed"],
                        "empty_documents_left_out": empty, "sha256": sample_digest(ids), "ids": ids},
             "per_passage": per_passage, "execution": execution.used()}
    write_json(output, facts)
    return {key: facts[key] for key in ("checkpoint", "entropy", "execution")}

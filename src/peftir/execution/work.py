"""The cost plan's unit: what one job puts through its model (tokens trained, run through a frozen backbone, encoded;
searched products; the training loop's passes), and the backbone's size it is priced with. Each system's cost
functions (``peftir.<system>.cost``, registered as ``System.costs``) build a ``Work`` per job from the config and
the job's wildcards; ``peftir.pipeline.cost`` sizes the backbone, prices the work on the calibrated GPU and sums it.
No job imports this module."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from ..contract.backbones import starting_model
from ..data.sizes import collection_size
from . import passes

Config = Mapping[str, Any]
CostFunction = Callable[[Config, dict], "Work"]     # a rule's: the work of one of its jobs, from its wildcards

# Architectures of the public backbones every system may start from, by the Hugging Face config class defaults and the
# published sizes (bert-base: 12 × 768; DistilBERT: 6 × 768); a system adds the hub names its paper configurations
# use (``Costs.hub``), and a local directory is read from its own config.json.
HUB = {"bert-base-uncased": ("bert", {}), "distilbert-base-uncased": ("distilbert", {})}


@dataclass(frozen=True)
class Costs:
    """What a system tells the cost plan (``System.costs``): the cost function of each of its GPU rules, and the
    architecture of each hub backbone its paper configurations name that ``HUB`` lacks (the Hugging Face config
    class's family and the fields that differ from its defaults), so the plan sizes it without a download."""

    rules: Mapping[str, CostFunction]
    hub: Mapping[str, tuple[str, dict[str, int]]] = field(default_factory=dict)


@dataclass
class Architecture:
    """A backbone's size as its modules count it: non-embedding parameters, hidden size, layers, MLM head."""

    family: str
    parameters: int          # every parameter (what the weights and the optimiser hold)
    compute: int             # non-embedding parameters: what a token costs
    hidden: int
    layers: int
    vocabulary: int
    intermediate: int = 0
    attention_heads: int = 1

    def encoder(self, trains: bool) -> passes.Encoder:
        """The sizes the jobs' memory model reads (all parameters trainable for full fine-tuning)."""
        return passes.Encoder(self.hidden, self.intermediate or 4 * self.hidden, self.layers, self.attention_heads,
                              self.vocabulary, self.parameters, self.parameters if trains else 0)

    @property
    def head(self) -> int:
        """The MLM head's projection to the vocabulary: what SPLADE and MLM add per token."""
        return self.hidden * self.vocabulary


@dataclass(frozen=True)
class Passes:
    """A training loop's forward passes as configured: ``configured`` rows a pass (``auto`` or a number) of a batch
    of ``rows`` rows of ``tokens`` tokens, with ``heads`` vocabulary-wide outputs per token; ``coupled``: the loss
    couples the batch's rows, so a batch in several passes goes through the gradient cache."""

    configured: passes.Configured
    rows: int
    tokens: int
    heads: int = 0
    coupled: bool = False


@dataclass
class Work:
    """What one job puts through its model."""

    backbone: str
    trained: float = 0.0         # tokens forward and backward (6·N)
    frozen: float = 0.0          # tokens through a frozen backbone with trainable modules (4·N)
    cached: float = 0.0          # tokens a gradient cache runs forward a second time (2·N)
    encoded: float = 0.0         # tokens forward only (2·N)
    head: bool = False           # an MLM head's vocabulary projection on every token
    passes: Passes | None = None  # the training loop's passes (activations held)
    searched: float = 0.0        # query-document pairs exact dense search scores (2·hidden FLOPs each, on the GPU)
    note: str = ""
    rows_per_pass: int = 0       # what the job will choose (``sized``)

    def flops(self, size: Architecture) -> float:
        """The job's floating-point operations: 2·N a token forward, 4·N backward, plus its search."""
        per_token = size.compute + (size.head if self.head else 0)
        return (per_token * (6 * self.trained + 4 * self.frozen + 2 * self.cached + 2 * self.encoded)
                + self.search_flops(size))

    def search_flops(self, size: Architecture) -> float:
        """Exact search's products: a query vector against a document's, ``hidden`` multiply-adds."""
        return self.searched * 2 * size.hidden

    def sized(self, size: Architecture, memory_gb: float, autocast: bool) -> Work:
        """This work with its rows per pass as the job sizes them on a GPU of ``memory_gb`` (the weights placed),
        and the gradient cache's second forward where a coupled batch then takes several passes."""
        if self.passes is None:
            return self
        spec = self.passes
        free = int(memory_gb * 1e9) - 4 * size.parameters
        rows = passes.sized(spec.configured, spec.rows, size.encoder(bool(self.trained)),
                            passes.Shape(spec.tokens, True, spec.heads), free, autocast, "cuda")
        cached = self.trained + self.frozen if spec.coupled and rows < spec.rows else 0.0
        return replace(self, rows_per_pass=rows, cached=cached)

    def gpu_memory_gb(self, size: Architecture, autocast: bool) -> float:
        """Weights, and for full fine-tuning their gradients and Adam's moments (a frozen backbone's modules are a
        few percent of it and left out), bf16 copies under autocast, and one pass's activations."""
        encoder = size.encoder(bool(self.trained))
        held = 4 * size.parameters
        if self.passes and self.rows_per_pass:
            shape = passes.Shape(self.passes.tokens, True, self.passes.heads)
            held += (passes.fixed_bytes(encoder, shape, autocast)
                     + self.rows_per_pass * passes.row_bytes(encoder, shape, autocast, "cuda"))
        return held / 1e9



# --- helpers the systems' cost functions share ------------------------------------------------------------------

def split_queries(config: Config, dataset: str, split: str) -> int:
    """Queries of a dataset's split (``train``, ``valid``, ``test``): its pre-assigned split's, or a fold's share of
    its queries (training takes all folds but two), from ir_datasets' metadata."""
    spec = config["datasets"][dataset]
    if "splits" in spec and split in spec["splits"]:
        return collection_size(spec["splits"][split])[1]
    folds = len(spec.get("folds", {}).get("irds", [])) or spec.get("folds", {}).get("n", 5)
    queries = sum(collection_size(topics)[1] for topics in spec.get("topics", [])) or collection_size(spec["irds"])[1]
    return queries * (folds - 2) // folds if split == "train" else queries // folds


def documents(config: Config, dataset: str) -> int:
    """Documents of a dataset's collection, from ir_datasets' metadata."""
    return collection_size(config["datasets"][dataset]["irds"])[0]


def sized_backbone(config: Config, name: str) -> str:
    """A backbone name as the plan sizes it: a pretraining run is the model it starts from (its own backbone, its
    warm start's or the pretraining section's; ``peftir.contract.backbones.starting_model``, as the config check
    reads its depth)."""
    return starting_model(config, name) or config["pretraining"]["backbone"]["name"]


def pair_tokens(settings: dict) -> tuple[float, float]:
    """Tokens of one (query, document) pair for the rankers: monoBERT's chunks of ``max_seq_len``, or a bi-encoder's
    document (chunked) and query; and of one document alone."""
    chunk = settings["max_seq_len"] - settings["max_query_len"] - 3
    chunks = math.ceil(settings["max_doc_len"] / chunk)
    return chunks * settings["max_seq_len"], settings["max_doc_len"] + 2 * chunks + settings["max_query_len"] + 2

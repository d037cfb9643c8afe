"""The SPLADE section's relations: schedules within their runs, depths within the runs and index they draw from,
lengths within the backbones. Checked before any job (``peftir.pipeline.relations``)."""
from __future__ import annotations

from typing import Iterator

from ..contract.relations import (FROM_BM25, WITHIN_RUN, Derived, Layer, Relation, Scope, Section, cutoffs, depth,
                                  each, longest, room)
from .contract import SPLADE_OVERRIDES

SR = "sparse_retrieval"
SPARSE_ROOM = room(f"{SR}.backbones", each(f"{SR}.backbones", "name"))
SPARSE_DEPTH = depth(f"{SR}.backbones", each(f"{SR}.backbones", "name"))
RERANKER_ROOM = room(f"{SR}.rerankers.models", each(f"{SR}.rerankers.models", "backbone"))


def _methods(config: dict) -> Iterator[Scope]:
    """Each method's own training settings over the section's."""
    for name, spec in config[SR]["methods"].items():
        own = {key: spec[key] for key in SPLADE_OVERRIDES if key in spec}
        yield Scope(config, (Layer(f"{SR}.train", f"{SR}.methods.{name}", own),))


SECTION = Section(SR, f"{SR} (a method's own {', '.join(SPLADE_OVERRIDES)} override the section's)", (
    Relation(f"{SR}.layers", SPARSE_DEPTH, "more would add untrained layers"),
    Relation(f"{SR}.train.negative_depth", "bm25.depth", FROM_BM25),
    Relation(f"{SR}.train.validation_depth", "bm25.depth", FROM_BM25),
    Relation(f"{SR}.train.warmup_steps", f"{SR}.train.steps", WITHIN_RUN),
    Relation(f"{SR}.train.regularisation.warmup_steps", f"{SR}.train.steps", WITHIN_RUN + " (FLOPS' λ warm-up T)"),
    Relation(f"{SR}.train.validate_every", f"{SR}.train.steps", WITHIN_RUN),
    Relation(Derived(f"max({SR}.train.q_max_len, d_max_len)", longest(f"{SR}.train.q_max_len",
                                                                               f"{SR}.train.d_max_len")),
             SPARSE_ROOM, "the backbones' position embeddings"),
    Relation(Derived(f"cutoffs({SR}.metrics)", cutoffs(f"{SR}.metrics")), f"{SR}.index.depth",
             "a ranking ends at the index's search depth"),
    Relation(f"{SR}.rerankers.train.negative_depth", "bm25.depth", FROM_BM25),
    Relation(f"{SR}.rerankers.train.validation_depth", "bm25.depth", FROM_BM25),
    Relation(f"{SR}.rerankers.train.warmup_steps", f"{SR}.rerankers.train.steps", WITHIN_RUN),
    Relation(f"{SR}.rerankers.train.validate_every", f"{SR}.rerankers.train.steps", WITHIN_RUN),
    Relation(f"{SR}.rerankers.rerank.depth", f"{SR}.index.depth", "the SPLADE run it reranks"),
    Relation(f"{SR}.rerankers.train.max_len", RERANKER_ROOM,
             "the rerankers' position embeddings"),
), _methods)

"""The SPLADE section's relations: schedules within their runs, depths within the runs and index they draw from,
lengths within the backbones. Checked before any job (``peftir.pipeline.relations``)."""
from __future__ import annotations

from typing import Iterator

from ..contract.relations import (FROM_BM25, WITHIN_RUN, Derived, Found, Layer, Relation, Scope, Section, cutoffs,
                                  depth, each, longest, room)
from .contract import SPLADE_OVERRIDES

SR = "sparse_retrieval"
SPARSE_ROOM = room(f"{SR}.backbones", each(f"{SR}.backbones", "name"))
SPARSE_DEPTH = depth(f"{SR}.backbones", each(f"{SR}.backbones", "name"))
RERANKER_ROOM = room(f"{SR}.rerankers.models", each(f"{SR}.rerankers.models", "backbone"))


def _methods(config: dict) -> Iterator[Scope]:
    """Each method's own training settings over the section's (with the run its negatives come from)."""
    for name, spec in config[SR]["methods"].items():
        own = {key: spec[key] for key in (*SPLADE_OVERRIDES, "negatives") if key in spec}
        yield Scope(config, (Layer(f"{SR}.train", f"{SR}.methods.{name}", own),))


def _negatives_source(scope: Scope) -> Found:
    """The depth of the ranking a method draws its negatives from: BM25's, or, for a round on negatives that a
    SPLADE method's run mined (``negatives: <method>``, Table 5's rounds), the SPLADE index's search depth."""
    source = scope.get(f"{SR}.train.negatives")
    from_splade = source is not None and source[1] != "bm25"
    found = scope.get(f"{SR}.index.depth" if from_splade else "bm25.depth")
    if found is None or not isinstance(found[1], int):
        return []
    via = f", the run of {source[0]} = {source[1]!r}" if from_splade else ""
    return [(f"{found[0]} = {found[1]!r}{via}", found[1])]


NEGATIVES_SOURCE = Derived(f"bm25.depth, or {SR}.index.depth for negatives of a SPLADE run", _negatives_source)


SECTION = Section(SR, f"{SR} (a method's own {', '.join(SPLADE_OVERRIDES)} override the section's)", (
    Relation(f"{SR}.layers", SPARSE_DEPTH, "more would add untrained layers"),
    Relation(f"{SR}.train.negative_depth", NEGATIVES_SOURCE, "the ranking it draws its negatives from"),
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

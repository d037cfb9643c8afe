"""The pretraining and dense retrieval sections' relations: a Condenser head's skip within the depth, prompts and
texts within the positions, mining and training depths within the runs they draw from. Checked before any job
(``peftir.pipeline.relations``)."""
from __future__ import annotations

from typing import Iterator

from ..contract.relations import (FROM_BM25, Derived, Layer, Relation, Scope, Section, cutoffs, depth, documents,
                                  each, longest, prompted, room, summed)
from .contract import DENSE_OVERRIDES

PRE, DR = "pretraining", "dense_retrieval"
PRE_ROOM, PRE_DEPTH = room("pretraining.backbone.name"), depth("pretraining.backbone.name")
DENSE_ROOM = room(f"{DR}.backbones", each(f"{DR}.backbones"))
DENSE_DEPTH = depth(f"{DR}.backbones", each(f"{DR}.backbones"))


def _runs(config: dict) -> Iterator[Scope]:
    """Each pretraining run's own ``settings`` over the section's."""
    for name, spec in config[PRE]["runs"].items():
        yield Scope(config, (Layer("pretraining.settings", f"pretraining.runs.{name}.settings",
                                   spec.get("settings", {})),
                             Layer("run", f"pretraining.runs.{name}", spec)))


def _methods_and_figures(config: dict) -> Iterator[Scope]:
    """Each method's own training settings over the section's, and each figure's."""
    for name, spec in config[DR]["methods"].items():
        own = {key: spec[key] for key in DENSE_OVERRIDES if key in spec}
        yield Scope(config, (Layer(f"{DR}.train", f"{DR}.methods.{name}", own),
                             Layer("method", f"{DR}.methods.{name}", spec)))
    for paper, figures in (config[DR].get("figures") or {}).items():
        for name, spec in (figures or {}).items():
            yield Scope(config, (Layer(f"{DR}.figure", f"{DR}.figures.{paper}.{name}", spec),))


PRETRAINING = Section(PRE, "pretraining (a run's `settings` override the section's)", (
    Relation("pretraining.settings.skip_from", PRE_DEPTH,
             "the Condenser head's skip connection reads a lower layer than the last", strict=True),
    Relation("pretraining.settings.max_len", PRE_ROOM, "the backbone's position embeddings"),
    Relation("pretraining.backbone.mlm_head.block_size", PRE_ROOM,
             "the backbone's position embeddings"),
    Relation("pretraining.settings.chunk", "pretraining.settings.batch_size", "rows a batch holds: two per text",
             scale=2),
    Relation(Derived("run.prompts.length + pretraining.settings.max_len",
                          summed("run.prompts.length", "pretraining.settings.max_len")), PRE_ROOM,
             "deep prompts shift the text's positions"),
), _runs)
SECTION = Section(DR, f"{DR} (a method's own {', '.join(DENSE_OVERRIDES)} override the section's)", (
    Relation(f"{DR}.layers", DENSE_DEPTH, "more would add untrained layers"),
    Relation(f"{DR}.train.negative_depth", "bm25.depth", FROM_BM25),
    Relation(f"{DR}.mining.depth", "bm25.depth", FROM_BM25),
    Relation(f"{DR}.mining.depth", f"{DR}.search.depth", "the first-round run it draws from"),
    Relation(f"{DR}.mining.sample", f"{DR}.mining.depth", "a sample of the mined depth"),
    Relation(f"{DR}.train.passages", f"{DR}.train.negative_depth", "one relevant and distinct negatives",
             slack=-1),
    Relation(f"{DR}.train.passages", f"{DR}.mining.sample", "one relevant and distinct mined negatives",
             slack=-1),
    Relation(Derived(f"max({DR}.train.q_max_len, p_max_len)", longest(f"{DR}.train.q_max_len",
                                                                              f"{DR}.train.p_max_len")),
             DENSE_ROOM, "the backbones' position embeddings"),
    Relation(prompted("method.length", f"{DR}.train.q_max_len", f"{DR}.train.p_max_len"),
             DENSE_ROOM, "deep prompts shift the text's positions (P-tuning v2)"),
    Relation(Derived(f"cutoffs({DR}.metrics)", cutoffs(f"{DR}.metrics")), f"{DR}.search.depth",
             "a ranking ends at the search depth"),
    Relation(f"{DR}.figure.passages", Derived(f"documents({DR}.dataset)", documents(f"{DR}.dataset")),
             "passages drawn from the dataset"),
), _methods_and_figures)

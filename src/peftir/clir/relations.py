"""The modular CLIR section's relations: depths within the pre-rankings, lengths within the backbone, warm-ups within
their runs. Checked before any job (``peftir.pipeline.relations``)."""
from __future__ import annotations

from ..contract.relations import FROM_BM25, WITHIN_RUN, Derived, Relation, Section, cutoffs, depth, room

MC = "modular_clir"
CLIR_ROOM, CLIR_DEPTH = room(f"{MC}.backbone.name"), depth(f"{MC}.backbone.name")

SECTION = Section(MC, MC, (
    Relation(f"{MC}.backbone.layers", CLIR_DEPTH, "more would add untrained layers"),
    Relation(f"{MC}.rerank.depth", f"{MC}.prerank.dense.depth", "the pre-ranking it reranks"),
    Relation(f"{MC}.rerank.depth", f"{MC}.prerank.bm25.depth", "the pre-ranking it reranks"),
    Relation(f"{MC}.ranking.train.train_depth", "bm25.depth", FROM_BM25 + " (of ranking.dataset)"),
    Relation(f"{MC}.ranking.train.max_len", CLIR_ROOM, "the backbone's position embeddings"),
    Relation(f"{MC}.rerank.max_len", CLIR_ROOM, "the backbone's position embeddings"),
    Relation(f"{MC}.ranking.train.warmup", f"{MC}.ranking.adapter.steps", WITHIN_RUN),
    Relation(f"{MC}.ranking.train.warmup", f"{MC}.ranking.full.steps", WITHIN_RUN),
    Relation(f"{MC}.ranking.train.warmup", f"{MC}.ranking.sftm.phase_steps[0]", WITHIN_RUN + " (each phase warms up)"),
    Relation(f"{MC}.ranking.train.warmup", f"{MC}.ranking.sftm.phase_steps[1]", WITHIN_RUN + " (each phase warms up)"),
    Relation(Derived(f"cutoff({MC}.metric)", cutoffs(f"{MC}.metric")), f"{MC}.rerank.depth",
             "a reranking ends at its depth"),
))

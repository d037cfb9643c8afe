"""SPLADE with adapters as the workflow registers it (entry point ``splade``, ``pyproject.toml``): the
``sparse_retrieval`` section, its rules, its tables' folder. No job's code imports this module (the registry loads
it), so registering changes no job's code version."""
from __future__ import annotations

from ..systems import CrateKinds, System
from . import contract, plan, relations
from .config import check_sparse_retrieval

SYSTEM = System(name="splade", position=40, contract=contract, plan=plan, rules="workflow/rules/splade.smk",
                schema="workflow/schemas/splade.schema.yaml",
                checks=(("sparse_retrieval", check_sparse_retrieval),), relations=(relations.SECTION,),
                papers=(contract.SPARSE_PAPER,), costs="peftir.splade.cost:COSTS",
                audit="peftir.splade.audit:AUDITS",
                manual={"Systems": [("Adapters-SPLADE", "systems/splade-adapters.md")],
                        "Fidelity to the papers": [("Adapters-SPLADE", "fidelity/splade-adapters.md")]},
                crate=CrateKinds(
                    weights=("splade_model", "reranker_model"), vectors=("splade_index",),
                    collection=("splade_teacher_scores",),
                    steps=("teacher_scores", "splade_teacher", "train_splade", "splade_index", "splade_search",
                           "evaluate_splade", "evaluate_splade_bm25", "train_splade_reranker", "splade_rerank",
                           "evaluate_splade_reranked", "splade_table")),
                rescorers={"splade_search": ("first_stage", "peftir.splade.rescore:rescore_splade_run"),
                           "splade_rerank": ("reranking", "peftir.splade.rescore:rescore_splade_reranking")})

"""The modular cross-lingual rerankers as the workflow registers them (entry point ``clir``, ``pyproject.toml``): the
``modular_clir`` section, its rules, its tables' folder. No job's code imports this module (the registry loads it),
so registering changes no job's code version."""
from __future__ import annotations

from ..systems import CrateKinds, System
from . import contract, plan, relations
from .config import check_modular_clir

SYSTEM = System(name="clir", position=20, contract=contract, plan=plan, rules="workflow/rules/clir.smk",
                schema="workflow/schemas/clir.schema.yaml",
                checks=(("modular_clir", check_modular_clir),), relations=(relations.SECTION,),
                papers=(contract.CLIR_PAPER,), costs="peftir.clir.cost:COSTS",
                audit="peftir.clir.audit:AUDITS",
                manual={"Systems": [("Modular cross-lingual rerankers", "systems/modular-clir.md")],
                        "Fidelity to the papers": [("Modular cross-lingual rerankers", "fidelity/modular-clir.md")]},
                crate=CrateKinds(
                    weights=("clir_backbone", "clir_mlm_backbone", "language_module", "ranking_module"),
                    collection=("clir_package", "clir_corpus", "clir_heldout", "clir_docs", "clir_index",
                                "clir_dense_index"),
                    licensed=("clir_collection",),
                    steps=("debian_package", "language_corpus", "clir_collection", "clir_index", "clir_dense_index",
                           "multilingual_backbone", "mlm_head", "mlm_language_adapter", "ranking_adapter",
                           "prerank_clir", "nmt_bm25_clir", "rerank_clir", "evaluate_clir_prerank",
                           "evaluate_clir_translated", "evaluate_clir", "clir_table", "clir_figure")),
                rescorers={"rerank_clir": ("reranking", "peftir.clir.rescore:rescore_clir_run")})

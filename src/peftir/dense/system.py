"""Pretraining and the dense retrievers as the workflow registers them (entry point ``dense``, ``pyproject.toml``): the
``pretraining`` and ``dense_retrieval`` sections, its rules, its papers' folders (DPTDR, Condenser). No job's code
imports this module (the registry loads it), so registering changes no job's code version."""
from __future__ import annotations

from ..systems import CrateKinds, System
from . import contract, plan, relations
from .config import check_dense_retrieval, check_pretraining

SYSTEM = System(name="dense", position=30, contract=contract, plan=plan, rules="workflow/rules/dense.smk",
                schema="workflow/schemas/dense.schema.yaml",
                checks=(("pretraining", check_pretraining), ("dense_retrieval", check_dense_retrieval)),
                relations=(relations.PRETRAINING, relations.SECTION), papers=contract.DENSE_PAPERS,
                costs="peftir.dense.cost:COSTS", audit="peftir.dense.audit:AUDITS",
                manual={"Systems": [("Dense retrieval: DPTDR and Condenser", "systems/dense-retrieval.md")],
                        "Fidelity to the papers": [("DPTDR", "fidelity/dptdr.md"),
                                                   ("Condenser", "fidelity/condenser.md")]},
                crate=CrateKinds(
                    weights=("pretraining_mlm_backbone", "pretrained", "retriever_model"),
                    vectors=("dense_index", "untrained_index"),
                    steps=("pretraining_mlm_head", "pretrain", "train_retriever", "dense_index",
                           "dense_index_untrained", "dense_search", "dense_search_untrained", "dense_search_target",
                           "mine_negatives", "answer_judgments", "answer_judgments_untrained",
                           "answer_judgments_bm25", "evaluate_dense", "evaluate_dense_untrained",
                           "evaluate_dense_bm25", "evaluate_dense_target", "dense_geometry", "dense_geometry_untrained",
                           "attention_entropy", "attention_entropy_pretrained", "dense_table", "dense_figure")),
                rescorers={rule: ("first_stage", "peftir.dense.rescore:rescore_dense_run")
                           for rule in ("dense_search", "dense_search_untrained", "dense_search_target")})

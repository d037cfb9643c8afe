"""The Semi-Siamese rerankers as the workflow registers them (entry point ``semi_siamese``, ``pyproject.toml``): the
experiment's sections, its rules, its tables at ``results/tables/`` without a folder, Table 5 the default target.
No job's code imports this module (the registry loads it), so registering changes no job's code version."""
from __future__ import annotations

from ..systems import CrateKinds, System
from . import contract, plan, relations
from .config import check_semi_siamese

SYSTEM = System(name="semi_siamese", position=10, contract=contract, plan=plan,
                rules="workflow/rules/semi_siamese.smk",
                schema="workflow/schemas/semi_siamese.schema.yaml", checks=(("experiment", check_semi_siamese),),
                relations=(relations.SECTION,), root_paper=contract.PAPER, default_target=plan.default_target,
                costs="peftir.semi_siamese.cost:COSTS", audit="peftir.semi_siamese.audit:AUDITS",
                manual={"Systems": [("Semi-Siamese rankers", "systems/semi-siamese.md")]},
                crate=CrateKinds(weights=("weights", "first_stage_weights"),
                                 steps=("zero_shot", "train_first_stage", "train", "rerank", "evaluate_reference",
                                        "evaluate", "table", "figure")),
                rescorers={"rerank": ("reranking", "peftir.semi_siamese.rescore:rescore_reranking")})

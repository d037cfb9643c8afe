"""The system as it registers itself (entry point ``toy_rm3`` of this package's ``pyproject.toml``): its config
section and schema fragment, rules file, plan and contract, its audit, its reported numbers and its crate kinds. Its
files live in the installed package (absolute paths), not in the workflow's checkout."""
from __future__ import annotations

from peftir.systems import CrateKinds, System

from . import HERE, contract, plan
from .config import check_toy_rm3

SYSTEM = System(name="toy_rm3", position=90, contract=contract, plan=plan, rules=str(HERE / "rules.smk"),
                schema=str(HERE / "schema.yaml"), checks=(("toy_rm3", check_toy_rm3),), papers=(contract.PAPER,),
                reported="peftir_toy_rm3:reported", audit="peftir_toy_rm3.audit:AUDITS",
                crate=CrateKinds(steps=("toy_rm3_search", "evaluate_toy_rm3", "evaluate_toy_bm25", "toy_rm3_table")))

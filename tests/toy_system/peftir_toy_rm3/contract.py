"""The system's contract with the workflow: its artefacts (the RM3 run, both rows' metrics, its table) and what each
of its jobs gets from the config's ``toy_rm3`` section (``PARAMS``)."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from peftir.contract.params import ParamFunction

PAPER = "toy-rm3"                                   # its tables' folder under results/tables/
ROOT = "results/toy-rm3"


@dataclass(frozen=True)
class ToyPaths:
    """Path patterns of its artefacts (the core's index, queries, folds, qrels and BM25 run are read as they are)."""

    toy_rm3_run: str = f"{ROOT}/runs/{{dataset}}/rm3.run"
    toy_rm3_run_metadata: str = f"{ROOT}/runs/{{dataset}}/rm3.ir_metadata.yaml"
    toy_rm3_metrics: str = f"{ROOT}/metrics/{{dataset}}/rm3/fold{{fold}}.json"
    toy_bm25_metrics: str = f"{ROOT}/metrics/{{dataset}}/bm25/fold{{fold}}.json"
    toy_table_tex: str = f"results/tables/{PAPER}/{{table}}.tex"
    toy_table_json: str = f"results/tables/{PAPER}/{{table}}.json"
    toy_table_csv: str = f"results/tables/{PAPER}/{{table}}.csv"


PATHS = ToyPaths()
WILDCARDS: Mapping[str, str] = MappingProxyType({})


def _section(config: Mapping[str, Any]) -> dict:
    return config["toy_rm3"]


def table_layout(config: Mapping[str, Any], name: str) -> dict:
    """A table's layout: its caption, the collection, the metrics (its columns) and the folds its rows average."""
    from peftir.data.folds import fold_ids

    section = _section(config)
    return {"name": f"{PAPER}/{name}", "caption": section["tables"][name]["caption"], "dataset": section["dataset"],
            "metrics": list(section["metrics"]), "folds": fold_ids(config["datasets"][section["dataset"]])}


PARAMS: Mapping[str, ParamFunction] = MappingProxyType({
    "toy_rm3": lambda config, wc: {**config["bm25"], **_section(config)["rm3"], "depth": _section(config)["depth"]},
    "toy_rm3_metrics": lambda config, wc: list(_section(config)["metrics"]),
    "toy_rm3_table": lambda config, wc: table_layout(config, wc["table"]),
})

"""The ``toy_rm3`` section's checks beyond its schema fragment (``schema.yaml``): what the schema cannot say."""
from __future__ import annotations

from typing import Any, Mapping

from peftir.contract.checks import check_metrics, known


def check_toy_rm3(config: Mapping[str, Any]) -> None:
    """Its collection is one of ``datasets``; its metrics are ir_measures' names."""
    section = config["toy_rm3"]
    known(section["dataset"], config["datasets"], "toy_rm3.dataset", "the keys of `datasets`")
    check_metrics(section["metrics"], "toy_rm3.metrics")

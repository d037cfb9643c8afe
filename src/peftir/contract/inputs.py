"""The files jobs of every system read alike: a dataset's exported collection, and a backbone the workflow makes
(``pretrained:<run>``) so that the DAG builds it first."""
from __future__ import annotations

from typing import Mapping

from .paths import CORE, pretrained_run


def collection(wildcards: Mapping[str, str]) -> dict[str, str]:
    """A dataset's exported files, by the names ``peftir.models.inputs.Collection`` takes."""
    return {name: getattr(CORE, name).format(dataset=wildcards["dataset"])
            for name in ("queries", "qrels", "docs", "docs_lookup", "folds")}


def backbone_input(name: str) -> dict[str, str]:
    """A backbone the workflow makes (``pretrained:<run>``) as a job's input, so the DAG builds it first; a hub
    name, a directory or the embedded model is read by name."""
    run = pretrained_run(name)
    return {"backbone": CORE.pretrained.format(pretrained=run)} if run else {}

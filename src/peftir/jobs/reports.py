"""Jobs of the table and figure rules."""
from __future__ import annotations

import json
from pathlib import Path

from .. import tables
from ..runner import Job


def _records(job: Job) -> list[tables.RunRecord]:
    records = []
    for metrics_file, summary_file in zip(job.input["metrics"], job.input["summaries"]):
        summary = json.loads(Path(summary_file).read_text())
        records.append(tables.RunRecord(dataset=summary["dataset"], ranker=summary["ranker"],
                                        method=summary["method"], fold=summary["fold"], seed=summary["seed"],
                                        metrics_file=metrics_file,
                                        trainable_parameters=summary["trainable_parameters"]))
    return records


def _groups(spec: dict) -> list[tables.Group]:
    return [tables.Group(label=g["label"], rows=[tables.Row(ranker=g["ranker"], method=r["method"], label=r["label"],
                                                            candidates=tuple(r["candidates"])) for r in g["rows"]])
            for g in spec["groups"]]


def table(job: Job) -> None:
    """Render one result table (LaTeX + JSON + CSV) from the runs' metrics and summaries."""
    spec = job.params["table"]
    reference = {"BM25": {}}
    for metrics_file in job.input["reference"]:
        reference["BM25"].setdefault(json.loads(Path(metrics_file).read_text())["dataset"], []).append(metrics_file)
    built = tables.build_table(spec["name"], spec["caption"], _groups(spec), [tuple(d) for d in spec["datasets"]],
                               spec["metrics"], _records(job), reference)
    tables.write_table(built, job.output["tex"], job.output["json"], job.output["csv"])


def figure(job: Job) -> None:
    """Draw one figure (PDF + PNG + JSON) from the runs' metrics and summaries."""
    from .. import figures   # matplotlib: only figure jobs pay for it

    spec = job.params["figure"]
    built = figures.build_figure(spec["name"], spec["caption"], _groups(spec), [tuple(d) for d in spec["datasets"]],
                                 spec["metrics"][0], _records(job))
    figures.write_figure(built, job.output["pdf"], job.output["png"], job.output["json"])

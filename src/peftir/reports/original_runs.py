"""A scorecard against the authors' original runs, where the user has them (``reproduction.original_runs``: per table
the qrels and one TREC run per row), through ``repro_eval``'s evaluators (Breuer et al., SIGIR 2020).

Per method row and seed, against the table's baseline row: the reproduced run is the row's test-fold runs of that
seed joined (each query once); on the paper's own collection (``budget: paper``) ``RpdEvaluator`` gives Kendall's
tau Union and rank-biased overlap of the document orderings, nRMSE of the per-topic scores and paired t-tests, on
another (the embedded default) ``RplEvaluator`` gives the unpaired t-tests (orderings of different topics are not
comparable). Only the table's own metrics are kept. The run files are found through the metrics files the table's
cells name (their ``run``), whose chains the table's audit checks.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

from ..contract.cells import split_cell_id
from ..data.trec import read_run, write_run


def _joined(cells: list[Mapping[str, Any]], row: str, directory: Path) -> dict[int | None, str]:
    """The row's runs joined per seed into one TREC file each (``directory``), by seed."""
    files: dict[int | None, set[str]] = {}
    for cell in cells:
        if split_cell_id(cell["cell"])[0] == row:
            for run in cell.get("runs") or []:
                files.setdefault(run.get("seed"), set()).add(json.loads(Path(run["metrics_file"]).read_text())["run"])
    joined = {}
    for seed, paths in sorted(files.items(), key=lambda item: str(item[0])):
        run: dict[str, dict[str, float]] = {}
        for path in sorted(paths):
            run.update(read_run(path))
        target = directory / f"{row.replace(':', '_').replace(' ', '_')}-seed{seed}.run"
        write_run(target, ((qid, docs) for qid, docs in sorted(run.items())), tag="reproduced")
        joined[seed] = str(target)
    return joined


def _metrics(cells: list[Mapping[str, Any]]) -> set[str]:
    return {cell["metric"] for cell in cells if cell.get("metric")}


def _kept(values: Mapping[str, Any] | None, metrics: set[str]) -> dict[str, float | None]:
    return {m: (None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v))
            for m, v in (values or {}).items() if m in metrics}


def against_original(cells: list[Mapping[str, Any]], original: Mapping[str, Any], baseline: str, budget: str,
                     directory: Path) -> list[dict]:
    """Each method row with an original run, per seed, against the baseline row's original run (see the module);
    the reproduced runs' qrels are those their metrics files name."""
    from repro_eval.Evaluator import RpdEvaluator, RplEvaluator

    from .scorecard import baseline_row

    metrics, found = _metrics(cells), []
    rows = original["rows"]
    qrels = next(json.loads(Path(run["metrics_file"]).read_text())["qrels"] for cell in cells
                 for run in cell.get("runs") or [])
    for row, run in rows.items():
        base = baseline_row(row, baseline)
        if row == base or base not in rows:
            continue
        for seed, (rep_b, rep_a) in _pairs(_joined(cells, base, directory), _joined(cells, row, directory)):
            common = {"run_b_orig_path": rows[base], "run_a_orig_path": run, "run_b_rep_path": rep_b,
                      "run_a_rep_path": rep_a, "qrels_orig_path": original["qrels"]}
            if budget == "paper":
                evaluator = RpdEvaluator(**common)
                evaluator.trim()
                evaluator.evaluate()
                ktu, rbo = evaluator.ktu(), evaluator.rbo()
                result = {"KTU": ktu, "RBO": rbo, "nRMSE": {k: _kept(v, metrics) for k, v in evaluator.nrmse().items()},
                          "p": {k: _kept(v, metrics) for k, v in evaluator.ttest().items()}, "paired": True}
            else:
                evaluator = RplEvaluator(**common, qrels_rpl_path=qrels)
                evaluator.trim()
                evaluator.evaluate()
                result = {"p": {k: _kept(v, metrics) for k, v in evaluator.ttest().items()}, "paired": False}
            found.append({"row": row, "baseline": base, "seed": seed, **result})
    return found


def _pairs(base: Mapping, advanced: Mapping) -> list[tuple]:
    """The seeds both rows have, with their joined runs."""
    return [(seed, (base[seed], advanced[seed])) for seed in advanced if seed in base]

"""Audit of a result table: each cell walked back through the provenance records and re-checked.

For every cell (or the ones asked for) the audit
  1. re-hashes every file of its chain (table → metrics → run → weights → BM25 run → index →
     exported data, plus the code each job ran) against the records its producers and consumers wrote;
  2. recomputes each metric from the run file and the qrels with pytrec_eval;
  3. recomputes the cell's mean, printed value, per-seed means, t-test p-value and star, and
     re-renders the LaTeX table from its JSON twin;
  4. asks Snakemake whether the params recorded for the chain's files still follow from the
     current config (a dry run with the recorded config files: "Params have changed");
and prints the chain commit → config → weights → run → metric → cell. The first mismatch stops
it, naming the cell and the file.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Callable, Iterator

from . import evaluation, provenance, stats, tables

TOLERANCE = 1e-12


class AuditFailure(Exception):
    """The first thing that does not match: which cell, which file, why."""

    def __init__(self, cell: str, file: str, reason: str):
        super().__init__(f"cell {cell}: {file}: {reason}")
        self.cell, self.file, self.reason = cell, file, reason


@dataclass
class Cell:
    """One printed number of a table, with what it is compared to."""

    id: str
    label: str
    cell: dict
    baseline: dict | None = None


def cells_of(table: dict) -> Iterator[Cell]:
    """Every cell with its id ``ranker:method:dataset:metric`` (reference rows: ``bm25:dataset:metric``)."""
    for row in table["reference_rows"]:
        for cell in row["cells"]:
            yield Cell(f"{row['label'].lower()}:{cell['dataset']}:{cell['metric']}", row["label"], cell)
    for group in table["groups"]:
        baseline = next((r for r in group["rows"] if r["method"] == "full"), None)
        for row in group["rows"]:
            for column, cell in enumerate(row["cells"]):
                base = baseline["cells"][column] if baseline and row is not baseline else None
                yield Cell(f"{row['ranker']}:{row['method']}:{cell['dataset']}:{cell['metric']}",
                           f"{group['label']} / {row['label']}", cell, base)


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0, abs_tol=TOLERANCE)


@dataclass
class Auditor:
    """Checks run from the working directory; ``verified`` memoises each checked file's record."""

    verified: dict[str, dict] = field(default_factory=dict)
    cell: str = ""   # the cell being audited, for the failure message

    def fail(self, file: str | Path, reason: str) -> None:
        raise AuditFailure(self.cell, str(file), reason)

    def verify(self, path: str, inputs: bool = True) -> dict:
        """The file's record, after checking the file's hash and, with ``inputs``, those of the inputs it
        was made from and, transitively, theirs (a table's inputs are checked cell by cell instead)."""
        if path in self.verified:
            return self.verified[path]
        if not Path(path).exists():
            self.fail(path, "file is missing")
        try:
            record = provenance.read_record(path)
        except FileNotFoundError as missing:
            self.fail(path, str(missing))
        recorded = next((h for files in record["outputs"].values() for p, h in files.items() if p == path), None)
        if recorded != provenance.sha256(path):
            self.fail(path, f"sha256 differs from the one rule {record['rule']!r} recorded: changed since it was made")
        if inputs:
            for files in record["inputs"].values():
                for source, digest in files.items():
                    self.check_input(source, digest, path)
        self.verified[path] = record
        return record

    def check_input(self, source: str, digest: str, consumer: str, walk: bool = True) -> None:
        """``source`` still has the hash ``consumer``'s job recorded; with ``walk``, it is verified in turn."""
        if not Path(source).exists():
            self.fail(source, f"input of {consumer} is missing")
        if provenance.sha256(source) != digest:
            self.fail(source, f"changed since {consumer} was made from it (sha256 differs)")
        if walk and Path(source).parts[0] == provenance.RESULTS:
            self.verify(source)

    def recompute_metrics(self, metrics_file: str) -> dict:
        """The metrics file's values, checked against pytrec_eval on its run and qrels."""
        record = self.verify(metrics_file)
        stored = evaluation.read_metrics(metrics_file)
        inputs = {name: next(iter(files)) for name, files in record["inputs"].items() if name != "code"}
        metrics = record["params"]["metrics"]
        summary = evaluation.evaluate_fold(inputs["run"], inputs["qrels"], inputs["folds"], record["wildcards"]["fold"],
                                           metrics, record["params"].get("depth"))
        per_query = summary["per_query"]
        for metric in metrics:
            if not _close(summary["mean"][metric], stored["mean"][metric]):
                self.fail(metrics_file, f"{metric} is {stored['mean'][metric]!r}, but pytrec_eval on "
                                        f"{inputs['run']} gives {summary['mean'][metric]!r}")
        if set(per_query) != set(stored["per_query"]) or any(
                not _close(per_query[q][m], stored["per_query"][q][m]) for q in per_query for m in metrics):
            self.fail(metrics_file, f"per-query values differ from pytrec_eval on {inputs['run']}")
        return stored

    def check_cell(self, item: Cell, table: str, table_inputs: dict[str, str]) -> None:
        cell = item.cell
        values = []
        for entry in cell["runs"]:
            if entry["metrics_file"] not in table_inputs:
                self.fail(entry["metrics_file"], f"is not among the inputs recorded for {table}")
            self.check_input(entry["metrics_file"], table_inputs[entry["metrics_file"]], table)
            stored = self.recompute_metrics(entry["metrics_file"])
            value = stored["mean"][cell["metric"]]
            if not _close(value, entry["value"]):
                self.fail(entry["metrics_file"], f"the table took {entry['value']!r}, the file holds {value!r}")
            if entry.get("per_query") != {q: v[cell["metric"]] for q, v in stored["per_query"].items()}:
                self.fail(entry["metrics_file"], "the table's per-query values differ from the file's")
            values.append(value)
        mean = fmean(values)
        if not _close(mean, cell["value"]):
            self.fail("table", f"value {cell['value']!r} is not the mean {mean!r} of its {len(values)} runs")
        if cell["printed"] != f"{mean:.4f}":
            self.fail("table", f"printed {cell['printed']!r}, but the mean {mean!r} prints as {mean:.4f}")
        if item.baseline is None:
            return
        per_seed = {}
        for entry, value in zip(cell["runs"], values):
            per_seed.setdefault(str(entry["seed"]), []).append(value)
        per_seed = {seed: fmean(v) for seed, v in per_seed.items()}
        if set(per_seed) != set(cell["per_seed"]) or any(not _close(per_seed[s], cell["per_seed"][s]) for s in per_seed):
            self.fail("table", f"per-seed means {cell['per_seed']} differ from the runs' {per_seed}")
        p = stats.ttest_greater(list(per_seed.values()), list(item.baseline["per_seed"].values()))
        p = None if math.isnan(p) else p
        if not _close(p, cell["p_value"]) or stats.stars(p) != cell["stars"]:
            self.fail("table", f"t-test against full FT gives p = {p} and star {stats.stars(p)!r}, "
                               f"the table has p = {cell['p_value']} and {cell['stars']!r}")

    def chain(self, item: Cell) -> list[str]:
        """Human-readable trace of a cell: commit → config → weights → run → metric → cell."""
        cell = item.cell
        taken = f", taken from {cell['method']}" if ":lft_best:" in item.id else ""
        lines = [f"cell {item.id} ({item.label}, {cell['dataset']} {cell['metric']}{taken})",
                 f"  printed {cell['printed']}{cell['stars']} = mean {cell['value']!r} of {len(cell['runs'])} runs "
                 f"({cell['rounding']})"]
        if cell.get("ttest"):
            lines.append(f"  star {cell['stars'] or 'none'}: p = {cell['p_value']} for per-seed means "
                         f"{cell['ttest']['values']} vs full FT's {cell['ttest']['baseline']}")
        runs = []
        for entry in cell["runs"]:
            metrics = self.verified[entry["metrics_file"]]
            run_file = next(iter(metrics["inputs"]["run"]))
            run = self.verified[run_file]
            weights = run["inputs"].get("weights")
            train = self.verified[next(iter(weights))] if weights else None
            steps = ([f"weights {next(iter(weights))} [{next(iter(weights.values()))[:12]}]"] if weights else [])
            steps += [f"run {run_file} [{run['outputs']['run'][run_file][:12]}]",
                      f"{entry['metrics_file']}: {cell['metric']} {entry['value']!r} (pytrec_eval agrees)"]
            runs.append((train or run, "    " + " → ".join(steps)))
        commits = sorted({f"{r['git']['commit']} ({'dirty' if r['git']['dirty'] else 'clean'})" for r, _ in runs})
        first = runs[0][0]
        lines.append(f"  commit {', '.join(commits)}; config files {first['configfiles'] or ['config.yaml']}")
        if first["rule"] == "train":
            params = first["params"]
            lines.append(f"  config → params: method {json.dumps(params['method'], sort_keys=True)}; "
                         f"training {json.dumps(params['training'], sort_keys=True)}; "
                         f"backbone {json.dumps(params['backbone'], sort_keys=True)}")
        lines += [line for _, line in runs]
        return lines


def params_changed(workdir: Path, targets: list[str], source: str, configfiles: list[str]) -> set[str]:
    """Outputs of the jobs a dry run would redo because their params differ from the recorded ones
    (Snakemake's own comparison of its metadata with what the current config gives)."""
    command = [sys.executable, "-m", "snakemake", *targets, "--dry-run", "--snakefile", str(Path(source) / "Snakefile"),
               "--directory", str(workdir), "--cores", "1"]
    if configfiles:
        command += ["--configfile", *configfiles]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"snakemake --dry-run failed:\n{done.stderr[-2000:]}")
    changed = set()
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", done.stdout):
        outputs = re.search(r"^\s+output: (.*)$", block, re.M)
        if outputs and "Params have changed" in block:
            changed.update(path.strip() for path in outputs.group(1).split(","))
    return changed


def audit(table_path: str, cells: list[str] | None = None, check_config: bool = True,
          say: Callable[[str], None] = print) -> int:
    """Audit ``table_path`` (a table's .tex) from the working directory that holds ``results/``; 0 = all match."""
    auditor = Auditor()
    auditor.cell = "(table)"
    try:
        record = auditor.verify(table_path, inputs=False)
        table_inputs = {p: h for files in record["inputs"].values() for p, h in files.items()}
        json_path = next(iter(record["outputs"]["json"]))
        table = json.loads(Path(json_path).read_text())
        if tables.render_latex(table) != Path(table_path).read_text():
            auditor.fail(table_path, f"is not the LaTeX rendering of {json_path}")
        chosen = list(cells_of(table))
        if cells:
            unknown = sorted(set(cells) - {c.id for c in chosen})
            if unknown:
                say(f"unknown cell(s) {unknown}; cells of {table_path}: {', '.join(c.id for c in chosen)}")
                return 2
            chosen = [c for c in chosen if c.id in cells]
        for item in chosen:
            auditor.cell = item.id
            auditor.check_cell(item, table_path, table_inputs)
        auditor.cell = "(table)"
        for source, digest in table_inputs.items():   # the rest (summaries, code): unchanged since the table
            auditor.check_input(source, digest, table_path, walk=False)
        if check_config:
            auditor.cell = "(config)"
            changed = params_changed(Path("."), [table_path], record["source"], record["configfiles"])
            for path in sorted(set(auditor.verified) & changed):
                auditor.fail(path, "its recorded params differ from what the current config gives "
                                   "(snakemake --dry-run: params have changed); rerun to refresh it")
    except AuditFailure as failure:
        say(f"AUDIT FAILED: {failure}")
        return 1
    for item in chosen:
        for line in auditor.chain(item):
            say(line)
    say(f"audit passed: {len(chosen)} cell(s), {len(auditor.verified)} files re-hashed with their inputs, "
        f"metrics recomputed, t-tests rerun" + (", params match the config" if check_config else ""))
    return 0

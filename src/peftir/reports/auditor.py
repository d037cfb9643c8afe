"""The audit's shared checks, which every system's report checks build on: an ``Auditor`` re-hashes a file's chain of
provenance records, recomputes a metrics file with ir_measures, a cell's mean, printed value, per-seed means and
t-test, and traces a cell back to its commit, config, weights and run; and the helpers a report check uses to
rebuild its cells from its recorded inputs and compare them key by key.

What a system teaches the audit, it registers (``Audits``, named by its ``peftir.systems.System``): a check per
report kind it makes (``ReportCheck``: how its table or figure is checked, the runs the config asks for, the cells
behind a companion's cells, a cell's trace where it is not a run's), which artefact kind is made from which (the trace's
walk back), its trained kinds (where a trace looks for the config behind a run), cells whose metric is no run's
(checked by the system that measures them). ``peftir.app.audit`` joins them and names no system."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any, Callable, Iterable, Mapping

from ..contract.paths import RESULTS
from ..contract.wildcards import Artefacts
from ..evaluation import stats
from ..evaluation.metrics import evaluation_summary, read_metrics
from ..provenance import records
from . import retrieval_tables as retrieval
from .cells import REFERENCE_ROW
from .tables import read_table

TOLERANCE = 1e-12
# what the summary counts, each a check that recomputes rather than re-hashes (a system may count its own)
METRICS_RECOMPUTED, TESTS_RERUN = "metrics files recomputed with ir_measures", "t-tests rerun"
COMPANION_TESTS = "companion comparisons retested"
Say = Callable[[str], None]


def close(a: float | None, b: float | None) -> bool:
    """Equal within ``TOLERANCE`` (None only to None): a value recomputed against the one a file stores."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0, abs_tol=TOLERANCE)


class AuditFailure(Exception):
    """The first thing that does not match: which cell, which file, why."""

    def __init__(self, cell: str, file: str, reason: str):
        super().__init__(f"cell {cell}: {file}: {reason}")
        self.cell, self.file, self.reason = cell, file, reason


CellCheck = Callable[["Auditor", dict, str, dict], None]


@dataclass(frozen=True)
class ReportCheck:
    """How the audit checks one kind of report (a table's .tex, a figure's .pdf).

    ``check(auditor, report, record, cells, say)`` checks every printed number (or the ``cells`` asked for) and
    returns them, or None, having said which exist, for an unknown cell. ``planned(record, config, report)`` gives
    the inputs the current config asks of the job that made it, by input name, and the settings they follow.
    ``what`` is what it is made of ("cell", "bar", "point"); ``table`` says a companion (scorecard, significance) may
    be made from it; ``behind(json_path, cells)`` gives the cells a companion's cells stand on, where a cell is derived
    from others (the table's own check checks the derivation); ``trace(auditor, cell)`` writes a cell's trace where
    it is not a run's (``Auditor.chain``)."""

    what: str
    check: Callable[["Auditor", str, dict, list[str] | None, Say], list[dict] | None]
    planned: Callable[[dict, Mapping[str, Any], str], tuple[dict[str, list[str]], str]]
    table: bool = False
    behind: Callable[[str, set[str]], set[str]] | None = None
    trace: Callable[["Auditor", dict], list[str]] | None = None


@dataclass(frozen=True)
class Audits:
    """What one system (or all, ``joined``) teaches the audit.

    ``reports``: its report kinds' checks. ``made_from``: by artefact kind, the input kinds that made it (a trace
    walks back along them). ``trained``: the kinds a trace names as a run's trained origin, each with the params of
    its record the trace prints. ``measured``: artefact kinds whose values are not ir_measures' on a run, with what
    the trace says recomputed them. ``metrics``: cells of these metrics are checked by the function given, not as
    runs' means. ``evaluations``: the params its own evaluate script hands to ``peftir.evaluation.metrics``'s
    ``measure_run`` under another name, by that name (``metrics``, ``depth``), for the audit to recompute its metrics
    files alike (``evaluation_summary`` reads the in-tree systems' evaluation params by their own names)."""

    reports: Mapping[str, ReportCheck] = field(default_factory=dict)
    made_from: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    trained: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    measured: Mapping[str, str] = field(default_factory=dict)
    metrics: Mapping[str, CellCheck] = field(default_factory=dict)
    evaluations: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def joined(parts: Iterable["Audits"]) -> "Audits":
        """One ``Audits`` of several systems'; a report kind, artefact kind or metric taught twice is refused."""
        joined: dict[str, dict] = {name: {} for name in ("reports", "made_from", "trained", "measured", "metrics",
                                                          "evaluations")}
        for part in parts:
            for name, found in joined.items():
                twice = sorted(set(found) & set(getattr(part, name)))
                if twice:
                    raise ValueError(f"the audit is taught {name} {', '.join(twice)} twice")
                found.update(getattr(part, name))
        return Audits(**joined)


@dataclass
class Auditor:
    """Checks run from the working directory; ``verified`` memoises each checked file's record, ``hashes``
    each file's sha256 by the hashing its records name (a job's outputs are checked with each of them, an input
    with each consumer).
    ``left_out``: files a crate leaves out by design (weights, licensed documents), by path, with why:
    their records are checked, their bytes cannot be. ``artefacts`` names a path's artefact kind and ``audits`` what
    the systems teach (the joined ``peftir.pipeline.contract.PATHS`` and every system's ``Audits``): a cell's trace
    and a cell of a metric no run measures need them."""

    verified: dict[str, dict] = field(default_factory=dict)
    hashes: dict[tuple[str, int], str] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    checkout: Path = Path(".")      # the workflow's files (a paper's reported numbers) are read from it
    cell: str = ""   # the cell being audited, for the failure message
    done: dict[str, set[str]] = field(default_factory=dict)     # what each recomputing check covered, by file or cell
    artefacts: Artefacts | None = None
    audits: Audits = Audits()

    def did(self, check: str, item: str) -> None:
        """Count ``item`` (a file, a cell) as covered by ``check``, for the summary's "N of M"."""
        self.done.setdefault(check, set()).add(item)

    def fail(self, file: str | Path, reason: str) -> None:
        raise AuditFailure(self.cell, str(file), reason)

    def sha256(self, path: str, record: dict) -> str:
        """The file's sha256 as ``record`` computed its digests (records written before directories were hashed
        with lengths name no ``hashing`` and are read the old way; a file's bytes hash alike either way)."""
        key = (path, records.hashing_of(record) if Path(path).is_dir() else 0)
        if key not in self.hashes:
            self.hashes[key] = records.sha256(path, key[1])
        return self.hashes[key]

    def absent(self, path: str, why: str) -> bool:
        """True for a file left out of a crate by design (it is not re-hashed); fails for any other missing file."""
        if Path(path).exists():
            return False
        if path in self.left_out:
            return True
        self.fail(path, why)

    def verify(self, path: str, inputs: bool = True) -> dict:
        """The file's record, after checking the hashes of the file and of every output its job wrote with it
        and, with ``inputs``, those of the inputs it was made from and, transitively, theirs (a table's
        inputs are checked cell by cell instead)."""
        if path in self.verified:
            return self.verified[path]
        self.absent(path, "file is missing")
        try:
            record = records.read_record(path)
        except FileNotFoundError as missing:
            self.fail(path, f"{missing}: what made it cannot be confirmed")
        if not any(path in files for files in record["outputs"].values()):
            self.fail(records.record_path(path), f"is not a record of {path}")
        for files in record["outputs"].values():
            for output, digest in files.items():
                if self.absent(output, f"output of the {record['rule']!r} job that made {path} is missing"):
                    continue
                if self.sha256(output, record) != digest:
                    self.fail(output, f"sha256 differs from the one rule {record['rule']!r} recorded: "
                                      f"changed since it was made")
        self.verified[path] = record
        if inputs:
            for files in record["inputs"].values():
                for source, digest in files.items():
                    self.check_input(source, digest, path)
        return record

    def check_input(self, source: str, digest: str, consumer: str, walk: bool = True) -> None:
        """``source`` and its record are what ``consumer``'s job recorded; with ``walk``, it is verified in turn."""
        if not self.absent(source, f"input of {consumer} is missing") and \
                self.sha256(source, self.verified[consumer]) != digest:
            self.fail(source, f"changed since {consumer} was made from it (sha256 differs)")
        if Path(source).parts[0] != RESULTS:
            return
        expected = self.verified[consumer].get("input_records", {}).get(source)
        if expected is None or records.record_sha256(source) != expected:
            self.fail(records.record_path(source), f"the provenance record of {source} is not the one {consumer} "
                                                   f"was made with (edited, replaced or missing since)")
        if walk:
            self.verify(source)

    def recompute_metrics(self, metrics_file: str) -> dict:
        """The metrics file's values, checked against ir_measures on its run and qrels."""
        record = self.verify(metrics_file)
        stored = read_metrics(metrics_file)
        inputs = {name: next(iter(files)) for name, files in record["inputs"].items() if files}
        evaluation = {self.audits.evaluations.get(name, name): value for name, value in record["params"].items()}
        if len(evaluation) != len(record["params"]):
            self.fail(metrics_file, f"its params {sorted(record['params'])} hold both a param and the one the "
                                    f"audit reads in its place ({dict(self.audits.evaluations)})")
        summary = evaluation_summary(inputs["run"], inputs["qrels"], inputs["folds"], record["wildcards"]["fold"],
                                     evaluation, inputs.get("flops"))
        metrics = summary["metrics"]
        per_query = summary["per_query"]
        for metric in metrics:
            if not close(summary["mean"][metric], stored["mean"][metric]):
                self.fail(metrics_file, f"{metric} is {stored['mean'][metric]!r}, but ir_measures on "
                                        f"{inputs['run']} gives {summary['mean'][metric]!r}")
        if set(per_query) != set(stored["per_query"]) or any(
                not close(per_query[q][m], stored["per_query"][q][m]) for q in per_query for m in metrics):
            self.fail(metrics_file, f"per-query values differ from ir_measures on {inputs['run']}")
        self.did(METRICS_RECOMPUTED, metrics_file)
        return stored

    def check_cell(self, cell: dict, baseline: dict | None, table: str, table_inputs: dict[str, str]) -> None:
        """A cell is the mean of its runs' metrics files (each one recorded for ``table``, re-hashed back along its
        chain and recomputed), printed to four places; with a ``baseline``, its per-seed means and its one-sided
        t-test against the baseline's. A cell of a metric a system measures otherwise is that system's to check."""
        measured = self.audits.metrics.get(cell["metric"])
        if measured is not None:
            return measured(self, cell, table, table_inputs)
        values = []
        for entry in cell["runs"]:
            if entry["metrics_file"] not in table_inputs:
                self.fail(entry["metrics_file"], f"is not among the inputs recorded for {table}")
            self.check_input(entry["metrics_file"], table_inputs[entry["metrics_file"]], table)
            stored = self.recompute_metrics(entry["metrics_file"])
            value = stored["mean"][cell["metric"]]
            if not close(value, entry["value"]):
                self.fail(entry["metrics_file"], f"the table took {entry['value']!r}, the file holds {value!r}")
            if entry.get("per_query") != {q: v[cell["metric"]] for q, v in stored["per_query"].items()}:
                self.fail(entry["metrics_file"], "the table's per-query values differ from the file's")
            values.append(value)
        mean = fmean(values)
        if not close(mean, cell["value"]):
            self.fail(table, f"value {cell['value']!r} is not the mean {mean!r} of its {len(values)} runs")
        if cell["printed"] != f"{mean:.4f}":
            self.fail(table, f"printed {cell['printed']!r}, but the mean {mean!r} prints as {mean:.4f}")
        if baseline is None:
            return
        per_seed: dict[str, list[float]] = {}
        for entry, value in zip(cell["runs"], values):
            per_seed.setdefault(str(entry["seed"]), []).append(value)
        means = {seed: fmean(v) for seed, v in per_seed.items()}
        if set(means) != set(cell["per_seed"]) or any(not close(means[s], cell["per_seed"][s]) for s in means):
            self.fail(table, f"per-seed means {cell['per_seed']} differ from the runs' {means}")
        p = stats.ttest_greater(list(means.values()), list(baseline["per_seed"].values()))
        p = None if math.isnan(p) else p
        if not close(p, cell["p_value"]) or stats.stars(p) != cell["stars"]:
            self.fail(table, f"t-test against the baseline {baseline['cell']} gives p = {p} and star "
                             f"{stats.stars(p)!r}, the table has p = {cell['p_value']} and {cell['stars']!r}")
        self.did(TESTS_RERUN, cell["cell"])

    def chain(self, cell: dict) -> list[str]:
        """Human-readable trace of a cell: commit → config → weights → run → metric → cell."""
        if not cell["runs"] and cell.get("metric") == retrieval.MEAN:
            return [f"cell {cell['cell']} ({cell['label']}): {cell['printed']} = the mean of the row's cells "
                    f"{cell['candidates']} (each traced on its own line)"]
        if not cell["runs"] and cell.get("note"):
            return [f"cell {cell['cell']} ({cell['label']}): {cell['printed']}, {cell['note']}: nothing to trace"]
        if not cell["runs"]:
            return [f"cell {cell['cell']} ({cell['label']}): {cell['printed']} copied from {cell['source']}, "
                    f"not reproduced here: nothing to trace"]
        taken = f", taken from {cell['method']}" if isinstance(cell.get("candidates"), dict) else ""  # a best-of row
        row = cell["group"] or ("reference" if cell.get("row_kind") == REFERENCE_ROW else "")
        lines = [f"cell {cell['cell']} ({row + ' / ' if row else ''}{cell['label']}, {cell['dataset']} "
                 f"{cell['metric']}{taken})",
                 f"  printed {cell['printed']}{cell['stars']} = mean {cell['value']!r} of {len(cell['runs'])} runs "
                 f"({cell['rounding']})"]
        test = cell.get("ttest")
        if test and "values" in test:
            lines.append(f"  star {cell['stars'] or 'none'}: p = {cell['p_value']} for per-seed means "
                         f"{test['values']} vs full FT's {test['baseline']}")
        elif test and "baseline_n" in test:
            lines.append(f"  star {cell['stars'] or 'none'}: p = {cell['p_value']} for {test['n']} per-query values "
                         f"vs {test['baseline_n']} of {test['against']} (unpaired, two-sided)")
        elif test:
            lines.append(f"  star {cell['stars'] or 'none'}: p = {cell['p_value']} for {test['n']} per-query values "
                         f"paired with {test['against']}'s (two-sided)")
        runs = [self._steps(entry["metrics_file"]) for entry in cell["runs"]]
        commits = sorted({f"{r['git']['commit']} ({'dirty' if r['git']['dirty'] else 'clean'})" for r, _, _ in runs})
        first, first_kind, _ = runs[0]
        configs = [entry["path"] for entry in first["configfiles"]] or ["config.yaml"]
        lines.append(f"  commit {', '.join(commits)}; config files {configs}")
        shown = [(name, first["params"][name]) for name in self.audits.trained.get(first_kind, ())
                 if name in first["params"]]
        if shown:
            lines.append("  config → params: " + "; ".join(
                f"{name.replace('_', ' ')} {json.dumps(value, sort_keys=True)}" for name, value in shown))
        lines += [line for _, _, line in runs]
        lines += [f"    read the translations {entry['translations']['file']} [{entry['translations']['sha256'][:12]}]"
                  for entry in cell["runs"] if "translations" in entry]
        return lines

    def _steps(self, metrics_file: str) -> tuple[dict, str, str]:
        """The artefacts a metrics file comes from, oldest first: the record of the oldest trained one and its kind
        (the metrics file's own record and kind when none is), and the trace's line."""
        steps, path, origin = [], metrics_file, self.verified[metrics_file]
        origin_kind = self._kind(metrics_file)
        while path:
            record, kind = self.verified[path], self._kind(path)
            if kind in self.audits.trained:
                origin, origin_kind = record, kind
            digest = next(h for files in record["outputs"].values() for p, h in files.items() if p == path)
            steps.append(f"{kind} {path} [{digest[:12]}]")
            path = next((p for files in record["inputs"].values() for p in files
                         if self._kind(p) in self.audits.made_from.get(kind, ())), None)
        agrees = self.audits.measured.get(self._kind(metrics_file), "ir_measures agrees")
        return origin, origin_kind, "    " + " → ".join(reversed(steps)) + f" ({agrees})"

    def _kind(self, path: str) -> str:
        """The artefact kind of ``path`` ("" for none)."""
        found = self.artefacts.match(path) if self.artefacts else None
        return found[0] if found else ""


def report_of(record: dict) -> tuple[str, str]:
    """Which report a table's or figure's job made, from its record's wildcards: ("tables", name) or ("figures",
    name), as a config names it."""
    kind = "tables" if "table" in record["wildcards"] else "figures"
    return kind, record["wildcards"]["table" if kind == "tables" else "figure"]


def chosen(numbers: list[dict], cells: list[str] | None, report: str, say: Say
           ) -> list[dict] | None:
    """The ``cells`` asked for (every one when None); None, having said which exist, for an unknown one."""
    if not cells:
        return numbers
    unknown = sorted(set(cells) - {c["cell"] for c in numbers})
    if unknown:
        say(f"unknown cell(s) {unknown}; cells of {report}: {', '.join(c['cell'] for c in numbers)}")
        return None
    return [c for c in numbers if c["cell"] in cells]


def check_runs(auditor: Auditor, cells: list[dict], report: str, record: dict) -> None:
    """Each cell's runs: their files' chains re-hashed and metrics recomputed, the cell their mean."""
    hashes = {p: h for files in record["inputs"].values() for p, h in files.items()}
    for cell in cells:
        auditor.cell = cell["cell"]
        auditor.check_cell(cell, None, report, hashes)


def rebuilt(auditor: Auditor, record: dict, report: str, build: Callable[[list, list, list], object]) -> object:
    """What ``build`` (a report's builder given its layout) makes of the recorded ``metrics``, ``prerank`` and
    ``summaries`` files, once the summaries (trained parameter counts, module sizes) are checked unchanged."""
    auditor.cell = "(inputs)"
    for source, digest in record["inputs"].get("summaries", {}).items():
        auditor.check_input(source, digest, report, walk=False)
    try:
        return build(*(list(record["inputs"].get(name, {})) for name in ("metrics", "prerank", "summaries")))
    except ValueError as problem:
        auditor.fail(report, f"its recorded inputs do not make its layout: {problem}")


def compare_cells(auditor: Auditor, stored: list[dict], made: list[dict], report: str, complete: bool) -> None:
    """Each stored cell is the one rebuilt from the recorded inputs and layout, key by key: which runs make it,
    in which row and column, with which module size (a run moved from one cell to another keeps every hash
    and mean right; only this notices); ``complete``: no cell of the layout is missing."""
    by_id = {cell["cell"]: cell for cell in made}
    for cell in stored:
        auditor.cell = cell["cell"]
        found = by_id.get(cell["cell"])
        if found is None:
            auditor.fail(report, "is not a cell of its layout")
        differ = [key for key in sorted(set(cell) | set(found)) if cell.get(key) != found.get(key)]
        if differ:
            auditor.fail(report, f"{', '.join(differ)} differ from what its recorded inputs and layout give")
    missing = sorted(set(by_id) - {cell["cell"] for cell in stored}) if complete else []
    if missing:
        auditor.cell = "(report)"
        auditor.fail(report, f"lacks cells of its layout: {missing}")


def check_star(auditor: Auditor, cell: dict, baseline: dict, table: str, p: float, test: str) -> None:
    """A cell's p-value ``p`` (NaN: undefined) and star, recomputed by ``test`` against ``baseline``, are the
    table's."""
    auditor.cell = cell["cell"]
    p = None if math.isnan(p) else p
    if not close(p, cell["p_value"]) or stats.star(p) != cell["stars"] or \
            cell["ttest"]["against"] != baseline["cell"]:
        auditor.fail(table, f"the {test} against {baseline['cell']} gives p = {p} and star {stats.star(p)!r}, "
                            f"the table has p = {cell['p_value']} and {cell['stars']!r}")
    auditor.did(TESTS_RERUN, cell["cell"])


ReportChecker = Callable[[Auditor, str, dict, list[str] | None, Say], list[dict] | None]


def paired_table_check(param: str, render: Callable[[Any, dict], str],
                       cells_of: Callable[[dict, list[str], list[str], Artefacts | None], list[dict]]) -> ReportChecker:
    """The check of a table whose job records its layout as the param ``param``, whose LaTeX ``render`` draws from
    its JSON twin (and the layout), whose cells ``cells_of(layout, metrics, summaries, artefacts)`` makes from its
    recorded inputs, and whose stars are paired t-tests against a baseline cell (``retrieval_tables.paired_p``)."""

    def check(auditor: Auditor, table_path: str, record: dict, cells: list[str] | None, say: Say
              ) -> list[dict] | None:
        """Check every printed number of the table (or the ``cells`` asked for): the LaTeX is the rendering of its
        JSON twin, each measured cell its runs' mean, each star the paired test against its baseline cell (checked
        too), and each cell, copied ones included, the one its recorded inputs and layout give."""
        json_path = next(iter(record["outputs"]["json"]))
        frame = read_table(json_path)
        spec = record["params"][param]
        if render(frame, spec) != Path(table_path).read_text():
            auditor.fail(table_path, f"is not the LaTeX rendering of {json_path}")
        every = frame.to_dict(orient="records")
        by_id = {c["cell"]: c for c in every}
        numbers = chosen(every, cells, table_path, say)
        if numbers is None:
            return None
        baselines = {c["cell"]: by_id[c["ttest"]["against"]] for c in numbers if c.get("ttest")}
        needed = numbers + [c for c in baselines.values() if c not in numbers]
        check_runs(auditor, [c for c in needed if c["runs"]], table_path, record)
        for cell in numbers:
            if cell.get("ttest"):
                baseline = baselines[cell["cell"]]
                check_star(auditor, cell, baseline, table_path,
                           retrieval.paired_p(*retrieval.paired_values(cell, baseline)), "paired t-test")
        made = rebuilt(auditor, record, table_path,
                       lambda metrics, _, summaries: cells_of(spec, metrics, summaries, auditor.artefacts))
        compare_cells(auditor, needed, made, json_path, complete=not cells)
        return numbers

    return check


def retrieval_table_check(layout: str) -> ReportChecker:
    """The check of a first-stage retrieval table (``peftir.reports.retrieval_tables``) whose job records its layout
    as the param ``layout``: its baseline row's cell in each column is a star's baseline."""
    return paired_table_check(layout, retrieval.render_dense_latex, retrieval.dense_cells)

"""Audit of a result table: each cell walked back through the provenance records and re-checked.

For every cell (or the ones asked for) the audit
  1. re-hashes every file of its chain (table and its JSON/CSV twins → metrics → run and its
     ir_metadata → weights and training summary → BM25 run → index → folds, qrels, exported
     collection) against the records its producers and consumers wrote, and each input's record
     against the digest its consumer's record holds, so a record edited on its own breaks the chain;
  2. recomputes each metric from the run file and the qrels with ir_measures (an alignment or uniformity cell,
     DPTDR Table 8: from the index's passage vectors and the file's stored query-passage distances);
  3. recomputes the cell's mean, printed value, per-seed means, t-test p-value and star, the
     improvement rows, and re-renders the LaTeX table from its JSON twin;
  4. recomputes, from the config files the table was built with, the params every record of the
     chain should hold (``peftir.pipeline.contract.PARAMS``, the functions the rules take them from) key by
     key, the runs the table should hold (seeds, folds, rows: ``peftir.pipeline.plan``) and the
     code version of each job (``peftir.provenance.code_version``), and names what no longer matches;
  5. with ``rescore``, re-derives a few queries of every run a model scored from its stored weights (Semi-Siamese
     and SPLADE rerankings, dense and SPLADE searches, composed CLIR rerankers) and compares the scores with the
     run file (``peftir.app.rescore``): only this catches a forged run whose hashes were all recomputed; a run it
     cannot rescore, or only in part, it names, and the audit then ends "incomplete" (exit 3);
and prints the chain commit → config → weights → run → metric → cell, then what each recomputing check covered
("330 metrics files recomputed with ir_measures", "rescored 30 of 30 runs made from trained weights"). The modular
cross-lingual rerankers' tables and figure (``results/tables/modular-clir/``, ``results/figures/modular-clir/``) are
audited alike: their cells' runs walked back to the ranking modules, each reranker's two-sided t-test
against the pre-ranker rerun, and every cell rebuilt from the recorded inputs (which runs make it).
Condenser's Figure 2 (``results/figures/condenser/``) is audited point by point against its attention files
(``dense_figure_points``), whose entropies are checked against their passages but not recomputed from the models.
The first mismatch stops it, naming the cell and the file. What it does not show: that the code at the recorded commit is
the code that ran (it compares the current checkout's code with the recorded digests), nor, without
``rescore``, that a run came from its weights.
"""
from __future__ import annotations

import json
import math
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Callable

from ..contract.measures import ALIGNMENT, GEOMETRY_METRICS, UNIFORMITY
from ..contract.paths import RESULTS
from ..pipeline.contract import PARAMS, PATHS, artefact
from ..semi_siamese.contract import BASELINE, BEST_OF, REFERENCES
from ..evaluation import stats
from ..evaluation.metrics import evaluation_summary, read_metrics
from ..clir import reports as clir
from ..reports import retrieval_tables as dense
from ..reports.cells import IMPROVEMENT_ROW, METHOD_ROW, REFERENCE_ROW, improvement_cell
from ..reports.tables import read_table, render_latex
from ..pipeline.config import ConfigError, load_config
from ..provenance import records
from ..provenance.code_version import changed, code_version
from .rescore import RESCORED_RULES, rescore
from ..data.reexport import NotOnThisMachine, reexport
from ..errors import ActionableError
from ..pipeline import plan
from ..reports import scorecard
from ..reports.figures import rendered
from ..reports.significance_tables import companion_of, render_significance_latex
from ..clir import plan as clir_plan
from ..dense import plan as dense_plan
from ..semi_siamese import plan as semi_siamese_plan
from ..splade import plan as splade_plan

TOLERANCE = 1e-12
# The chain a cell's trace prints, walking back: which input of an artefact made it (by artefact kind).
MADE_FROM = {"metrics": ("run",), "reference_metrics": tuple(REFERENCES.values()), "run": ("weights",),
             "backbone_run": ("bm25_run",), "weights": ("weights", "first_stage_weights"),
             "clir_metrics": ("clir_run",), "clir_prerank_metrics": ("clir_prerank",),
             "clir_translated_metrics": ("clir_translated_run",), "clir_run": ("ranking_module",),
             "dense_metrics": ("dense_run",), "dense_run": ("dense_index",), "dense_index": ("retriever_model",),
             "untrained_metrics": ("untrained_run",), "untrained_run": ("untrained_index",),
             "dense_geometry": ("dense_index",), "untrained_geometry": ("untrained_index",),
             "dense_bm25_metrics": ("bm25_run",), "dense_target_metrics": ("dense_target_run",),
             "dense_target_run": ("dense_index",), "retriever_model": ("pretrained", "mined_negatives"),
             "mined_negatives": ("dense_run",), "splade_metrics": ("splade_run",), "splade_run": ("splade_index",),
             "splade_index": ("splade_model",), "splade_bm25_metrics": ("bm25_run",),
             "splade_model": ("pretrained", "pretraining_mlm_backbone"), "reranked_metrics": ("reranked_run",),
             "reranked_run": ("reranker_model",)}
MEASURED_VECTORS = ("dense_geometry", "untrained_geometry")     # files of measures on vectors, not on a run
# what a trace names as a run's trained origin
TRAINED = ("weights", "first_stage_weights", "ranking_module", "retriever_model", "splade_model", "reranker_model")
# The report kinds ``audit`` accepts, and what each is made of.
REPORTS = {"table_tex": "cell", "figure_pdf": "bar", "clir_table_tex": "cell", "clir_figure_pdf": "point",
           "dense_table_tex": "cell", "splade_table_tex": "cell", "dense_figure_pdf": "point",
           "scorecard_tex": "table cell", "scorecard_pdf": "table cell", "significance_tex": "table cell"}


class AuditFailure(Exception):
    """The first thing that does not match: which cell, which file, why."""

    def __init__(self, cell: str, file: str, reason: str):
        super().__init__(f"cell {cell}: {file}: {reason}")
        self.cell, self.file, self.reason = cell, file, reason


# what the summary counts, each a check that recomputes rather than re-hashes
METRICS_RECOMPUTED, GEOMETRY_RECOMPUTED = "metrics files recomputed with ir_measures", "geometry files recomputed"
TESTS_RERUN, RESCORED = "t-tests rerun", "runs rescored"
PARTLY_RESCORED = "runs rescored in part"
REEXPORTED, NOT_REEXPORTED = "collections re-exported", "collections not re-exported"
COMPANION_TESTS = "companion comparisons retested"
MODELS = "/models/"          # trained weights live under a models/ folder of results/, in every system
INCOMPLETE = 3               # every check passed, but a requested one could not cover every item


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0, abs_tol=TOLERANCE)


@dataclass
class Auditor:
    """Checks run from the working directory; ``verified`` memoises each checked file's record, ``hashes``
    each file's sha256 by the hashing its records name (a job's outputs are checked with each of them, an input
    with each consumer).
    ``left_out``: files a crate leaves out by design (weights, licensed documents), by path, with why:
    their records are checked, their bytes cannot be."""

    verified: dict[str, dict] = field(default_factory=dict)
    hashes: dict[tuple[str, int], str] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    checkout: Path = Path(".")      # the workflow's files (a paper's reported numbers) are read from it
    cell: str = ""   # the cell being audited, for the failure message
    done: dict[str, set[str]] = field(default_factory=dict)     # what each recomputing check covered, by file or cell

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
        summary = evaluation_summary(inputs["run"], inputs["qrels"], inputs["folds"], record["wildcards"]["fold"],
                                     record["params"], inputs.get("flops"))
        metrics = summary["metrics"]
        per_query = summary["per_query"]
        for metric in metrics:
            if not _close(summary["mean"][metric], stored["mean"][metric]):
                self.fail(metrics_file, f"{metric} is {stored['mean'][metric]!r}, but ir_measures on "
                                        f"{inputs['run']} gives {summary['mean'][metric]!r}")
        if set(per_query) != set(stored["per_query"]) or any(
                not _close(per_query[q][m], stored["per_query"][q][m]) for q in per_query for m in metrics):
            self.fail(metrics_file, f"per-query values differ from ir_measures on {inputs['run']}")
        self.did(METRICS_RECOMPUTED, metrics_file)
        return stored

    def recompute_geometry(self, path: str) -> dict:
        """A geometry file's values (DPTDR Table 8), checked against its pairs, the index's passage vectors and its own
        pair distances (``representation_geometry.recomputed``; the queries are not re-encoded). A crate without
        weights leaves the index out: then only the alignments are recomputed, from the pair distances."""
        from ..dense import representation_geometry   # here, not above: it loads torch and transformers

        record = self.verify(path)
        stored = json.loads(Path(path).read_text())
        inputs = {name: next(iter(files)) for name, files in record["inputs"].items() if files}
        try:
            made = representation_geometry.summary(stored["distances"], stored["mean"][UNIFORMITY]) \
                if self.absent(inputs["index"], f"input of {path} is missing") else \
                representation_geometry.recomputed(stored, inputs["index"], inputs["qrels"], inputs["folds"],
                                                   record["wildcards"]["fold"])
        except ValueError as problem:
            self.fail(path, str(problem))
        for metric in GEOMETRY_METRICS:
            if not _close(made["mean"][metric], stored["mean"][metric]):
                self.fail(path, f"{metric} is {stored['mean'][metric]!r}, but {inputs['index']}'s vectors and its "
                                f"pair distances give {made['mean'][metric]!r}")
        if set(made["per_query"]) != set(stored["per_query"]) or any(
                not _close(value[ALIGNMENT], stored["per_query"][q][ALIGNMENT])
                for q, value in made["per_query"].items()):
            self.fail(path, "per-query alignments are not the means of its pair distances")
        self.did(GEOMETRY_RECOMPUTED, path)
        return stored

    def check_geometry_cell(self, cell: dict, table: str, table_inputs: dict[str, str]) -> None:
        """An alignment or uniformity cell: each geometry file one recorded for the table, its chain re-hashed and its
        values recomputed; the cell their mean, printed × 100 to one decimal."""
        values = []
        for entry in cell["runs"]:
            path = entry["metrics_file"]
            if path not in table_inputs:
                self.fail(path, f"is not among the inputs recorded for {table}")
            self.check_input(path, table_inputs[path], table)
            stored = self.recompute_geometry(path)
            value = stored["mean"][cell["metric"]]
            if not _close(value, entry["value"]):
                self.fail(path, f"the table took {entry['value']!r}, the file holds {value!r}")
            per_query = {q: v[ALIGNMENT] for q, v in stored["per_query"].items()} \
                if cell["metric"] == ALIGNMENT else None
            if entry["per_query"] != per_query:
                self.fail(path, "the table's per-query values differ from the file's")
            values.append(value)
        mean = fmean(values)
        if not _close(mean, cell["value"]) or cell["printed"] != f"{100 * mean:.1f}":
            self.fail(table, f"value {cell['value']!r} printed {cell['printed']!r}: the mean of its {len(values)} "
                             f"files is {mean!r}, printed {100 * mean:.1f}")

    def check_cell(self, cell: dict, baseline: dict | None, table: str, table_inputs: dict[str, str]) -> None:
        if cell["metric"] in GEOMETRY_METRICS:
            return self.check_geometry_cell(cell, table, table_inputs)
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
            self.fail(table, f"value {cell['value']!r} is not the mean {mean!r} of its {len(values)} runs")
        if cell["printed"] != f"{mean:.4f}":
            self.fail(table, f"printed {cell['printed']!r}, but the mean {mean!r} prints as {mean:.4f}")
        if baseline is None:
            return
        per_seed: dict[str, list[float]] = {}
        for entry, value in zip(cell["runs"], values):
            per_seed.setdefault(str(entry["seed"]), []).append(value)
        means = {seed: fmean(v) for seed, v in per_seed.items()}
        if set(means) != set(cell["per_seed"]) or any(not _close(means[s], cell["per_seed"][s]) for s in means):
            self.fail(table, f"per-seed means {cell['per_seed']} differ from the runs' {means}")
        p = stats.ttest_greater(list(means.values()), list(baseline["per_seed"].values()))
        p = None if math.isnan(p) else p
        if not _close(p, cell["p_value"]) or stats.stars(p) != cell["stars"]:
            self.fail(table, f"t-test against full FT gives p = {p} and star {stats.stars(p)!r}, "
                             f"the table has p = {cell['p_value']} and {cell['stars']!r}")
        self.did(TESTS_RERUN, cell["cell"])

    def chain(self, cell: dict) -> list[str]:
        """Human-readable trace of a cell: commit → config → weights → run → metric → cell."""
        if "attention_file" in cell:
            return attention_trace(cell, self.verified[cell["attention_file"]])
        if not cell["runs"] and cell.get("metric") == dense.MEAN:
            return [f"cell {cell['cell']} ({cell['label']}): {cell['printed']} = the mean of the row's cells "
                    f"{cell['candidates']} (each traced on its own line)"]
        if not cell["runs"] and cell.get("note"):
            return [f"cell {cell['cell']} ({cell['label']}): {cell['printed']}, {cell['note']}: nothing to trace"]
        if not cell["runs"]:
            return [f"cell {cell['cell']} ({cell['label']}): {cell['printed']} copied from {cell['source']}, "
                    f"not reproduced here: nothing to trace"]
        taken = f", taken from {cell['method']}" if cell["row"] == BEST_OF else ""
        lines = [f"cell {cell['cell']} ({cell['group'] or 'reference'} / {cell['label']}, {cell['dataset']} "
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
        commits = sorted({f"{r['git']['commit']} ({'dirty' if r['git']['dirty'] else 'clean'})" for r, _ in runs})
        first = runs[0][0]
        configs = [entry["path"] for entry in first["configfiles"]] or ["config.yaml"]
        lines.append(f"  commit {', '.join(commits)}; config files {configs}")
        params = first["params"]
        if "method" in params:
            lines.append(f"  config → params: method {json.dumps(params['method'], sort_keys=True)}; "
                         f"training {json.dumps(params['training'], sort_keys=True)}; "
                         f"backbone {json.dumps(params['backbone'], sort_keys=True)}")
        elif "ranking_module" in params:
            lines.append(f"  config → params: ranking module {json.dumps(params['ranking_module'], sort_keys=True)}")
        lines += [line for _, line in runs]
        lines += [f"    read the translations {entry['translations']['file']} [{entry['translations']['sha256'][:12]}]"
                  for entry in cell["runs"] if "translations" in entry]
        return lines

    def _steps(self, metrics_file: str) -> tuple[dict, str]:
        """The artefacts a metrics file comes from, oldest first, and the record of the oldest trained one."""
        steps, path, origin = [], metrics_file, self.verified[metrics_file]
        while path:
            record = self.verified[path]
            kind = artefact(path)[0]
            if kind in TRAINED:
                origin = record
            digest = next(h for files in record["outputs"].values() for p, h in files.items() if p == path)
            steps.append(f"{kind} {path} [{digest[:12]}]")
            path = next((p for files in record["inputs"].values() for p in files
                         if (artefact(p) or ("",))[0] in MADE_FROM.get(kind, ())), None)
        agrees = "recomputed from the index's vectors" if artefact(metrics_file)[0] in MEASURED_VECTORS \
            else "ir_measures agrees"
        return origin, "    " + " → ".join(reversed(steps)) + f" ({agrees})"


def check_improvements(auditor: Auditor, cells: list[dict], baselines: dict[tuple, dict], table: str) -> None:
    """Each "Improvement (%)" cell is the best of its group's column against full FT's
    (``baselines``: full FT's cell by group, dataset and metric)."""
    for cell in cells:
        if cell["row_kind"] != IMPROVEMENT_ROW:
            continue
        key = (cell["group"], cell["dataset"], cell["metric"])
        baseline = baselines[key]
        column = [c for c in cells if c["row_kind"] == METHOD_ROW and c is not baseline
                  and (c["group"], c["dataset"], c["metric"]) == key]
        expected = improvement_cell(column, baseline)
        if expected["printed"] != cell["printed"] or expected["method"] != cell["method"]:
            auditor.cell = cell["cell"]
            auditor.fail(table, f"the improvement is {expected['printed']} ({expected['method']}), "
                                f"the table prints {cell['printed']} ({cell['method']})")


_ABSENT = "(absent)"


def differences(recorded: object, now: object, key: str) -> list[str]:
    """Each key whose recorded value differs from the one the config gives now, as ``key: recorded → now``."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        return [line for name in sorted(set(recorded) | set(now), key=str)
                for line in differences(recorded.get(name, _ABSENT), now.get(name, _ABSENT), f"{key}.{name}")]
    if isinstance(recorded, list) and isinstance(now, list) and len(recorded) == len(now):
        return [line for index, pair in enumerate(zip(recorded, now))
                for line in differences(*pair, f"{key}[{index}]")]
    return [] if recorded == now else [f"{key}: recorded {recorded!r}, the config gives {now!r}"]


def stale(record: dict, config: dict, checkout: Path) -> str | None:
    """Why a record's params no longer follow from ``config`` and the checkout's code, or None."""
    for name, recorded in record["params"].items():
        if name == "code":
            now = code_version(str(Path(checkout) / recorded["script"]), checkout)
            if now != recorded:
                return f"the code it ran has changed since ({', '.join(changed(recorded, now))})"
        elif name == "reported":
            for entry in recorded:
                if not (Path(checkout) / entry["path"]).is_file() or \
                        records.workflow_file(entry["path"], checkout) != entry:
                    return f"{entry['path']}, the paper's reported numbers it shows, has changed since"
        elif name in PARAMS:
            found = differences(recorded, PARAMS[name](config, record["wildcards"]), f"params.{name}")
            if found:
                return "; ".join(found)
    return None


def planned(record: dict, config: dict, report: str) -> tuple[dict[str, list[str]], str]:
    """The inputs the current config gives the job that made ``report``, by name, and the settings they follow."""
    kind = (artefact(report) or ("",))[0]
    if kind in ("scorecard_tex", "scorecard_pdf", "significance_tex"):
        wanted = plan.scorecard_input(config, record["wildcards"]["report"])
        return ({name: [files] if isinstance(files, str) else files for name, files in wanted.items()
                 if kind != "significance_tex" or name == "table"}, "reproduction.reported, original_runs")
    kind = "tables" if "table" in record["wildcards"] else "figures"
    name = record["wildcards"]["table" if kind == "tables" else "figure"]
    if (artefact(report) or ("",))[0] == "dense_figure_pdf":
        paper = record["wildcards"]["paper"]
        return (dense_plan.dense_figure_inputs(config, paper, name),
                f"dense_retrieval.folds, seeds, figures.{paper}.{name}")
    if (artefact(report) or ("",))[0] == "dense_table_tex":
        paper = record["wildcards"]["paper"]
        return dense_plan.dense_report_runs(config, paper, name), f"dense_retrieval.folds, seeds, tables.{paper}.{name}"
    if (artefact(report) or ("",))[0] == "splade_table_tex":
        return splade_plan.splade_report_runs(config, name), f"sparse_retrieval.folds, seeds, tables.{name}"
    if (artefact(report) or ("",))[0].startswith("clir_"):
        return (clir_plan.clir_report_runs(config, kind, name),
                f"modular_clir.ranking.seeds, {kind}.{name}'s pairs, systems")
    found = {"metrics": semi_siamese_plan.report_runs(config, kind, name, PATHS.metrics),
             "summaries": semi_siamese_plan.report_runs(config, kind, name, PATHS.summary)}
    if kind == "tables":
        found["reference"] = semi_siamese_plan.reference_runs(config)
    return found, "experiment.seeds, datasets, folds, rows"


def check_planned(auditor: Auditor, record: dict, config: dict, report: str) -> None:
    """The table (or figure) holds exactly the runs the current config asks for (datasets or language pairs,
    rows, folds, seeds)."""
    inputs, settings = planned(record, config, report)
    for files_kind, files in inputs.items():
        made = set(record["inputs"].get(files_kind, {}))
        extra, missing = sorted(made - set(files)), sorted(set(files) - made)
        if extra or missing:
            auditor.fail(report, f"its {files_kind} are not those the current config asks for ({settings}): "
                                 f"{len(extra)} not asked for now (e.g. {extra[:2]}), "
                                 f"{len(missing)} missing (e.g. {missing[:2]}); rerun to refresh it")


def config_of(auditor: Auditor, record: dict, checkout: Path, say: Callable[[str], None]) -> dict:
    """The configuration the table was built with: the checkout's config.yaml and the run's config files,
    which must still be there; one changed since is said (params are then checked key by key)."""
    paths = []
    for entry in record["configfiles"]:
        path = records.config_path(entry, checkout)
        if not path.is_file():
            auditor.fail(path, "a config file the table was built with is missing (moved or deleted), so its "
                               "params cannot be confirmed")
        if records.sha256(path) != entry["sha256"]:
            say(f"note: {path} changed since the table was built; every recorded param is checked against it")
        paths.append(str(path))
    try:
        return load_config(checkout, paths)
    except (OSError, ConfigError) as problem:
        auditor.fail(checkout, f"cannot read the configuration the table was built with: {problem}")


def chosen(numbers: list[dict], cells: list[str] | None, report: str, say: Callable[[str], None]
           ) -> list[dict] | None:
    """The ``cells`` asked for (every one when None); None, having said which exist, for an unknown one."""
    if not cells:
        return numbers
    unknown = sorted(set(cells) - {c["cell"] for c in numbers})
    if unknown:
        say(f"unknown cell(s) {unknown}; cells of {report}: {', '.join(c['cell'] for c in numbers)}")
        return None
    return [c for c in numbers if c["cell"] in cells]


def table_cells(auditor: Auditor, table_path: str, record: dict, cells: list[str] | None,
                say: Callable[[str], None]) -> list[dict] | None:
    """Check every printed number of a table (or the ``cells`` asked for); None for an unknown cell."""
    table_inputs = {p: h for files in record["inputs"].values() for p, h in files.items()}
    json_path = next(iter(record["outputs"]["json"]))
    frame = read_table(json_path)
    spec = record["params"]["table"]
    if render_latex(frame, spec["name"], spec["caption"]) != Path(table_path).read_text():
        auditor.fail(table_path, f"is not the LaTeX rendering of {json_path}")
    every = frame.to_dict(orient="records")
    numbers = [c for c in every if c["row_kind"] != IMPROVEMENT_ROW]
    baselines = {(c["group"], c["dataset"], c["metric"]): c for c in every
                 if c["row_kind"] == METHOD_ROW and c["row"] == BASELINE}
    numbers = chosen(numbers, cells, table_path, say)
    if numbers is None:
        return None
    for cell in numbers:
        auditor.cell = cell["cell"]
        baseline = None if cell["row_kind"] == REFERENCE_ROW or cell["row"] == BASELINE \
            else baselines[(cell["group"], cell["dataset"], cell["metric"])]
        auditor.check_cell(cell, baseline, table_path, table_inputs)
    auditor.cell = "(table)"
    check_improvements(auditor, every, baselines, table_path)
    return numbers


def figure_bars(auditor: Auditor, pdf_path: str, record: dict, cells: list[str] | None,
                say: Callable[[str], None]) -> list[dict] | None:
    """Check every bar of a figure: the mean of its runs' metrics, its per-seed whiskers, and that the PDF is
    the drawing of the JSON twin (drawn again: the figure rule writes it without dates, byte for byte)."""
    import io

    from ..reports.figures import draw

    inputs = {p: h for files in record["inputs"].values() for p, h in files.items()}
    json_path = next(iter(record["outputs"]["json"]))
    figure = json.loads(Path(json_path).read_text())
    drawing = draw(figure)
    redrawn = io.BytesIO()
    drawing.savefig(redrawn, format="pdf", metadata={"CreationDate": None})
    if redrawn.getvalue() != Path(pdf_path).read_bytes():
        auditor.fail(pdf_path, f"is not the drawing of {json_path}")
    bars = [{**bar, "cell": f"{panel['group']}:{bar['method']}:{panel['dataset']}:{figure['metric']}",
             "group": panel["group"], "row": bar["method"], "row_kind": METHOD_ROW}
            for panel in figure["panels"] for bar in panel["bars"]]
    if cells:
        bars = [bar for bar in bars if bar["cell"] in cells]
        if not bars:
            say(f"no bar {cells} in {pdf_path}")
            return None
    for bar in bars:
        auditor.cell = bar["cell"]
        auditor.check_cell(bar, None, pdf_path, inputs)
        per_seed: dict[str, list[float]] = {}
        for run in bar["runs"]:
            per_seed.setdefault(str(run["seed"]), []).append(run["value"])
        if any(not _close(fmean(values), bar["per_seed"][seed]) for seed, values in per_seed.items()) \
                or set(per_seed) != set(bar["per_seed"]):
            auditor.fail(json_path, f"the per-seed means of bar {bar['cell']} are not its runs'")
    return bars


def check_runs(auditor: Auditor, cells: list[dict], report: str, record: dict) -> None:
    """Each CLIR cell's runs: their files' chains re-hashed and metrics recomputed, the cell their mean."""
    hashes = {p: h for files in record["inputs"].values() for p, h in files.items()}
    for cell in cells:
        auditor.cell = cell["cell"]
        auditor.check_cell(cell, None, report, hashes)


def rebuilt(auditor: Auditor, record: dict, report: str, build: Callable[[list, list, list], object]) -> object:
    """What ``build`` (a ``peftir.clir.reports`` builder given the layout) makes of the recorded metrics,
    pre-ranker and summaries files, once the summaries (the module sizes) are checked unchanged."""
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
    """A cell's p-value ``p`` (NaN: undefined) and star, recomputed by ``test`` against ``baseline``, are the table's."""
    auditor.cell = cell["cell"]
    p = None if math.isnan(p) else p
    if not _close(p, cell["p_value"]) or stats.star(p) != cell["stars"] or cell["ttest"]["against"] != baseline["cell"]:
        auditor.fail(table, f"the {test} against {baseline['cell']} gives p = {p} and star {stats.star(p)!r}, "
                            f"the table has p = {cell['p_value']} and {cell['stars']!r}")
    auditor.did(TESTS_RERUN, cell["cell"])


def clir_table_cells(auditor: Auditor, table_path: str, record: dict, cells: list[str] | None,
                     say: Callable[[str], None]) -> list[dict] | None:
    """Check every printed number of a modular CLIR table (or the ``cells`` asked for): the LaTeX is the
    rendering of its JSON twin, each cell its runs' mean, each reranker's star the authors' test against the
    pre-ranker in its column (whose cell is checked too), and each cell the one its inputs and layout give."""
    json_path = next(iter(record["outputs"]["json"]))
    frame = read_table(json_path)
    spec = record["params"]["clir_table"]
    if clir.render_clir_latex(frame, spec) != Path(table_path).read_text():
        auditor.fail(table_path, f"is not the LaTeX rendering of {json_path}")
    every = frame.to_dict(orient="records")
    prerank = {c["dataset"]: c for c in every if c["row_kind"] == REFERENCE_ROW}
    numbers = chosen(every, cells, table_path, say)
    if numbers is None:
        return None
    columns = {c["dataset"] for c in numbers}
    needed = numbers + [c for column, c in prerank.items() if column in columns and c not in numbers]
    check_runs(auditor, [c for c in needed if c["runs"]], table_path, record)   # "-": NMT + BM25 without translations
    for cell in numbers:
        if cell["row_kind"] == METHOD_ROW:
            baseline = prerank[cell["dataset"]]
            check_star(auditor, cell, baseline, table_path,
                       stats.ttest_two_sided(clir.pooled(cell), clir.pooled(baseline)), "two-sided t-test")
    translated = list(record["inputs"].get("translated", {}))
    made = rebuilt(auditor, record, table_path, lambda *files: clir.clir_cells(spec, *files, translated))
    compare_cells(auditor, needed, made, json_path, complete=not cells)
    return numbers


def clir_figure_points(auditor: Auditor, pdf_path: str, record: dict, cells: list[str] | None,
                       say: Callable[[str], None]) -> list[dict] | None:
    """Check every point of a modular CLIR figure (or the ``cells`` asked for) as ``clir_table_cells`` does a
    table's cells, and that the PDF is the drawing of its JSON twin (drawn again, byte for byte)."""
    json_path = next(iter(record["outputs"]["json"]))
    figure = json.loads(Path(json_path).read_text())
    if clir.drawn(figure)[0] != Path(pdf_path).read_bytes():
        auditor.fail(pdf_path, f"is not the drawing of {json_path}")
    numbers = chosen(clir.figure_points(figure), cells, pdf_path, say)
    if numbers is None:
        return None
    check_runs(auditor, numbers, pdf_path, record)
    made = rebuilt(auditor, record, pdf_path, lambda *files: clir.build_clir_figure(record["params"]["clir_figure"],
                                                                                     *files))
    compare_cells(auditor, numbers, clir.figure_points(made), json_path, complete=not cells)
    if not cells and figure != made:
        auditor.cell = "(figure)"
        auditor.fail(json_path, "is not the figure its recorded inputs and layout give (lines, labels, factors)")
    return numbers


def dense_table_cells(auditor: Auditor, table_path: str, record: dict, cells: list[str] | None,
                      say: Callable[[str], None]) -> list[dict] | None:
    """Check every printed number of a dense or SPLADE retrieval table (or the ``cells`` asked for): the LaTeX is the
    rendering of its JSON twin, each measured cell its runs' mean, each star the paired test against the
    baseline row's cell in its column (checked too), and each cell, copied ones included, the one its recorded
    inputs and layout give."""
    json_path = next(iter(record["outputs"]["json"]))
    frame = read_table(json_path)
    spec = record["params"]["dense_table" if "dense_table" in record["params"] else "splade_table"]
    if dense.render_dense_latex(frame, spec) != Path(table_path).read_text():
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
            check_star(auditor, cell, baseline, table_path, dense.paired_p(*dense.paired_values(cell, baseline)),
                       "paired t-test")
    made = rebuilt(auditor, record, table_path,
                   lambda metrics, _, summaries: dense.dense_cells(spec, metrics, summaries, PATHS))
    compare_cells(auditor, needed, made, json_path, complete=not cells)
    return numbers


def attention_file_entropy(auditor: Auditor, point: dict) -> None:
    """A point is its layer's mean over the passages of its attention file, as the file's own mean, and the file's
    sample is the one its ids make."""
    from ..dense.attention_entropy import sample_digest   # here, not above: it loads torch and transformers

    found = json.loads(Path(point["attention_file"]).read_text())
    column = [row[point["layer"] - 1] for row in found["per_passage"]]
    mean = fmean(column)
    if not (_close(mean, found["entropy"][point["layer"] - 1]) and _close(mean, point["value"])):
        auditor.fail(point["attention_file"], f"layer {point['layer']}: the figure has {point['value']!r}, the file "
                                              f"{found['entropy'][point['layer'] - 1]!r}, the mean of its "
                                              f"{len(column)} passages {mean!r}")
    ids = found["sample"]["ids"]
    if len(ids) != len(column) or not sample_digest(ids) == found["sample"]["sha256"] == point["sample_sha256"]:
        auditor.fail(point["attention_file"], "its sample of passages is not the one its ids and the figure name")


def dense_figure_points(auditor: Auditor, pdf_path: str, record: dict, cells: list[str] | None,
                        say: Callable[[str], None]) -> list[dict] | None:
    """Check every point of a figure of [CLS] attention entropy (Condenser Figure 2; or the ``cells`` asked for): the
    PDF is the drawing of its JSON twin (drawn again, byte for byte) and the CSV its points; each point's attention
    file is the one recorded, its chain re-hashed back to the checkpoint and the documents, and the point its
    layer's mean over the file's passages; each point, and the whole figure, what the recorded inputs and layout
    give. The entropies themselves are not recomputed from the checkpoint (that is a model run)."""
    from ..dense import attention_figure as attention   # here, not above: it loads torch and transformers

    json_path, csv_path = (next(iter(record["outputs"][name])) for name in ("json", "csv"))
    figure = json.loads(Path(json_path).read_text())
    if attention.drawn(figure)[0] != Path(pdf_path).read_bytes():
        auditor.fail(pdf_path, f"is not the drawing of {json_path}")
    if attention.figure_csv(figure) != Path(csv_path).read_text():
        auditor.fail(csv_path, f"is not the points of {json_path}")
    numbers = chosen(attention.figure_points(figure), cells, pdf_path, say)
    if numbers is None:
        return None
    inputs = {p: h for files in record["inputs"].values() for p, h in files.items()}
    for point in numbers:
        auditor.cell = point["cell"]
        if point["attention_file"] not in inputs:
            auditor.fail(point["attention_file"], f"is not among the inputs recorded for {pdf_path}")
        auditor.check_input(point["attention_file"], inputs[point["attention_file"]], pdf_path)
        attention_file_entropy(auditor, point)
    auditor.cell = "(figure)"
    files = dense_plan.attention_files(record["params"]["dense_figure"])
    if any(set(files[name]) != set(record["inputs"].get(name, {})) for name in files):
        auditor.fail(pdf_path, "its recorded attention files are not those its recorded layout names")
    try:
        made = attention.build_attention_figure(record["params"]["dense_figure"], files["pretrained"],
                                                files["fine_tuned"])
    except ValueError as problem:
        auditor.fail(pdf_path, f"its recorded inputs do not make its layout: {problem}")
    compare_cells(auditor, numbers, attention.figure_points(made), json_path, complete=not cells)
    if not cells and figure != made:
        auditor.cell = "(figure)"
        auditor.fail(json_path, "is not the figure its recorded inputs and layout give (panels, labels, sample)")
    return numbers


def attention_trace(point: dict, record: dict) -> list[str]:
    """A figure point's trace: its value, the passages it averages and the job and checkpoint behind it."""
    state = "dirty" if record["git"]["dirty"] else "clean"
    return [f"cell {point['cell']} ({point['panel']}, {point['model']}, layer {point['layer']}): {point['printed']} "
            f"= mean [CLS] attention entropy over {point['passages']} passages of {point['attention_file']}",
            f"  {record['rule']} at commit {record['git']['commit']} ({state}): checkpoint {point['checkpoint']}; "
            f"sample {point['sample_sha256'][:12]} of {point['docs']} (seed {point['seed']})"]


TABLES = {"table_tex": table_cells, "clir_table_tex": clir_table_cells, "dense_table_tex": dense_table_cells,
          "splade_table_tex": dense_table_cells}


def table_behind(auditor: Auditor, companion: str, record: dict, cells: list[str], say: Callable[[str], None]
                 ) -> list[dict]:
    """The cells ``cells`` of the table a companion (scorecard, significance) was made from, audited as that
    table's own audit audits them: their chains re-hashed, metrics recomputed, tests rerun."""
    (json_path,) = record["inputs"]["table"]
    auditor.check_input(json_path, record["inputs"]["table"][json_path], companion, walk=False)
    table = json_path.removesuffix(".json") + ".tex"
    kind = (artefact(table) or ("",))[0]
    if kind not in TABLES:
        auditor.fail(json_path, f"{companion} was not made from a table's JSON twin")
    auditor.cell = "(table)"
    wanted = _underlying(json_path, set(cells)) if kind == "table_tex" else set(cells)
    made = TABLES[kind](auditor, table, auditor.verify(table, inputs=False), sorted(wanted), say)
    return made or []


def _underlying(json_path: str, cells: set[str]) -> set[str]:
    """The cells of a Semi-Siamese table behind ``cells``: an "Improvement (%)" cell is derived from its column's
    method cells (the table's audit checks the derivation itself), so those are the cells audited for it."""
    rows = read_table(json_path).to_dict(orient="records")
    derived = {(row["ranker"], row["dataset"], row["metric"]): row["cell"] for row in rows
               if row["row_kind"] == IMPROVEMENT_ROW and row["cell"] in cells}
    return (cells - set(derived.values())) | {row["cell"] for row in rows if row["row_kind"] == METHOD_ROW
                                              and (row["ranker"], row["dataset"], row["metric"]) in derived}


def scorecard_cells(auditor: Auditor, tex_path: str, record: dict, cells: list[str] | None,
                    say: Callable[[str], None]) -> list[dict] | None:
    """Check a scorecard: remade from its recorded table and reported file with its recorded params, it is its JSON
    twin, whose rendering are its LaTeX and its figure; every reproduced value it compares is then audited as a cell
    of that table (``cells``: the scorecard cells asked for, by their table cell id)."""
    json_path, pdf = next(iter(record["outputs"]["json"])), next(iter(record["outputs"]["pdf"]))
    stored = json.loads(Path(json_path).read_text())
    for source, digest in record["inputs"]["table"].items():
        auditor.check_input(source, digest, tex_path, walk=False)
    (reported,) = record["params"]["reported"]
    try:
        made = scorecard.scorecard_of(json.loads(Path(next(iter(record["inputs"]["table"]))).read_text()), reported,
                                      record["wildcards"]["report"], record["params"]["reproduction"],
                                      str(auditor.checkout))
    except (ActionableError, FileNotFoundError) as problem:
        auditor.fail(reported["path"], f"is not the reported file {tex_path} was made with: {problem}")
    remade = json.loads(json.dumps(made))
    if remade != stored:
        differ = [key for key in remade if remade[key] != stored.get(key)]
        auditor.fail(json_path, f"{', '.join(differ)} differ from the scorecard its table and reported file give")
    if scorecard.render_scorecard_latex(stored) != Path(tex_path).read_text():
        auditor.fail(tex_path, f"is not the LaTeX rendering of {json_path}")
    if rendered(scorecard.draw_effects(stored))[0] != Path(pdf).read_bytes():
        auditor.fail(pdf, f"is not the ER-vs-ΔRI figure of {json_path}")
    compared = [c["cell"] for c in stored["cells"] if c["reproduced"] is not None]
    unknown = sorted(set(cells or []) - set(compared))
    if unknown:
        say(f"unknown cell(s) {unknown}; cells of {tex_path}: {', '.join(compared)}")
        return None
    return table_behind(auditor, tex_path, record, cells or compared, say) if compared else []


def significance_cells(auditor: Auditor, tex_path: str, record: dict, cells: list[str] | None,
                       say: Callable[[str], None]) -> list[dict] | None:
    """Check a significance companion: remade from its recorded table with its recorded settings (tests, corrected
    p-values, intervals, effect sizes), it is its JSON twin, whose rendering is its LaTeX; every compared cell and
    its baseline are then audited as cells of that table."""
    json_path = next(iter(record["outputs"]["json"]))
    stored = json.loads(Path(json_path).read_text())
    (table_json,) = record["inputs"]["table"]
    (reported,) = record["params"]["reported"]
    try:
        made = companion_of(json.loads(Path(table_json).read_text()), record["params"]["significance"],
                            record["wildcards"]["report"], reported, record["params"]["stand_ins"],
                            str(auditor.checkout))
    except (ActionableError, FileNotFoundError) as problem:
        auditor.fail(reported["path"], f"is not the reported file {tex_path} was made with: {problem}")
    if json.loads(json.dumps(made)) != stored:
        auditor.fail(json_path, "its tests, or the paper's marks beside them, differ from those its table, "
                                "reported file and recorded settings give")
    if render_significance_latex(stored) != Path(tex_path).read_text():
        auditor.fail(tex_path, f"is not the LaTeX rendering of {json_path}")
    for row in stored["comparisons"]:           # every companion test was just rerun with the companion
        auditor.did(COMPANION_TESTS, f"{row['cell']} vs {row['against']}")
    pairs = [(row["cell"], row["against"]) for row in stored["comparisons"]]
    unknown = sorted(set(cells or []) - {cell for cell, _ in pairs})
    if unknown:
        say(f"unknown cell(s) {unknown}; cells of {tex_path}: {', '.join(cell for cell, _ in pairs)}")
        return None
    wanted = [name for cell, against in pairs if not cells or cell in cells for name in (cell, against)]
    return table_behind(auditor, tex_path, record, wanted, say) if wanted else []


def scorecard_figure(auditor: Auditor, pdf_path: str, record: dict, cells: list[str] | None,
                     say: Callable[[str], None]) -> list[dict] | None:
    """Check a scorecard's ER-vs-ΔRI figure: the scorecard job that drew it wrote its LaTeX and JSON twin too, so the
    figure is audited as that scorecard is (``scorecard_cells``: remade, redrawn byte for byte, its cells traced)."""
    tex = next(iter(record["outputs"]["tex"]))
    return scorecard_cells(auditor, tex, auditor.verify(tex, inputs=False), cells, say)


CHECKS = {**TABLES, "figure_pdf": figure_bars, "clir_figure_pdf": clir_figure_points,
          "dense_figure_pdf": dense_figure_points, "scorecard_tex": scorecard_cells,
          "scorecard_pdf": scorecard_figure, "significance_tex": significance_cells}
# what a refusal lists: the files ``audit`` accepts, by the paths they have
ACCEPTED = ("a table's .tex (results/tables/…), its scorecard (….repro.tex, or its ER-vs-ΔRI figure "
            "results/figures/….repro.pdf) or significance companion (….significance.tex), a figure's .pdf "
            "(results/figures/…), each as the workflow wrote it")


def audit(report: str, checkout: Path, cells: list[str] | None = None, check_config: bool = True,
          rescored: int = 0, say: Callable[[str], None] = print, left_out: dict[str, str] | None = None) -> int:
    """Audit ``report`` (a table's .tex or a figure's .pdf, modular CLIR's included) from the working directory that
    holds ``results/``,
    with the workflow's files (config, scripts) from ``checkout``; 0 = all match. ``rescored``: queries per run
    to re-score from the run's weights (0: none). ``left_out``: files a crate left out by design."""
    kind = (artefact(report) or ("",))[0]
    if kind not in CHECKS:
        what = f"a {kind.replace('_', ' ')}, which the audit does not check alone" if kind else \
            "not a path the workflow writes"
        say(f"{report}: {what}; the audit accepts {ACCEPTED}")
        return 2
    auditor = Auditor(left_out=dict(left_out or {}), checkout=Path(checkout))
    auditor.cell = "(table)" if kind.endswith("_tex") else "(figure)"
    try:
        record = auditor.verify(report, inputs=False)
        numbers = CHECKS[kind](auditor, report, record, cells, say)
        if numbers is None:
            return 2
        for files in record["inputs"].values():       # the rest (summaries): unchanged since the report
            for source, digest in files.items():
                auditor.check_input(source, digest, report, walk=False)
        if check_config:
            auditor.cell = "(config)"
            config = config_of(auditor, record, checkout, say)
            check_planned(auditor, record, config, report)
            for path, made in sorted(auditor.verified.items()):
                why = stale(made, config, checkout)
                if why:
                    auditor.fail(path, f"{why}; rerun to refresh it")
        if rescored:
            rescore_runs(auditor, rescored)
        reexport_collections(auditor)
    except AuditFailure as failure:
        say(f"AUDIT FAILED: {failure}")
        return 1
    for cell in numbers:
        for line in auditor.chain(cell):
            say(line)
    skipped = sorted(path for path in auditor.left_out if not Path(path).exists())
    learned = learned_runs(auditor)
    counts = {check: len(items) for check, items in auditor.done.items()}
    exported = counts.get(REEXPORTED, 0) + counts.get(NOT_REEXPORTED, 0)
    if exported:
        say(f"queries and qrels re-exported from ir_datasets and equal: {counts.get(REEXPORTED, 0)} of {exported} "
            f"collection(s)" + "".join(f"; not re-exported: {why}" for why in sorted(auditor.done.get(NOT_REEXPORTED,
                                                                                                       ()))))
    say(f"audit passed: {len(numbers)} {REPORTS[kind]}(s), "
        f"{len(set(auditor.verified) - set(skipped))} files re-hashed with their inputs"
        + "".join(f", {counts[check]} {check}" for check in (METRICS_RECOMPUTED, GEOMETRY_RECOMPUTED, TESTS_RERUN,
                                                               COMPANION_TESTS) if counts.get(check))
        + (", params and code match the config and checkout" if check_config else
           ", params and code not checked (--skip-config)")
        + (f", rescored {len(auditor.done.get(RESCORED, set()) & set(learned))} of {len(learned)} runs made from "
           f"trained weights on {rescored} queries each" if rescored else
           f"; not rescored: {len(learned)} runs made from trained weights (--rescore N checks that they come from "
           f"them)" if learned else ""))
    for partly in sorted(auditor.done.get(PARTLY_RESCORED, ())):
        say(f"rescored in part: {partly}")
    if skipped:
        kinds = sorted({(artefact(p) or ("file",))[0] for p in skipped})
        say(f"not re-hashed: {len(skipped)} files the crate leaves out by design ({', '.join(kinds)}); their "
            f"records, and what was made from them, were checked")
    unrescored = sorted(set(learned) - auditor.done.get(RESCORED, set()) - {
        partly.split(": ")[0] for partly in auditor.done.get(PARTLY_RESCORED, ())})
    if rescored and auditor.done.get(PARTLY_RESCORED):
        say(f"AUDIT INCOMPLETE: --rescore asked, but {len(auditor.done[PARTLY_RESCORED])} run(s) could be rescored "
            f"only in part (named above)")
        return INCOMPLETE
    if rescored and unrescored:
        by_rule: dict[str, int] = {}
        for path in unrescored:
            by_rule[auditor.verified[path]["rule"]] = by_rule.get(auditor.verified[path]["rule"], 0) + 1
        say(f"AUDIT INCOMPLETE: --rescore asked, but the audit cannot rescore "
            + ", ".join(f"{n} run(s) of rule {rule!r}" for rule, n in sorted(by_rule.items()))
            + f" (it rescores the runs of {', '.join(sorted(RESCORED_RULES))}); that they come from their weights is "
              f"not shown")
        return INCOMPLETE
    return 0


def reexport_collections(auditor: Auditor) -> None:
    """Each collection of the chain exported from ir_datasets (a ``download`` job's): its queries and qrels exported
    again from the files ir_datasets has on this machine and compared with the ones the chain was computed against
    (queries or qrels edited with every hash recomputed pass every other check); where ir_datasets would have to
    download, the collection is named as not re-exported, and so is one a job built otherwise (the modular CLIR
    collection: from Debian packages, per language from ir_datasets, or from local files)."""
    auditor.cell = "(collections)"
    for path, made in sorted(auditor.verified.items()):
        if path not in made["outputs"].get("queries", {}):
            continue
        if made["rule"] != "download":    # built otherwise (a system's own collection job): named once per job
            queries = ", ".join(sorted(made["outputs"]["queries"]))
            auditor.did(NOT_REEXPORTED, f"{queries} (made by rule {made['rule']}, not by an ir_datasets export the "
                                        f"audit can repeat)")
            continue
        spec = made["params"]["export"]
        exported_with = {re.sub(r"[-_.]+", "-", name).lower(): version         # older records: import names
                         for name, version in made["versions"].items()}.get("ir-datasets")
        here = records.versions().get("ir-datasets")
        if exported_with != here:
            auditor.did(NOT_REEXPORTED, f"{spec['irds']} (exported with ir_datasets {exported_with}; this machine "
                                        f"has {here}, whose export may differ)")
            continue
        with tempfile.TemporaryDirectory(prefix="peftir-reexport-") as scratch:
            try:
                again = reexport(spec, scratch)
            except NotOnThisMachine as why:
                auditor.did(NOT_REEXPORTED, f"{spec['irds']} ({why})")
                continue
            except Exception as problem:      # ir_datasets' own errors (a partial cache): said, not a verdict
                auditor.did(NOT_REEXPORTED, f"{spec['irds']} (ir_datasets could not read it here: "
                                            f"{type(problem).__name__}: {problem})")
                continue
            for name, fresh in again.items():
                (exported, digest), = made["outputs"][name].items()
                if records.sha256(fresh) != digest:
                    auditor.fail(exported, f"not the {name} ir_datasets {here} exports for {spec['irds']} on this "
                                           f"machine: edited since, or exported from other files of the collection")
        auditor.did(REEXPORTED, path)


def learned_runs(auditor: Auditor) -> list[str]:
    """The run files of the audited chain that a model scored: those of the rules rescoring covers, and any other
    run whose job read trained weights (a model file among its inputs, or among the inputs of a non-run input such
    as an index): what rescoring should cover. A BM25 run is not one, nor a run made only from other runs (mined
    negatives: their runs are rescored)."""
    memo: dict[str, bool] = {}

    def weighted(path: str) -> bool:
        if path not in memo:
            memo[path] = False
            record = auditor.verified.get(path)
            memo[path] = record is not None and any(
                MODELS in f"/{source}" or (not source.endswith(".run") and weighted(source))
                for files in record["inputs"].values() for source in files)
        return memo[path]

    return sorted(path for path, made in auditor.verified.items() if path.endswith(".run") and
                  (made["rule"] in RESCORED_RULES or weighted(path)))


def rescore_runs(auditor: Auditor, queries: int) -> None:
    """Every run of the chain whose rule rescoring covers (``RESCORED_RULES``) re-derived from its weights on
    ``queries`` of its queries; the other runs made from weights are counted as not rescored (``audit`` names
    them), and a run rescored in part, or on no query, is counted and said."""
    auditor.cell = "(rescore)"
    for path, made in sorted(auditor.verified.items()):
        if not path.endswith(".run") or made["rule"] not in RESCORED_RULES:
            continue
        for source in (source for files in made["inputs"].values() for source in files):
            if source in auditor.left_out and not Path(source).exists():
                kind = (artefact(source) or ("file",))[0]
                auditor.fail(source, f"rescoring needs this {kind.replace('_', ' ')}, which the crate left out "
                                     f"({auditor.left_out[source]})")
        why, unchecked, rescored = rescore(path, made, queries)
        if why:
            auditor.fail(path, f"not what its weights give: {why}")
        if rescored:
            auditor.did(RESCORED, path)
        if unchecked or not rescored:
            auditor.did(PARTLY_RESCORED, f"{path}: {unchecked or 'no query of the run could be rescored'}")

"""Audit of a result table: each cell walked back through the provenance records and re-checked.

For every cell (or the ones asked for) the audit
  1. re-hashes every file of its chain (table and its JSON/CSV twins → metrics → run and its
     ir_metadata → weights and training summary → BM25 run → index → folds, qrels, exported
     collection) against the records its producers and consumers wrote, and each input's record
     against the digest its consumer's record holds, so a record edited on its own breaks the chain;
  2. recomputes each metric from the run file and the qrels with ir_measures (a cell of a metric no run measures,
     with the system that measures it);
  3. recomputes the cell's mean, printed value, per-seed means, t-test p-value and star, the cells derived from
     others, and re-renders the LaTeX table from its JSON twin (a figure: redraws its PDF), rebuilding each cell from
     the recorded inputs and layout where a system's report has one;
  4. recomputes, from the config files the table was built with, the params every record of the
     chain should hold (``peftir.pipeline.contract.PARAMS``, the functions the rules take them from) key by
     key, the runs the table should hold (seeds, folds, rows: each system's plan) and the
     code version of each job (``peftir.provenance.code_version``), and names what no longer matches;
  5. with ``rescore``, re-derives a few queries of every run a model scored from its stored weights (the rules each
     system registers a rescorer for) and compares the scores with the run file (``peftir.app.rescore``): only this
     catches a forged run whose hashes were all recomputed; a run it cannot rescore, or only in part, it names, and
     the audit then ends "incomplete" (exit 3);
and prints the chain commit → config → weights → run → metric → cell, then what each recomputing check covered
("330 metrics files recomputed with ir_measures", "rescored 30 of 30 runs made from trained weights"). How a
report kind is checked, and what its artefacts are made from, each system teaches the audit (its ``Audits``, named
by its registration: ``peftir.systems``); the companions every table has (scorecard, significance) are checked
here. The first mismatch stops it, naming the cell and the file. What it does not show: that the code at the
recorded commit is the code that ran (it compares the current checkout's code with the recorded digests), nor,
without ``rescore``, that a run came from its weights.
"""
from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any, Mapping

from ..data.reexport import NotOnThisMachine, reexport
from ..errors import ActionableError
from ..pipeline import plan
from ..pipeline.config import ConfigError, load_config
from ..pipeline.contract import PARAMS, PATHS, artefact
from ..provenance import records
from ..provenance.code_version import changed, code_version, shipped_path
from ..reports import scorecard
from ..reports.auditor import (COMPANION_TESTS, METRICS_RECOMPUTED, TESTS_RERUN, AuditFailure, Auditor, Audits,
                               ReportCheck, Say)
from ..reports.figures import rendered
from ..reports.significance_tables import companion_of, render_significance_latex
from ..systems import load, packages, registered
from .rescore import RESCORED_RULES, rescore

AUDITS = Audits.joined(load(system.audit) for system in registered() if system.audit)
TABLES = {kind: check for kind, check in AUDITS.reports.items() if check.table}     # what a companion is made from
RESCORED, PARTLY_RESCORED = "runs rescored", "runs rescored in part"
REEXPORTED, NOT_REEXPORTED = "collections re-exported", "collections not re-exported"
SAID_APART = {RESCORED, PARTLY_RESCORED, REEXPORTED, NOT_REEXPORTED}     # counts the summary says on their own
MODELS = "/models/"          # trained weights live under a models/ folder of results/, in every system
INCOMPLETE = 3               # every check passed, but a requested one could not cover every item


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
            now = code_version(str(shipped_path(recorded["script"], checkout)), checkout, packages())
            if now != recorded:
                return f"the code it ran has changed since ({', '.join(changed(recorded, now))})"
        elif name == "reported":
            for entry in recorded:
                if not shipped_path(entry["path"], checkout).is_file() or \
                        records.workflow_file(entry["path"], checkout) != entry:
                    return f"{entry['path']}, the paper's reported numbers it shows, has changed since"
        elif name in PARAMS:
            found = differences(recorded, PARAMS[name](config, record["wildcards"]), f"params.{name}")
            if found:
                return "; ".join(found)
    return None


def check_planned(auditor: Auditor, record: dict, config: dict, report: str) -> None:
    """The table (or figure) holds exactly the runs the current config asks for (datasets or language pairs,
    rows, folds, seeds)."""
    inputs, settings = CHECKS[artefact(report)[0]].planned(record, config, report)
    for files_kind, files in inputs.items():
        made = set(record["inputs"].get(files_kind, {}))
        extra, missing = sorted(made - set(files)), sorted(set(files) - made)
        if extra or missing:
            auditor.fail(report, f"its {files_kind} are not those the current config asks for ({settings}): "
                                 f"{len(extra)} not asked for now (e.g. {extra[:2]}), "
                                 f"{len(missing)} missing (e.g. {missing[:2]}); rerun to refresh it")


def config_of(auditor: Auditor, record: dict, checkout: Path, say: Say) -> dict:
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


def table_behind(auditor: Auditor, companion: str, record: dict, cells: list[str], say: Say
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
    behind = TABLES[kind].behind
    wanted = behind(json_path, set(cells)) if behind else set(cells)
    made = TABLES[kind].check(auditor, table, auditor.verify(table, inputs=False), sorted(wanted), say)
    return made or []


def scorecard_cells(auditor: Auditor, tex_path: str, record: dict, cells: list[str] | None,
                    say: Say) -> list[dict] | None:
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
                       say: Say) -> list[dict] | None:
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
                     say: Say) -> list[dict] | None:
    """Check a scorecard's ER-vs-ΔRI figure: the scorecard job that drew it wrote its LaTeX and JSON twin too, so the
    figure is audited as that scorecard is (``scorecard_cells``: remade, redrawn byte for byte, its cells traced)."""
    tex = next(iter(record["outputs"]["tex"]))
    return scorecard_cells(auditor, tex, auditor.verify(tex, inputs=False), cells, say)


def companion_planned(record: dict, config: Mapping[str, Any], report: str) -> tuple[dict[str, list[str]], str]:
    """The table (and, for a scorecard, the original runs) the config asks of a companion, and the settings they
    follow."""
    significance = artefact(report)[0] == "significance_tex"
    wanted = plan.scorecard_input(config, record["wildcards"]["report"])
    return ({name: [files] if isinstance(files, str) else files for name, files in wanted.items()
             if not significance or name == "table"}, "reproduction.reported, original_runs")


COMPANIONS = {"scorecard_tex": ReportCheck("table cell", scorecard_cells, companion_planned),
              "scorecard_pdf": ReportCheck("table cell", scorecard_figure, companion_planned),
              "significance_tex": ReportCheck("table cell", significance_cells, companion_planned)}
CHECKS: Mapping[str, ReportCheck] = Audits.joined([AUDITS, Audits(reports=COMPANIONS)]).reports   # none taught twice
# what a refusal lists: the files ``audit`` accepts, by the paths they have
ACCEPTED = ("a table's .tex (results/tables/…), its scorecard (….repro.tex, or its ER-vs-ΔRI figure "
            "results/figures/….repro.pdf) or significance companion (….significance.tex), a figure's .pdf "
            "(results/figures/…), each as the workflow wrote it")


def audit(report: str, checkout: Path, cells: list[str] | None = None, check_config: bool = True,
          rescored: int = 0, say: Say = print, left_out: dict[str, str] | None = None) -> int:
    """Audit ``report`` (a table's .tex or a figure's .pdf, of any system, or a table's companion) from the working
    directory that holds ``results/``, with the workflow's files (config, scripts) from ``checkout``; 0 = all match.
    ``rescored``: queries per run to re-score from the run's weights (0: none). ``left_out``: files a crate left out
    by design."""
    kind = (artefact(report) or ("",))[0]
    if kind not in CHECKS:
        what = f"a {kind.replace('_', ' ')}, which the audit does not check alone" if kind else \
            "not a path the workflow writes"
        say(f"{report}: {what}; the audit accepts {ACCEPTED}")
        return 2
    auditor = Auditor(left_out=dict(left_out or {}), checkout=Path(checkout), artefacts=PATHS,
                      audits=AUDITS)
    auditor.cell = "(table)" if kind.endswith("_tex") else "(figure)"
    try:
        record = auditor.verify(report, inputs=False)
        numbers = CHECKS[kind].check(auditor, report, record, cells, say)
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
    trace = CHECKS[kind].trace or Auditor.chain
    for cell in numbers:
        for line in trace(auditor, cell):
            say(line)
    skipped = sorted(path for path in auditor.left_out if not Path(path).exists())
    learned = learned_runs(auditor)
    counts = {check: len(items) for check, items in auditor.done.items()}
    exported = counts.get(REEXPORTED, 0) + counts.get(NOT_REEXPORTED, 0)
    if exported:
        say(f"queries and qrels re-exported from ir_datasets and equal: {counts.get(REEXPORTED, 0)} of {exported} "
            f"collection(s)" + "".join(f"; not re-exported: {why}" for why in sorted(auditor.done.get(NOT_REEXPORTED,
                                                                                                       ()))))
    shared = (METRICS_RECOMPUTED, TESTS_RERUN, COMPANION_TESTS)      # a system's own recomputing checks in between
    recomputed = [shared[0], *sorted(set(counts) - set(shared) - SAID_APART), *shared[1:]]
    installed = "".join(f" and the installed {package}" for package in packages() if package != "peftir")
    say(f"audit passed: {len(numbers)} {CHECKS[kind].what}(s), "
        f"{len(set(auditor.verified) - set(skipped))} files re-hashed with their inputs"
        + "".join(f", {counts[check]} {check}" for check in recomputed if counts.get(check))
        + (f", params and code match the config and checkout{installed}" if check_config else
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
    download, the collection is named as not re-exported, and so is one a job built otherwise (a system's own
    collection, from packages, per language from ir_datasets, or from local files)."""
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

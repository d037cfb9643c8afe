"""Significance as the field now asks for it, beside the papers' own tests (``peftir.evaluation.stats``).

The papers test a few per-seed means (Semi-Siamese) or pooled per-query scores unpaired (modular CLIR), with no
correction for the many comparisons a table makes. Here each table's family of comparisons — every cell the paper's
test stars, against the cell it is tested against — is tested again on per-query scores (Urbano et al., SIGIR 2019;
Sakai's guidance; Ihemelandu & Ekstrand, SIGIR 2023):

- **paired** where both cells score the same queries — a query is its id within its collection (a CLIR average's
  runs name their language pair, so it pairs by (pair, query)), and its score is its mean over the cell's seeds (and
  over folds only where a query is tested in several), so seeds never count as extra queries: Student's paired
  t-test and a paired randomisation (sign-flip permutation) test, the mean difference with the t distribution's 95 %
  confidence interval and Cohen's d_z (mean difference over the standard deviation of the differences);
- **unpaired** only where they cannot be paired, each such comparison naming why (``unpaired_reason``: the cells
  score different queries, or a run pools collections it does not name): Welch's t-test, a permutation test of the
  group labels, the Welch interval and Cohen's d (pooled standard deviation);
- the configured test's p-values corrected over the table's family by Holm's step-down method (default) or
  Bonferroni's (statsmodels' ``multipletests``), significance at the configured alpha after correction.

All two-sided; the permutation tests are seeded, so a rerun gives the same p-values. The intervals are each
comparison's own (unadjusted for the family), where the p-values are adjusted: said where they are shown.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any, Mapping

import numpy as np
from scipy import stats as scipy_stats

TESTS = ("t", "permutation")
CORRECTIONS = ("holm", "bonferroni", "none")
CONFIDENCE = 0.95


def query_scores(cell: Mapping[str, Any]) -> dict[str, float] | None:
    """A cell's score per query — a query named by its collection where the run names one (a CLIR run's ``pair``)
    and its id — the mean over the cell's runs (seeds, folds) that hold it; None where two runs of one seed and
    fold hold the same query of the same collection (collections pooled without their names), which no pairing
    can undo."""
    seen: set[tuple] = set()
    by_query: dict[str, list[float]] = defaultdict(list)
    for run in cell["runs"] or []:
        for qid, value in run["per_query"].items():
            query = f"{run['pair']}/{qid}" if run.get("pair") else qid
            key = (run.get("seed"), run.get("fold"), query)
            if key in seen:
                return None
            seen.add(key)
            by_query[query].append(value)
    return {query: statistics.fmean(values) for query, values in by_query.items()}


def unpaired_reason(mine: dict[str, float] | None, theirs: dict[str, float] | None) -> str | None:
    """Why two cells' per-query scores cannot be paired, or None when they can."""
    if mine is None or theirs is None:
        return "a run pools collections whose query ids recur, without naming them"
    if set(mine) != set(theirs):
        return (f"the cells score different queries ({len(set(mine) - set(theirs))} only in the cell, "
                f"{len(set(theirs) - set(mine))} only in the baseline)")
    if len(mine) < 2:
        return "fewer than two queries"
    return None


def pooled_scores(cell: Mapping[str, Any]) -> list[float]:
    """Every per-query value of every run of a cell: the unpaired sample."""
    return [value for run in cell["runs"] or [] for _, value in sorted(run["per_query"].items())]


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = 0) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def compare(cell: Mapping[str, Any], baseline: Mapping[str, Any], settings: Mapping[str, Any]) -> dict:
    """One comparison of ``cell`` with ``baseline``: paired where both score the same queries, else unpaired."""
    mine, theirs = query_scores(cell), query_scores(baseline)
    reason = unpaired_reason(mine, theirs)
    paired = reason is None
    rng = np.random.default_rng(settings["seed"])
    if paired:
        queries = sorted(mine)
        x, y = np.array([mine[q] for q in queries]), np.array([theirs[q] for q in queries])
        differences = x - y
        constant = bool(np.all(differences == differences[0]))
        t = None if constant else scipy_stats.ttest_rel(x, y)
        interval = (None, None) if t is None else t.confidence_interval(CONFIDENCE)
        permutation = None if constant else scipy_stats.permutation_test(
            (x, y), _mean_difference, permutation_type="samples", vectorized=True, n_resamples=settings["permutations"],
            alternative="two-sided", random_state=rng)
        spread = float(np.std(differences, ddof=1))
        effect = None if spread == 0 else float(np.mean(differences)) / spread
        sizes, kind = (len(queries), len(queries)), "Cohen's d_z"
    else:
        x, y = np.array(pooled_scores(cell)), np.array(pooled_scores(baseline))
        constant = len(x) < 2 or len(y) < 2 or (np.all(x == x[0]) and np.all(y == y[0]))
        t = None if constant else scipy_stats.ttest_ind(x, y, equal_var=False)
        interval = (None, None) if t is None else t.confidence_interval(CONFIDENCE)
        permutation = None if constant else scipy_stats.permutation_test(
            (x, y), _mean_difference, permutation_type="independent", vectorized=True,
            n_resamples=settings["permutations"], alternative="two-sided", random_state=rng)
        pooled = math.sqrt(((len(x) - 1) * np.var(x, ddof=1) + (len(y) - 1) * np.var(y, ddof=1))
                           / (len(x) + len(y) - 2)) if len(x) > 1 and len(y) > 1 else 0.0
        effect = None if pooled == 0 else float(np.mean(x) - np.mean(y)) / pooled
        sizes, kind = (len(x), len(y)), "Cohen's d (pooled SD)"
    return {"cell": cell["cell"], "against": baseline["cell"], "paired": paired, "unpaired_reason": reason,
            "n": sizes[0],
            "n_baseline": sizes[1], "mean_difference": float(np.mean(x) - np.mean(y)),
            "ci_low": _finite(interval[0]), "ci_high": _finite(interval[1]), "effect_size": effect,
            "effect_size_kind": kind, "p_t": None if t is None else _finite(t.pvalue),
            "p_permutation": None if permutation is None else _finite(permutation.pvalue),
            "table_stars": cell.get("stars") or "", "table_p": cell.get("p_value")}


def corrected(p_values: list[float | None], method: str) -> list[float | None]:
    """The family's p-values adjusted by ``method`` (Holm or Bonferroni, over the defined ones); ``none``: as is."""
    from statsmodels.stats.multitest import multipletests

    if method == "none":
        return [None if p is None else float(p) for p in p_values]
    defined = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if defined:
        for index, value in zip(defined, multipletests([p_values[i] for i in defined], method=method)[1]):
            adjusted[index] = float(value)
    return adjusted


def family(cells: list[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """A table's family of comparisons: each cell the paper's test was run on, with the cell it was tested against
    (its ``ttest.against``)."""
    by_id = {cell["cell"]: cell for cell in cells}
    return [(cell, by_id[cell["ttest"]["against"]]) for cell in cells
            if cell.get("ttest") and cell["runs"] and by_id[cell["ttest"]["against"]].get("runs")]


def significance_table(cells: list[Mapping[str, Any]], settings: Mapping[str, Any], report: str) -> dict:
    """Every comparison of a table (``family``), tested and corrected over the family (the paper's own marks are
    set beside them by ``peftir.reports.significance_tables``)."""
    rows = [compare(cell, baseline, settings) for cell, baseline in family(cells)]
    primary = "p_t" if settings["test"] == "t" else "p_permutation"
    for row, adjusted in zip(rows, corrected([row[primary] for row in rows], settings["correction"])):
        row["p_adjusted"] = adjusted
        row["significant"] = adjusted is not None and adjusted <= settings["alpha"]
    return {"report": report, "settings": dict(settings), "primary": primary, "comparisons": rows, "summary": {
        "family": len(rows), "paired": sum(row["paired"] for row in rows),
        "significant_after_correction": sum(row["significant"] for row in rows)}}

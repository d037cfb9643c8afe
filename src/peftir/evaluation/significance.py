"""Significance as the field now asks for it, beside the papers' own tests (``peftir.evaluation.stats``).

The papers test a few per-seed means (Semi-Siamese) or pooled per-query scores unpaired (modular CLIR), with no
correction for the many comparisons a table makes. Here each table's family of comparisons — every cell the paper's
test stars, against the cell it is tested against — is tested again on per-query scores (Urbano et al., SIGIR 2019;
Sakai's guidance; Ihemelandu & Ekstrand, SIGIR 2023), always **paired**: a query is its id within its collection (a
CLIR average's runs name their language pair, so it pairs by (pair, query)), its score is its mean over the cell's
seeds (and over folds only where a query is tested in several), so seeds never count as extra queries; where the two
cells do not score the same queries, the queries they share are paired and the others are counted as dropped
(``dropped``), never pooled unpaired. Student's paired t-test and a paired randomisation (sign-flip permutation)
test, the mean difference with the t distribution's 95 % confidence interval and Cohen's d_z (mean difference over
the standard deviation of the differences). A comparison that cannot be paired (fewer than two shared queries, or a
run pooling collections whose query ids recur without naming them) is not tested, and says why.

The configured test's p-values are corrected by Holm's step-down method (default) or Bonferroni's (statsmodels'
``multipletests``) within each family: the comparisons of one table that share a ranker group and a collection
(``family_key``), so a correction never spans unrelated collections; significance at the configured alpha after
correction. All two-sided; the permutation tests are seeded, so a rerun gives the same p-values. The intervals are each
comparison's own (unadjusted for the family), where the p-values are adjusted: said where they are shown.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any, Mapping

import numpy as np
from scipy import stats as scipy_stats

from ..contract.measures import GEOMETRY_METRICS, R_FLOPS

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
    """Why two cells' per-query scores cannot be paired at all, or None when they can (on their shared queries)."""
    if mine is None or theirs is None:
        return "a run pools collections whose query ids recur, without naming them"
    if len(set(mine) & set(theirs)) < 2:
        return "fewer than two queries scored by both"
    return None


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = 0) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


class Paired:
    """Two cells' per-query scores on the queries both score (seeds averaged), and how many each scored alone."""

    def __init__(self, cell: Mapping[str, Any], baseline: Mapping[str, Any]) -> None:
        mine, theirs = query_scores(cell), query_scores(baseline)
        self.reason = unpaired_reason(mine, theirs)
        shared = sorted(set(mine) & set(theirs)) if self.reason is None else []
        self.x = np.array([mine[q] for q in shared])
        self.y = np.array([theirs[q] for q in shared])
        self.dropped = ((0, 0) if mine is None or theirs is None else
                        (len(set(mine) - set(theirs)), len(set(theirs) - set(mine))))

    @property
    def differences(self) -> np.ndarray:
        return self.x - self.y

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
        """The paired mean difference's confidence interval (Student's t); None where the differences are constant."""
        d = self.differences
        if len(d) < 2 or np.all(d == d[0]):
            return None, None
        low, high = scipy_stats.ttest_1samp(d, 0.0).confidence_interval(confidence)
        return _finite(low), _finite(high)

    def standard_error(self) -> float | None:
        d = self.differences
        return None if len(d) < 2 else float(np.std(d, ddof=1) / math.sqrt(len(d)))

    def half_width(self, confidence: float) -> float | None:
        """Half the width of the paired difference's interval: the smallest margin an equivalence test can show."""
        error = self.standard_error()
        if error is None:
            return None
        return float(scipy_stats.t.ppf(1 - (1 - confidence) / 2, len(self.differences) - 1) * error)


def compare(cell: Mapping[str, Any], baseline: Mapping[str, Any], settings: Mapping[str, Any]) -> dict:
    """One comparison of ``cell`` with ``baseline``, paired on the queries both score (``Paired``); untested, with
    why, where it cannot be paired."""
    paired = Paired(cell, baseline)
    found = {"cell": cell["cell"], "against": baseline["cell"], "paired": paired.reason is None,
             "untested_reason": paired.reason, "n": len(paired.x), "dropped": list(paired.dropped),
             "mean_difference": None, "ci_low": None, "ci_high": None, "effect_size": None,
             "effect_size_kind": "Cohen's d_z", "p_t": None, "p_permutation": None,
             "table_stars": cell.get("stars") or "", "table_p": cell.get("p_value")}
    if paired.reason:
        return found
    x, y, differences = paired.x, paired.y, paired.differences
    found["mean_difference"] = float(np.mean(differences))
    if np.all(differences == differences[0]):
        return found
    t = scipy_stats.ttest_rel(x, y)
    found["ci_low"], found["ci_high"] = paired.interval()
    found["p_t"] = _finite(t.pvalue)
    found["p_permutation"] = _finite(scipy_stats.permutation_test(
        (x, y), _mean_difference, permutation_type="samples", vectorized=True, n_resamples=settings["permutations"],
        alternative="two-sided", random_state=np.random.default_rng(settings["seed"])).pvalue)
    spread = float(np.std(differences, ddof=1))
    found["effect_size"] = None if spread == 0 else float(np.mean(differences)) / spread
    return found


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


COSTS = frozenset({R_FLOPS, *GEOMETRY_METRICS})    # lower is better and not effectiveness: never in a family


def family(cells: list[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """A table's comparisons: each effectiveness cell the paper's test was run on, with the cell it was tested
    against (its ``ttest.against``); a cost (R-FLOPS) or a geometry the paper never tests is left out."""
    by_id = {cell["cell"]: cell for cell in cells}
    return [(cell, by_id[cell["ttest"]["against"]]) for cell in cells
            if cell.get("ttest") and cell["runs"] and by_id[cell["ttest"]["against"]].get("runs")
            and cell.get("metric") not in COSTS]


def family_key(cell: Mapping[str, Any]) -> tuple[str, str]:
    """The family a comparison is corrected in: its ranker group and the collection it scores (a retrieval table's
    cells name theirs in ``collection``; a ranker table's in ``dataset``)."""
    return cell.get("group") or "", cell.get("collection") or cell.get("dataset") or ""


def significance_table(cells: list[Mapping[str, Any]], settings: Mapping[str, Any], report: str) -> dict:
    """Every comparison of a table (``family``), tested and corrected within its family (``family_key``: a ranker
    group on a collection); the paper's own marks are set beside them by ``peftir.reports.significance_tables``."""
    pairs = family(cells)
    rows = [compare(cell, baseline, settings) for cell, baseline in pairs]
    primary = "p_t" if settings["test"] == "t" else "p_permutation"
    families: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, (cell, _) in enumerate(pairs):
        families[family_key(cell)].append(index)
    for key, members in families.items():
        for index, adjusted in zip(members, corrected([rows[i][primary] for i in members], settings["correction"])):
            rows[index]["correction_family"] = " on ".join(part for part in key if part) or "the table"
            rows[index]["family_size"] = len(members)
            rows[index]["p_adjusted"] = adjusted
            rows[index]["significant"] = adjusted is not None and adjusted <= settings["alpha"]
    return {"report": report, "settings": dict(settings), "primary": primary, "comparisons": rows, "summary": {
        "family": len(rows), "families": len(families), "paired": sum(row["paired"] for row in rows),
        "untested": sum(not row["paired"] for row in rows),
        "significant_after_correction": sum(row["significant"] for row in rows)}}

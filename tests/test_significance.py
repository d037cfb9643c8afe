"""The significance companion: paired where two cells score the same queries (a query's score its mean over seeds),
unpaired where runs pool collections that share query ids; p-values, intervals and effect sizes against scipy and
hand computations; Holm and Bonferroni over the table's family against statsmodels; seeded permutation tests."""
from __future__ import annotations

import random

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from peftir.evaluation.significance import compare, family, query_scores, significance_table
from peftir.reports.reported import NO_TEST, PaperTest

SETTINGS = {"test": "t", "correction": "holm", "alpha": 0.05, "permutations": 2000, "seed": 42}


def runs(offset: float, seed_of_rng: int, seeds=(1, 2, 3), folds=("1", "2"), queries: int = 12) -> list[dict]:
    rng = random.Random(seed_of_rng)
    def score() -> float:
        return min(1.0, max(0.0, 0.4 + offset + rng.gauss(0, 0.15)))

    return [{"fold": fold, "seed": seed, "per_query": {f"{fold}-{q}": score() for q in range(queries)}}
            for seed in seeds for fold in folds]


def cell(name: str, offset: float, rng: int, against: str | None = None, stars: str = "") -> dict:
    """A table cell as the tables make it: its runs, and the per-seed means (over folds) the paper's test compares."""
    made = {"cell": name, "runs": runs(offset, rng), "stars": stars, "p_value": 0.01 if stars else 0.5}
    by_seed: dict[int, list[float]] = {}
    for run in made["runs"]:
        by_seed.setdefault(run["seed"], []).append(float(np.mean(list(run["per_query"].values()))))
    made["per_seed"] = {str(seed): float(np.mean(values)) for seed, values in by_seed.items()}
    return made | ({"ttest": {"against": against}} if against else {})


BASE = cell("r:full:d:P@20", 0.0, 1)
BETTER = cell("r:lora:d:P@20", 0.12, 2, "r:full:d:P@20", "**")
SAME = cell("r:prefix:d:P@20", 0.0, 3, "r:full:d:P@20", "*")
WORSE = cell("r:prompt:d:P@20", -0.02, 4, "r:full:d:P@20")


def test_a_querys_score_is_its_mean_over_seeds_and_pooled_collections_cannot_be_paired():
    scores = query_scores(BASE)
    assert len(scores) == 24
    assert scores["1-0"] == pytest.approx(np.mean([run["per_query"]["1-0"] for run in BASE["runs"]
                                                   if "1-0" in run["per_query"]]))
    pooled = {"cell": "x", "runs": [{"seed": 1, "per_query": {"q1": 0.1}}, {"seed": 1, "per_query": {"q1": 0.3}}]}
    assert query_scores(pooled) is None


def test_a_clir_average_pairs_by_language_pair_and_query_with_seeds_averaged():
    """An average over language pairs holds each query id once per pair: named by its pair, it pairs query by query
    (before, the recurring ids made it unpaired: seeds × pairs × queries pooled by Welch's test)."""
    def average(offset: float, rng: int) -> dict:
        made = []
        for pair in ("en-de", "en-fi"):
            for one in runs(offset, rng + len(pair), folds=("1",)):
                made.append({**one, "pair": pair})
        return {"cell": f"ra:{offset}", "runs": made, "stars": "", "ttest": {"against": "ra:0.0"}}

    base, better = average(0.0, 1), average(0.1, 2)
    scores = query_scores(base)
    assert len(scores) == 2 * 12 and "en-de/1-0" in scores
    assert scores["en-fi/1-3"] == pytest.approx(np.mean([r["per_query"]["1-3"] for r in base["runs"]
                                                         if r["pair"] == "en-fi"]))       # over the 3 seeds
    result = compare(better, base, SETTINGS)
    assert result["paired"] and result["untested_reason"] is None and result["n"] == 24
    unnamed = {**base, "runs": [{k: v for k, v in r.items() if k != "pair"} for r in base["runs"]]}
    untested = compare(better, unnamed, SETTINGS)
    assert untested["untested_reason"] == "a run pools collections whose query ids recur, without naming them"
    assert not untested["paired"] and untested["p_t"] is None          # never a Welch test over pooled values


def test_a_paired_comparison_is_scipys_paired_t_test_with_its_interval_and_d_z():
    result = compare(BETTER, BASE, SETTINGS)
    mine, theirs = query_scores(BETTER), query_scores(BASE)
    x = np.array([mine[q] for q in sorted(mine)])
    y = np.array([theirs[q] for q in sorted(mine)])
    expected = stats.ttest_rel(x, y)
    assert result["paired"] and result["n"] == 24
    assert result["p_t"] == pytest.approx(expected.pvalue)
    assert result["mean_difference"] == pytest.approx(np.mean(x - y))
    low, high = expected.confidence_interval(0.95)
    assert (result["ci_low"], result["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert result["effect_size"] == pytest.approx(np.mean(x - y) / np.std(x - y, ddof=1))
    assert 0 < result["p_permutation"] < 0.05 and result["p_t"] < 0.05


def test_the_permutation_test_is_seeded():
    assert compare(SAME, BASE, SETTINGS)["p_permutation"] == compare(SAME, BASE, SETTINGS)["p_permutation"]
    other = compare(SAME, BASE, {**SETTINGS, "seed": 7})["p_permutation"]
    assert other == pytest.approx(compare(SAME, BASE, SETTINGS)["p_permutation"], abs=0.05)


def test_cells_that_do_not_share_every_query_are_paired_on_the_shared_ones_and_the_rest_counted():
    """A query missing on one side once made the test Welch's over seeds × queries (n = 48 vs 72 here); now the 16
    shared queries are paired, seeds averaged, and the 8 only in the baseline are counted as dropped."""
    other = {"cell": "r:x:d:P@20", "runs": runs(0.1, 9, queries=8), "ttest": {"against": BASE["cell"]}, "stars": ""}
    result = compare(other, BASE, SETTINGS)
    mine, theirs = query_scores(other), query_scores(BASE)
    shared = sorted(set(mine) & set(theirs))
    assert result["paired"] and result["n"] == len(shared) == 16 and result["dropped"] == [0, 8]
    assert result["p_t"] == pytest.approx(stats.ttest_rel([mine[q] for q in shared], [theirs[q] for q in shared]).pvalue)
    assert result["effect_size_kind"] == "Cohen's d_z"
    from peftir.reports.significance_tables import caption, companion
    table = companion([BASE, other], SETTINGS, "t", _paper({}), {})
    assert "Paired on the queries both score: r:x:d:P@20 (0 queries only in it, 8 only in its baseline)." \
        in caption(table) and "unadjusted" in caption(table)


@pytest.mark.parametrize("method", ["holm", "bonferroni"])
def test_the_familys_p_values_are_corrected_as_statsmodels_corrects_them(method):
    table = significance_table([BASE, BETTER, SAME, WORSE], {**SETTINGS, "correction": method}, "t")
    raw = [row["p_t"] for row in table["comparisons"]]
    assert [row["p_adjusted"] for row in table["comparisons"]] == pytest.approx(
        list(multipletests(raw, method=method)[1]))
    assert [row["significant"] for row in table["comparisons"]] == [p <= 0.05 for p in
                                                                    multipletests(raw, method=method)[1]]


def test_the_family_is_what_the_stars_compare():
    assert [(c["cell"], b["cell"]) for c, b in family([BASE, BETTER, SAME, WORSE])] == [
        (BETTER["cell"], BASE["cell"]), (SAME["cell"], BASE["cell"]), (WORSE["cell"], BASE["cell"])]
    summary = significance_table([BASE, BETTER, SAME, WORSE], SETTINGS, "t")["summary"]
    assert summary == {"family": 3, "families": 1, "paired": 3, "untested": 0, "significant_after_correction": 1}


SEMI_SIAMESE = PaperTest("printed", "Student's t-test with equal variances", "seeds", False, 1,
                         {"*": 0.05, "**": 0.01}, "none", "Tables 3-5's notes")


def _paper(marks: dict[str, str], rows: dict[str, str] | None = None, test: PaperTest = NO_TEST,
           values: dict[str, float] | None = None):
    from peftir.reports.reported import ReportedCell, ReportedTable

    cells = tuple(ReportedCell(name.replace(":d:", ":paper:"), "0.3", (values or {}).get(name, 0.3), mark,
                               (rows or {}).get(name, name), "c") for name, mark in marks.items())
    return ReportedTable("t", "Table 9", "", "r:full", cells, {}, (), test=test)


def test_the_papers_marks_are_judged_by_the_papers_own_test_rerun_on_the_reproduction():
    """Semi-Siamese: one-tailed Student t-test with equal variances of 3 per-seed means against 3, uncorrected, at
    its weakest mark's alpha (0.05); the corrected per-query verdict stands beside it, labelled."""
    from peftir.reports.significance_tables import caption, companion

    similar = cell("r:prefix:d:P@20", 0.0, 5, "r:full:d:P@20")       # one-tailed p 0.35 and 0.65 on its seeds
    paper = _paper({BASE["cell"]: "", BETTER["cell"]: "*", similar["cell"]: "**", WORSE["cell"]: ""},
                   test=SEMI_SIAMESE, values={BETTER["cell"]: 0.42, similar["cell"]: 0.31})
    table = companion([BASE, BETTER, similar, WORSE], SETTINGS, "t", paper, {"paper": "d"})
    rows = {row["cell"]: row for row in table["comparisons"]}
    for row in rows.values():          # the paper's way: scipy's one-tailed test on the seeds, both directions
        mine, theirs = (list(c["per_seed"].values()) for c in (next(c for c in (BETTER, similar, WORSE)
                                                                    if c["cell"] == row["cell"]), BASE))
        assert row["paper_way_p_better"] == pytest.approx(stats.ttest_ind(mine, theirs, alternative="greater").pvalue)
        assert row["paper_way_p_worse"] == pytest.approx(stats.ttest_ind(mine, theirs, alternative="less").pvalue)
    assert rows[BETTER["cell"]]["against_paper"] == "kept" and rows[BETTER["cell"]]["corrected"] == "better"
    low, high, level = rows[similar["cell"]]["paper_way_interval"]          # 90 %: a one-tailed test at 0.05
    assert level == pytest.approx(0.90) and low < 0 < 0.01 < high
    assert rows[similar["cell"]]["against_paper"] == "lost: inconclusive"   # it covers 0 and the paper's 0.01
    assert rows[WORSE["cell"]]["against_paper"] == "neither"
    s = table["summary"]
    assert (s["paper_significant"], s["kept"], s["lost: inconclusive"], s["gained"], s["table_starred"]) == \
        (2, 1, 1, 0, 1)                                  # the rebuilt table's own stars: BETTER's alone
    assert "The paper's way (Student's t-test with equal variances, unpaired, on per-seed means, one-tailed" \
        in caption(table)
    assert all(row["substitutions"] == ["collection: d for the paper's paper"] for row in table["comparisons"])


def test_significantly_worse_under_a_one_tailed_paper_test_is_reversed_never_gained():
    """The bug the issue names: an unmarked paper cell and a reproduction significantly worse than its baseline was
    "gained" (a two-sided corrected test against "not significant"). The paper's test only asks "better?"."""
    from peftir.reports.significance_tables import against_paper, companion

    worse = cell("r:prompt:d:P@20", -0.15, 4, "r:full:d:P@20")
    paper = _paper({BASE["cell"]: "", worse["cell"]: ""}, test=SEMI_SIAMESE)
    row = companion([BASE, worse], SETTINGS, "t", paper, {"paper": "d"})["comparisons"][0]
    assert row["paper_way_direction"] == -1 and row["against_paper"] == "reversed"
    assert row["corrected"] == "worse"                       # the field's verdict says which way, beside it
    assert against_paper(0, -1, 2) == "gained"               # a two-tailed paper (SPLADE's letters) marks either way
    # unmarked, worse in the paper as in the reproduction (prompt-tuning, 10 % below full FT): nothing reversed
    assert against_paper(0, -1, 1, paper_effect=-0.04) == "neither"
    assert against_paper(1, 1, 1, weaker=True) == "kept at a weaker level"      # "**" reproduced at p = 0.03
    assert (against_paper(1, 1, 1), against_paper(1, -1, 1), against_paper(-1, -1, 2), against_paper(None, 1, 1),
            against_paper(1, None, 1)) == ("kept", "reversed", "kept", "unread", "untestable")
    # lost: inconclusive where the interval covers both 0 and the paper's effect, contradicted where it excludes it
    assert against_paper(1, 0, 1, (-0.01, 0.03), 0.02) == "lost: inconclusive"
    assert against_paper(1, 0, 1, (-0.01, 0.01), 0.02) == "lost: contradicted"
    assert against_paper(1, 0, 1, (0.01, 0.05), 0.02) == "lost: supported per query"   # excludes 0, covers 0.02
    assert against_paper(1, 0, 1) == "lost"


def test_a_table_the_paper_prints_no_test_for_or_whose_marks_are_not_transcribed_says_which():
    """Modular CLIR's paper tests (an unpaired t-test) but the project's copy lost its marks: "not transcribed",
    not "prints no significance test"; DPTDR prints none."""
    from peftir.reports.reported import NOT_TRANSCRIBED, ReportedCell
    from peftir.reports.significance_tables import caption, companion, paper_direction

    silent = companion([BASE, BETTER, SAME, WORSE], SETTINGS, "t",
                       _paper({BASE["cell"]: "", BETTER["cell"]: ""}), {"paper": "d"})
    assert {row["against_paper"] for row in silent["comparisons"]} == {"no test printed"}
    assert "prints no significance test" in caption(silent) and silent["summary"]["kept"] == 0
    clir = PaperTest(NOT_TRANSCRIBED, "an unpaired two-tailed t-test against monoBERT", source="the copy has no tables")
    lost = companion([BASE, BETTER], SETTINGS, "t", _paper({BASE["cell"]: ""}, test=clir), {"paper": "d"})
    assert {row["against_paper"] for row in lost["comparisons"]} == {"marks not transcribed"}
    assert "prints no significance test" not in caption(lost)
    assert "The paper tests Table 9 (an unpaired two-tailed t-test against monoBERT), but its marks are not " \
           "transcribed" in caption(lost)
    # SPLADE: "significantly better than the rows of these letters", on whichever side is better
    base = ReportedCell("x", "0.3", 0.3, "defg", "a None", "c")
    assert paper_direction(ReportedCell("y", "0.3", 0.3, "bc", "e 0-3", "c"), base, True) == -1   # a beats e
    assert paper_direction(ReportedCell("y", "0.3", 0.3, "a", "b 0", "c"), base, True) == 1        # b beats a
    assert paper_direction(ReportedCell("y", "0.3", 0.3, "", "h 0-5", "c"), base, True) == 0


def test_the_correction_family_is_a_ranker_group_on_a_collection_and_never_holds_a_cost():
    """Semi-Siamese Table 4 corrected 108 comparisons across rankers, collections and metrics at once, and SPLADE's
    R-FLOPS entered the family; now a family is a ranker group on one collection, and a cost is left out."""
    def placed(made: dict, group: str, dataset: str, metric: str = "P@20") -> dict:
        return {**made, "group": group, "dataset": dataset, "metric": metric}

    cells = [placed(BASE, "TwinBERT", "d"), placed(BETTER, "TwinBERT", "d"), placed(SAME, "TwinBERT", "d"),
             placed({**WORSE, "cell": "r:prompt:e:P@20"}, "TwinBERT", "e"),
             placed({**cell("r:lora:d:R-FLOPS", 0.1, 7, "r:full:d:P@20")}, "TwinBERT", "d", "R-FLOPS")]
    table = significance_table(cells, SETTINGS, "t")
    assert [row["cell"] for row in table["comparisons"]] == [BETTER["cell"], SAME["cell"], "r:prompt:e:P@20"]
    assert [(row["correction_family"], row["family_size"]) for row in table["comparisons"]] == [
        ("TwinBERT on d", 2), ("TwinBERT on d", 2), ("TwinBERT on e", 1)]
    raw = [row["p_t"] for row in table["comparisons"][:2]]
    assert [row["p_adjusted"] for row in table["comparisons"][:2]] == pytest.approx(
        list(multipletests(raw, method="holm")[1]))
    assert table["comparisons"][2]["p_adjusted"] == pytest.approx(table["comparisons"][2]["p_t"])
    assert table["summary"]["families"] == 2


def test_a_comparison_is_made_against_the_papers_own_baseline_for_its_row():
    """SPLADE compares a coCondenser adapter with coCondenser's fine-tuning; the table's stars test it against the
    table's one baseline (DistilBERT's), the companion against the paper's."""
    from peftir.reports.reported import ReportedCell, ReportedTable
    from peftir.reports.significance_tables import companion

    def retrieval(name: str, offset: float, rng: int, against: str | None = None) -> dict:
        made = {"cell": f"{name} | MRR@10", "runs": runs(offset, rng), "stars": ""}
        return made | ({"ttest": {"against": f"{against} | MRR@10"}} if against else {})

    cells = [retrieval("DistilBERT FT", 0.0, 1), retrieval("coCondenser FT", 0.1, 2, "DistilBERT FT"),
             retrieval("coCondenser adapter", 0.1, 3, "DistilBERT FT")]
    paper = ReportedTable("t", "T", "", "DistilBERT FT", tuple(
        ReportedCell(c["cell"], "0.3", 0.3, "", c["cell"], "MRR@10") for c in cells), {}, (),
        row_baselines={"coCondenser adapter": "coCondenser FT"})
    against = {row["cell"]: row["against"] for row in companion(cells, SETTINGS, "t", paper, {})["comparisons"]}
    assert against == {"coCondenser FT | MRR@10": "DistilBERT FT | MRR@10",
                       "coCondenser adapter | MRR@10": "coCondenser FT | MRR@10"}


def test_a_printed_double_star_reproduced_at_the_single_star_level_is_kept_at_a_weaker_level():
    from peftir.reports.significance_tables import companion

    for rng in range(1, 60):                    # a seeded reproduction whose one-tailed p on seeds is in (0.01, 0.05]
        made = cell("r:lora:d:P@20", 0.05, rng, "r:full:d:P@20")
        p = stats.ttest_ind(list(made["per_seed"].values()), list(BASE["per_seed"].values()),
                            alternative="greater").pvalue
        if 0.01 < p <= 0.05:
            break
    row = companion([BASE, made], SETTINGS, "t", _paper({BASE["cell"]: "", made["cell"]: "**"}, test=SEMI_SIAMESE),
                    {"paper": "d"})["comparisons"][0]
    assert row["paper_way_p_better"] == pytest.approx(p) and row["against_paper"] == "kept at a weaker level"

"""Result tables built from synthetic metric files; expectations recomputed independently."""
from __future__ import annotations

import csv
import json
from statistics import mean

import pytest
from scipy.stats import ttest_ind

from peftir.evaluation import write_metrics
from peftir.tables import Group, Row, RunRecord, build_table, format_count, render_latex, write_table

DATASETS = [("robust04", "Robust04"), ("clueweb09b", "ClueWeb09b")]
METRICS = ["P@20", "nDCG@20"]
FOLDS = ["f1", "f2"]
SEEDS = [1, 2, 3]
PARAMS = {"full": 109_482_240, "lora": 589_824, "prefix": 92_160}
# monoBERT: LoRA clearly best on Robust04, prefix best on ClueWeb09b; ColBERT: nothing beats full.
OFFSET = {
    ("monobert", "full"): {"robust04": 0.0, "clueweb09b": 0.0},
    ("monobert", "lora"): {"robust04": 0.05, "clueweb09b": 0.01},
    ("monobert", "prefix"): {"robust04": -0.02, "clueweb09b": 0.03},
    ("colbert", "full"): {"robust04": 0.0, "clueweb09b": 0.0},
    ("colbert", "lora"): {"robust04": -0.01, "clueweb09b": -0.03},
    ("colbert", "prefix"): {"robust04": -0.04, "clueweb09b": -0.002},
}
SEED_NOISE = {1: 0.001, 2: -0.002, 3: 0.0015}
FOLD_SHIFT = {"f1": 0.01, "f2": -0.005}
METRIC_SHIFT = {"P@20": 0.0, "nDCG@20": 0.07}


def score(ranker: str, method: str, dataset: str, fold: str, seed: int, metric: str) -> float:
    noise = SEED_NOISE[seed] * (1 + len(method))   # methods differ in spread, never zero variance
    return (0.3 + OFFSET[ranker, method][dataset] + FOLD_SHIFT[fold] + noise
            + METRIC_SHIFT[metric])


GROUPS = [
    Group("monoBERT (cross)", [Row("monobert", "full", "Full FT"), Row("monobert", "lora", "LoRA"),
                               Row("monobert", "prefix", "Prefix-tuning")]),
    Group("ColBERT (bi)", [Row("colbert", "full", "Full FT"), Row("colbert", "lora", "LoRA 50%"),
                           Row("colbert", "prefix", "Prefix_tuning")]),
]


@pytest.fixture
def setup(tmp_path):
    records = []
    for (ranker, method) in OFFSET:
        for dataset, _ in DATASETS:
            for fold in FOLDS:
                for seed in SEEDS:
                    path = tmp_path / f"{dataset}-{ranker}-{method}-{fold}-{seed}.json"
                    means = {m: score(ranker, method, dataset, fold, seed, m) for m in METRICS}
                    summary = {"metrics": METRICS, "queries": 1, "mean": means,
                               "per_query": {"q": means}}
                    write_metrics(path, summary, {"dataset": dataset})
                    records.append(RunRecord(dataset, ranker, method, fold, seed, str(path),
                                             PARAMS[method]))
    reference = {"BM25": {}}
    for dataset, _ in DATASETS:
        for fold, value in zip(FOLDS, [0.2, 0.3]):
            path = tmp_path / f"bm25-{dataset}-{fold}.json"
            means = {m: value + METRIC_SHIFT[m] for m in METRICS}
            write_metrics(path, {"metrics": METRICS, "queries": 1, "mean": means,
                                 "per_query": {"q": means}}, {})
            reference["BM25"].setdefault(dataset, []).append(str(path))
    return records, reference


def make(records, reference):
    return build_table("t3", "Results 100% synthetic.", GROUPS, DATASETS, METRICS, records,
                       reference)


def cell(table, group: int, method: str, dataset: str, metric: str) -> dict:
    row = next(r for r in table["groups"][group]["rows"] if r["method"] == method)
    return next(c for c in row["cells"] if c["dataset"] == dataset and c["metric"] == metric)


def per_seed_expected(ranker, method, dataset, metric) -> dict[int, float]:
    return {s: mean(score(ranker, method, dataset, f, s, metric) for f in FOLDS) for s in SEEDS}


def test_cells_are_means_over_folds_and_seeds(setup) -> None:
    table = make(*setup)
    for g, group in enumerate(GROUPS):
        for row in group.rows:
            for dataset, _ in DATASETS:
                for metric in METRICS:
                    got = cell(table, g, row.method, dataset, metric)
                    runs = [score(row.ranker, row.method, dataset, f, s, metric)
                            for f in FOLDS for s in SEEDS]
                    assert got["value"] == pytest.approx(mean(runs))
                    assert got["printed"] == f"{mean(runs):.4f}"
                    assert len(got["runs"]) == len(FOLDS) * len(SEEDS)
                    expected = per_seed_expected(row.ranker, row.method, dataset, metric)
                    assert got["per_seed"] == {str(s): pytest.approx(v)
                                               for s, v in expected.items()}


def test_stars_follow_the_t_test(setup) -> None:
    table = make(*setup)
    for g, group in enumerate(GROUPS):
        ranker = group.rows[0].ranker
        for row in group.rows[1:]:
            for dataset, _ in DATASETS:
                for metric in METRICS:
                    mine = list(per_seed_expected(ranker, row.method, dataset, metric).values())
                    base = list(per_seed_expected(ranker, "full", dataset, metric).values())
                    p = ttest_ind(mine, base, equal_var=True, alternative="greater").pvalue
                    got = cell(table, g, row.method, dataset, metric)
                    assert got["p_value"] == pytest.approx(p)
                    assert got["stars"] == ("**" if p <= 0.01 else "*" if p <= 0.05 else "")
    assert cell(table, 0, "lora", "robust04", "P@20")["stars"] == "**"
    assert cell(table, 0, "prefix", "robust04", "P@20")["stars"] == ""
    baseline = cell(table, 0, "full", "robust04", "P@20")
    assert baseline["p_value"] is None and baseline["stars"] == ""


def test_improvement_row_picks_best_method(setup) -> None:
    table = make(*setup)
    mono = {(e["dataset"], e["metric"]): e for e in table["groups"][0]["improvement"]}
    for dataset, best in [("robust04", "lora"), ("clueweb09b", "prefix")]:
        for metric in METRICS:
            entry = mono[dataset, metric]
            top = cell(table, 0, best, dataset, metric)["value"]
            base = cell(table, 0, "full", dataset, metric)["value"]
            assert entry["best_method"] == best
            assert entry["percent"] == pytest.approx((top - base) / base * 100)
            assert entry["printed"] == f"{(top - base) / base * 100:.2f}%"
    for entry in table["groups"][1]["improvement"]:
        assert entry["percent"] is None and entry["printed"] == "-"


def test_parameters_and_reference_row(setup) -> None:
    table = make(*setup)
    rows = {r["method"]: r for r in table["groups"][0]["rows"]}
    assert rows["full"]["trainable_parameters"] == PARAMS["full"]
    assert [rows[m]["printed_parameters"] for m in ("full", "lora", "prefix")] == \
        ["110M", "0.6M", "0.1M"]
    bm25 = table["reference_rows"][0]
    assert bm25["label"] == "BM25"
    assert [c["value"] for c in bm25["cells"]] == pytest.approx(
        [0.25 + METRIC_SHIFT[m] for _ in DATASETS for m in METRICS])
    assert all(c["stars"] == "" for c in bm25["cells"])


def test_missing_records_name_the_row(setup) -> None:
    records, reference = setup
    kept = [r for r in records if not (r.dataset == "clueweb09b" and r.ranker == "colbert"
                                       and r.method == "lora")]
    with pytest.raises(ValueError, match=r"clueweb09b.*colbert.*lora"):
        make(kept, reference)


def test_disagreeing_parameter_counts_are_rejected(setup) -> None:
    records, reference = setup
    first = records[0]
    changed = [RunRecord(**{**first.__dict__, "trainable_parameters": 1})] + records[1:]
    with pytest.raises(ValueError, match="trainable parameters"):
        make(changed, reference)


def test_lft_best_row_takes_the_best_candidate_per_column_and_is_tested(setup) -> None:
    """Table 5's "LFT (best)": monoBERT's best is LoRA on Robust04 and prefix on ClueWeb09b;
    ColBERT's candidates all trail full FT, so its best is the least bad per column."""
    records, reference = setup
    groups = [Group(g.label, [g.rows[0], Row(g.rows[0].ranker, "lft_best", "LFT (best)", ("lora", "prefix"))])
              for g in GROUPS]
    table = build_table("t5", "Best of.", groups, DATASETS, METRICS, records, reference)
    for g, group in enumerate(groups):
        ranker = group.rows[0].ranker
        row = table["groups"][g]["rows"][1]
        assert row["trainable_parameters"] == PARAMS["lora"] and row["printed_parameters"] == "≤ 0.6M"
        for got in row["cells"]:
            dataset, metric = got["dataset"], got["metric"]
            values = {m: mean(score(ranker, m, dataset, f, s, metric) for f in FOLDS for s in SEEDS)
                      for m in ("lora", "prefix")}
            best = max(values, key=values.get)
            assert got["method"] == best and got["value"] == pytest.approx(values[best])
            assert got["candidates"] == pytest.approx(values)
            mine = list(per_seed_expected(ranker, best, dataset, metric).values())
            base = list(per_seed_expected(ranker, "full", dataset, metric).values())
            assert got["p_value"] == pytest.approx(ttest_ind(mine, base, alternative="greater").pvalue)
    assert [c["method"] for c in table["groups"][0]["rows"][1]["cells"]] == ["lora", "lora", "prefix", "prefix"]
    assert [c["method"] for c in table["groups"][1]["rows"][1]["cells"]] == ["lora", "lora", "prefix", "prefix"]
    assert r"$\le$ 0.6M" in render_latex(table)


@pytest.mark.parametrize("n, text", [(7_680, "8K"), (92_160, "0.1M"), (589_824, "0.6M"),
                                     (884_736, "0.9M"), (980_000, "1M"), (49_499, "49K"),
                                     (50_000, "0.1M"), (9_960_000, "10M"), (15_400_000, "15M"),
                                     (109_482_240, "110M"), (22_713_216, "23M")])
def test_format_count(n: int, text: str) -> None:
    assert format_count(n) == text


def test_render_latex(setup) -> None:
    table = make(*setup)
    tex = render_latex(table)
    for token in (r"\begin{table*}", r"\toprule", r"\midrule", r"\bottomrule", r"\cmidrule",
                  r"\multirow", "monoBERT (cross)", "ColBERT (bi)", "Robust04", "ClueWeb09b",
                  "BM25", r"Improvement (\%)", r"LoRA 50\%", r"Prefix\_tuning",
                  r"Results 100\% synthetic.", r"$^{*}p \le 0.05$, $^{**}p \le 0.01$ (1-tailed)"):
        assert token in tex, token
    starred = cell(table, 0, "lora", "robust04", "P@20")
    assert f"{starred['printed']}$^{{**}}$" in tex
    assert "LoRA 50%" not in tex


def test_write_table_outputs_agree(setup, tmp_path) -> None:
    table = make(*setup)
    write_table(table, tmp_path / "t.tex", tmp_path / "t.json", tmp_path / "t.csv")
    assert (tmp_path / "t.tex").read_text() == render_latex(table)
    assert json.loads((tmp_path / "t.json").read_text()) == table
    with open(tmp_path / "t.csv", newline="") as handle:
        lines = list(csv.DictReader(handle))
    n_cells = len(DATASETS) * len(METRICS)
    assert len(lines) == n_cells * (1 + sum(len(g.rows) for g in GROUPS))
    assert lines[0]["group"] == "reference" and lines[0]["n_runs"] == "2"
    lora = next(r for r in lines if r["method"] == "lora" and r["dataset"] == "robust04"
                and r["metric"] == "P@20" and r["group"] == "monoBERT (cross)")
    assert lora["stars"] == "**" and lora["n_runs"] == "6"
    assert lora["trainable_parameters"] == str(PARAMS["lora"])


def test_figure_bars_are_the_table_means_and_files_are_reproducible(setup, tmp_path) -> None:
    from peftir.figures import build_figure, write_figure

    records, reference = setup
    figure = build_figure("figure4", "Bars.", GROUPS, DATASETS, "nDCG@20", records)
    table = make(records, reference)
    assert len(figure["panels"]) == len(GROUPS) * len(DATASETS)
    for panel in figure["panels"]:
        g = next(i for i, group in enumerate(GROUPS) if group.label == panel["group"])
        assert [bar["method"] for bar in panel["bars"]] == ["full", "lora", "prefix"]
        for bar in panel["bars"]:
            expected = cell(table, g, bar["method"], panel["dataset"], "nDCG@20")
            assert bar["value"] == expected["value"] and bar["per_seed"] == expected["per_seed"]
    outputs = []
    for attempt in ("a", "b"):
        paths = [tmp_path / f"{attempt}.{ext}" for ext in ("pdf", "png", "json")]
        write_figure(figure, *paths)
        outputs.append([path.read_bytes() for path in paths])
    assert outputs[0][0].startswith(b"%PDF") and outputs[0][1].startswith(b"\x89PNG")
    assert outputs[0] == outputs[1]                      # no timestamps: reruns give the same bytes

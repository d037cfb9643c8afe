"""Result tables built from synthetic metric files; expectations recomputed independently."""
from __future__ import annotations

import csv
from statistics import mean

import pytest
from scipy.stats import ttest_ind

from peftir.evaluation.metrics import write_metrics
from peftir.reports.cells import RunRecord, format_count
from peftir.reports.tables import read_table, render_latex, table_frame, write_table

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


def _group(label: str, ranker: str, rows: list[tuple[str, str]], candidates=()) -> dict:
    return {"label": label, "ranker": ranker,
            "rows": [{"method": m, "label": name, "candidates": list(candidates) if m == "lft_best" else []}
                     for m, name in rows]}


GROUPS = [
    _group("monoBERT (cross)", "monobert", [("full", "Full FT"), ("lora", "LoRA"), ("prefix", "Prefix-tuning")]),
    _group("ColBERT (bi)", "colbert", [("full", "Full FT"), ("lora", "LoRA 50%"), ("prefix", "Prefix_tuning")]),
]


def layout(groups=GROUPS) -> dict:
    return {"name": "t3", "caption": "Results 100% synthetic.", "datasets": [list(d) for d in DATASETS],
            "metrics": METRICS, "baseline": "full", "groups": groups,
            "references": [["bm25", "BM25"], ["backbone", "Backbone untrained"]]}


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
    reference = {}
    for system, shift in (("bm25", 0.0), ("backbone", 0.1)):
        for dataset, _ in DATASETS:
            for fold, value in zip(FOLDS, [0.2, 0.3]):
                path = tmp_path / f"{system}-{dataset}-{fold}.json"
                means = {m: value + shift + METRIC_SHIFT[m] for m in METRICS}
                write_metrics(path, {"metrics": METRICS, "queries": 1, "mean": means,
                                     "per_query": {"q": means}}, {})
                reference.setdefault(system, {}).setdefault(dataset, []).append(str(path))
    return records, reference


def make(records, reference, groups=GROUPS):
    return table_frame(layout(groups), records, reference)


def cell(table, group: int, method: str, dataset: str, metric: str) -> dict:
    ranker = GROUPS[group]["ranker"]
    found = table[(table["ranker"] == ranker) & (table["row"] == method) & (table["dataset"] == dataset)
                  & (table["metric"] == metric)]
    assert len(found) == 1
    return found.iloc[0].to_dict()


def per_seed_expected(ranker, method, dataset, metric) -> dict[int, float]:
    return {s: mean(score(ranker, method, dataset, f, s, metric) for f in FOLDS) for s in SEEDS}


def test_cells_are_means_over_folds_and_seeds(setup) -> None:
    table = make(*setup)
    for g, group in enumerate(GROUPS):
        for row in group["rows"]:
            for dataset, _ in DATASETS:
                for metric in METRICS:
                    got = cell(table, g, row["method"], dataset, metric)
                    runs = [score(group["ranker"], row["method"], dataset, f, s, metric)
                            for f in FOLDS for s in SEEDS]
                    assert got["value"] == pytest.approx(mean(runs))
                    assert got["printed"] == f"{mean(runs):.4f}"
                    assert len(got["runs"]) == len(FOLDS) * len(SEEDS)
                    expected = per_seed_expected(group["ranker"], row["method"], dataset, metric)
                    assert got["per_seed"] == {str(s): pytest.approx(v)
                                               for s, v in expected.items()}


def test_stars_follow_the_t_test(setup) -> None:
    table = make(*setup)
    for g, group in enumerate(GROUPS):
        ranker = group["ranker"]
        for row in group["rows"][1:]:
            for dataset, _ in DATASETS:
                for metric in METRICS:
                    mine = list(per_seed_expected(ranker, row["method"], dataset, metric).values())
                    base = list(per_seed_expected(ranker, "full", dataset, metric).values())
                    p = ttest_ind(mine, base, equal_var=True, alternative="greater").pvalue
                    got = cell(table, g, row["method"], dataset, metric)
                    assert got["p_value"] == pytest.approx(p)
                    assert got["stars"] == ("**" if p <= 0.01 else "*" if p <= 0.05 else "")
    assert cell(table, 0, "lora", "robust04", "P@20")["stars"] == "**"
    assert cell(table, 0, "prefix", "robust04", "P@20")["stars"] == ""
    baseline = cell(table, 0, "full", "robust04", "P@20")
    assert baseline["p_value"] is None and baseline["stars"] == ""


def test_improvement_row_picks_best_method(setup) -> None:
    table = make(*setup)
    for dataset, best in [("robust04", "lora"), ("clueweb09b", "prefix")]:
        for metric in METRICS:
            entry = cell(table, 0, "improvement", dataset, metric)
            top = cell(table, 0, best, dataset, metric)["value"]
            base = cell(table, 0, "full", dataset, metric)["value"]
            assert entry["method"] == best and entry["row_kind"] == "improvement"
            assert entry["value"] == pytest.approx((top - base) / base * 100)
            assert entry["printed"] == f"{(top - base) / base * 100:.2f}%"
    colbert = table[(table["ranker"] == "colbert") & (table["row"] == "improvement")]
    assert len(colbert) == 4 and colbert["value"].isna().all() and (colbert["printed"] == "-").all()


def test_parameters_and_reference_row(setup) -> None:
    table = make(*setup)
    rows = {m: cell(table, 0, m, "robust04", "P@20") for m in ("full", "lora", "prefix")}
    assert rows["full"]["trainable_parameters"] == PARAMS["full"]
    assert [rows[m]["printed_parameters"] for m in ("full", "lora", "prefix")] == ["110M", "0.6M", "0.1M"]
    references = table[table["row_kind"] == "reference"]
    assert list(references["label"]) == ["BM25"] * 4 + ["Backbone untrained"] * 4
    assert list(references["cell"])[::4] == ["bm25:robust04:P@20", "backbone:robust04:P@20"]
    assert list(references["value"]) == pytest.approx([0.25 + shift + METRIC_SHIFT[m] for shift in (0.0, 0.1)
                                                       for _ in DATASETS for m in METRICS])
    assert (references["stars"] == "").all() and references["p_value"].isna().all()
    assert list(table["row_kind"][:9]) == ["reference"] * 8 + ["method"]      # print order: reference rows first


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
    groups = [_group(g["label"], g["ranker"], [("full", "Full FT"), ("lft_best", "LFT (best)")], ("lora", "prefix"))
              for g in GROUPS]
    table = make(records, reference, groups)
    for group in groups:
        ranker = group["ranker"]
        row = table[(table["ranker"] == ranker) & (table["row"] == "lft_best")].to_dict(orient="records")
        assert {c["trainable_parameters"] for c in row} == {PARAMS["lora"]}
        assert {c["printed_parameters"] for c in row} == {"≤ 0.6M"}
        for got in row:
            dataset, metric = got["dataset"], got["metric"]
            values = {m: mean(score(ranker, m, dataset, f, s, metric) for f in FOLDS for s in SEEDS)
                      for m in ("lora", "prefix")}
            best = max(values, key=values.get)
            assert got["method"] == best and got["value"] == pytest.approx(values[best])
            assert got["candidates"] == pytest.approx(values)
            mine = list(per_seed_expected(ranker, best, dataset, metric).values())
            base = list(per_seed_expected(ranker, "full", dataset, metric).values())
            assert got["p_value"] == pytest.approx(ttest_ind(mine, base, alternative="greater").pvalue)
    best = table[table["row"] == "lft_best"]
    assert list(best["method"]) == ["lora", "lora", "prefix", "prefix"] * 2
    assert r"$\le$ 0.6M" in render_latex(table, "t5", "Best of.")


@pytest.mark.parametrize("n, text", [(7_680, "8K"), (92_160, "0.1M"), (589_824, "0.6M"),
                                     (884_736, "0.9M"), (980_000, "1M"), (49_499, "49K"),
                                     (50_000, "0.1M"), (9_960_000, "10M"), (15_400_000, "15M"),
                                     (109_482_240, "110M"), (22_713_216, "23M")])
def test_format_count(n: int, text: str) -> None:
    assert format_count(n) == text


def test_render_latex(setup) -> None:
    table = make(*setup)
    tex = render_latex(table, "t3", "Results 100% synthetic.")
    for token in (r"\begin{table*}", r"\toprule", r"\midrule", r"\bottomrule", r"\multicolumn{2}{c}{Robust04}",
                  r"\multirow[c]{4}{*}{monoBERT (cross)}", "ColBERT (bi)", "ClueWeb09b", r"\label{tab:t3}",
                  r"\# of trainable parameters", "Fine-tuning method",
                  "BM25", r"Improvement (\%)", r"LoRA 50\%", r"Prefix\_tuning",
                  r"Results 100\% synthetic.", r"$^{*}p \le 0.05$, $^{**}p \le 0.01$ (1-tailed)"):
        assert token in tex, token
    starred = cell(table, 0, "lora", "robust04", "P@20")
    assert f"{starred['printed']}$^{{**}}$" in tex
    assert "LoRA 50%" not in tex
    lines = tex.splitlines()
    bm25 = next(i for i, line in enumerate(lines) if "BM25" in line)
    mono = next(i for i, line in enumerate(lines) if "monoBERT" in line)
    assert bm25 < mono and " & BM25 & - & " in lines[bm25]                 # the reference rows first
    assert lines[bm25 + 1].startswith(" & Backbone untrained & - & ")
    assert lines[mono].split(" & ")[1:4] == ["Full FT", "110M", cell(table, 0, "full", "robust04", "P@20")["printed"]]


def test_write_table_outputs_agree(setup, tmp_path) -> None:
    table = make(*setup)
    write_table(table, "t3", "Results.", tmp_path / "t.tex", tmp_path / "t.json", tmp_path / "t.csv")
    assert (tmp_path / "t.tex").read_text() == render_latex(table, "t3", "Results.")
    again = read_table(tmp_path / "t.json")
    assert again.to_dict(orient="records") == table.to_dict(orient="records")     # values exact, not rounded
    assert render_latex(again, "t3", "Results.") == (tmp_path / "t.tex").read_text()
    with open(tmp_path / "t.csv", newline="") as handle:
        lines = list(csv.DictReader(handle))
    n_cells = len(DATASETS) * len(METRICS)
    assert len(lines) == n_cells * (2 + sum(len(g["rows"]) + 1 for g in GROUPS))     # + improvement rows
    assert lines[0]["row_kind"] == "reference" and lines[0]["n_runs"] == "2"
    lora = next(r for r in lines if r["row"] == "lora" and r["dataset"] == "robust04"
                and r["metric"] == "P@20" and r["group"] == "monoBERT (cross)")
    assert lora["stars"] == "**" and lora["n_runs"] == "6" and lora["cell"] == "monobert:lora:robust04:P@20"
    assert lora["trainable_parameters"] == str(PARAMS["lora"])


def test_figure_bars_are_the_table_means_and_files_are_reproducible(setup, tmp_path) -> None:
    from peftir.reports.figures import build_figure, write_figure

    records, reference = setup
    figure = build_figure({**layout(), "name": "figure4", "metrics": ["nDCG@20"]}, records)
    table = make(records, reference)
    assert len(figure["panels"]) == len(GROUPS) * len(DATASETS)
    for panel in figure["panels"]:
        g = next(i for i, group in enumerate(GROUPS) if group["label"] == panel["group"])
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

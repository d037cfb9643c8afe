"""The whole DAG with Snakemake on a tiny configuration: every table cell traces to its runs."""
import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import mean

import pytest
import torch
from scipy import stats

from peftir import folds, trec

REPO = Path(__file__).resolve().parents[1]
TINY = """
experiment: {datasets: [vaswani], rankers: [monobert, colbert], seeds: [1, 2], metrics: [P@20, nDCG@5, nDCG@20]}
tables:
  table3: {methods: [full, lora]}
  table4: {methods: [full, lora, prefix, prefix_then_lora]}
  table5: {methods: [full, lft_best, ss_lora, ss_lora_then_prefix]}
figures: {figure4: {rankers: [colbert], methods: [prefix, lora, prefix_then_lora]}}
datasets: {vaswani: {folds: {scheme: seeded, n: 3, seed: 7}}}
backbone: {layers: 1}
ranker: {max_doc_len: 48, max_seq_len: 64}
training: {epochs: 1, pairs_per_epoch: 8, batch_size: 4, micro_batch: 4,
           sequential: {first_epochs: 1, second_epochs: 1}}
rerank: {depth: 25, batch_size: 64}
"""


def snakemake(workdir: Path, *args: str, hash_seed: str = "1") -> subprocess.CompletedProcess:
    """Run the workflow; ``hash_seed`` fixes Python's set/dict-of-str order for the run, so two runs
    with different seeds expose any result that depends on it."""
    command = [sys.executable, "-m", "snakemake", *args, "--snakefile", str(REPO / "Snakefile"), "--directory",
               str(workdir), "--configfile", str(REPO / "config.yaml"), str(workdir / "tiny.yaml")]
    return subprocess.run(command, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "PYTHONHASHSEED": hash_seed})


TARGETS = ("results/tables/table3.tex", "results/tables/table4.tex", "results/tables/table5.tex",
           "results/figures/figure4.pdf")


@pytest.fixture(scope="module")
def workflow(irds_home, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("workflow")
    (workdir / "tiny.yaml").write_text(TINY)
    result = snakemake(workdir, *TARGETS, "--cores", "2")
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir


def _cells(table):
    for group in table["groups"]:
        for row in group["rows"]:
            for cell in row["cells"]:
                yield group, row, cell


def _metric_files(workflow, ranker, method):
    files = sorted((workflow / f"results/metrics/vaswani/{ranker}/{method}").glob("fold*-seed*.json"))
    assert len(files) == 3 * 2                      # 3 folds × 2 seeds
    return files


@pytest.mark.integration
@pytest.mark.parametrize("name, rankers, rows", [("table3", ["monobert"], 2), ("table4", ["colbert"], 4),
                                                 ("table5", ["colbert"], 4)])
def test_each_cell_is_the_mean_of_the_runs_it_summarises(workflow, name, rankers, rows):
    table = json.loads((workflow / f"results/tables/{name}.json").read_text())
    assert [g["rows"][0]["ranker"] for g in table["groups"]] == rankers
    checked = 0
    for group, row, cell in _cells(table):
        files = _metric_files(workflow, row["ranker"], cell["method"])   # lft_best: the method it took
        values = {f.stem: json.loads(f.read_text())["mean"][cell["metric"]] for f in files}
        assert cell["value"] == pytest.approx(mean(values.values()), abs=1e-12)
        assert cell["printed"] == f"{cell['value']:.4f}"
        per_seed = {s: mean(v for k, v in values.items() if k.endswith(f"seed{s}")) for s in (1, 2)}
        assert cell["per_seed"] == pytest.approx({str(s): v for s, v in per_seed.items()})
        if row["method"] != "full":
            baseline = next(r for r in group["rows"] if r["method"] == "full")
            base_cell = next(c for c in baseline["cells"] if c["metric"] == cell["metric"])
            expected = stats.ttest_ind(list(per_seed.values()), list(base_cell["per_seed"].values()),
                                       equal_var=True, alternative="greater").pvalue
            if cell["p_value"] is not None:
                assert cell["p_value"] == pytest.approx(expected)
        checked += 1
    assert checked == len(rankers) * rows * 3
    tex = (workflow / f"results/tables/{name}.tex").read_text()
    assert "\\toprule" in tex and "BM25" in tex and "Improvement" in tex
    assert (workflow / f"results/tables/{name}.csv").read_text().count("\n") > checked


@pytest.mark.integration
def test_lft_best_is_the_best_table4_method_per_column(workflow):
    table4 = json.loads((workflow / "results/tables/table4.json").read_text())
    table5 = json.loads((workflow / "results/tables/table5.json").read_text())
    lft = [r for r in table4["groups"][0]["rows"] if r["method"] != "full"]
    best = next(r for r in table5["groups"][0]["rows"] if r["method"] == "lft_best")
    for column, cell in enumerate(best["cells"]):
        top = max(lft, key=lambda row: row["cells"][column]["value"])
        assert (cell["method"], cell["value"]) == (top["method"], top["cells"][column]["value"])
    assert best["printed_parameters"] == "≤ " + max(lft, key=lambda r: r["trainable_parameters"])["printed_parameters"]


@pytest.mark.integration
@pytest.mark.parametrize("hybrid, first", [("prefix_then_lora", "prefix"), ("ss_lora_then_prefix", "ss_lora")])
def test_sequential_hybrids_start_from_the_standalone_run_and_keep_it_frozen(workflow, hybrid, first):
    for fold in ("1", "2", "3"):
        base = workflow / "results/models/vaswani/colbert"
        summary = json.loads((base / f"{hybrid}/fold{fold}-seed1.json").read_text())
        assert summary["first_stage"]["weights"] == f"results/models/vaswani/colbert/{first}/fold{fold}-seed1.pt"
        kept = torch.load(base / f"{first}/fold{fold}-seed1.pt")["state"]
        final = torch.load(base / f"{hybrid}/fold{fold}-seed1.pt")["state"]
        frozen = [n for n in kept if n.startswith(("bert.", "peft."))]
        assert frozen and all(torch.equal(final[n], kept[n]) for n in frozen)
        assert set(final) - set(kept)                     # the second part was added and saved
    counts = {m: json.loads((base / f"{m}/fold1-seed1.json").read_text())["trainable_parameters"]
              for m in (hybrid, first)}
    assert counts[hybrid] > counts[first]


@pytest.mark.integration
def test_figure4_plots_the_table_means(workflow):
    figure = json.loads((workflow / "results/figures/figure4.json").read_text())
    table4 = json.loads((workflow / "results/tables/table4.json").read_text())
    rows = {r["method"]: r for r in table4["groups"][0]["rows"]}
    (panel,) = figure["panels"]
    assert [bar["method"] for bar in panel["bars"]] == ["prefix", "lora", "prefix_then_lora"]
    for bar in panel["bars"]:
        assert bar["value"] == rows[bar["method"]]["cells"][0]["value"]      # P@20, the first column
    assert (workflow / "results/figures/figure4.png").read_bytes().startswith(b"\x89PNG")
    assert (workflow / "results/figures/figure4.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.integration
def test_bm25_row_and_runs_follow_the_fold_rotation(workflow):
    doc = json.loads((workflow / "results/data/vaswani/folds.json").read_text())
    table = json.loads((workflow / "results/tables/table4.json").read_text())
    for cell in table["reference_rows"][0]["cells"]:
        values = [json.loads((workflow / f"results/metrics/vaswani/bm25/fold{k}.json").read_text())["mean"][cell["metric"]]
                  for k in ("1", "2", "3")]
        assert cell["value"] == pytest.approx(mean(values))
    for k in ("1", "2", "3"):
        test = set(folds.rotation(doc, k)["test"])
        run = trec.read_run(workflow / f"results/runs/vaswani/colbert/lora/fold{k}-seed1.run")
        assert set(run) <= test and len(run) >= len(test) - 1
        assert all(len(docs) == 25 for docs in run.values())
        summary = json.loads((workflow / f"results/models/vaswani/colbert/lora/fold{k}-seed1.json").read_text())
        assert summary["trainable_parameters"] == 2 * 1 * 16 * (384 + 384)   # LoRA r=16 on q,v of 1 layer
    log = (workflow / "results/logs/train/vaswani/monobert/full/fold1-seed1.log").read_text()
    assert "epoch 1 train" in log and "validation" in log             # progress reaches the rule's log


@pytest.mark.integration
def test_a_complete_workflow_plans_nothing_more(workflow):
    result = snakemake(workflow, *TARGETS, "-n", "--cores", "1")
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout + result.stderr


@pytest.mark.integration
def test_retraining_with_the_same_seed_gives_the_same_run_file(workflow):
    target = "results/runs/vaswani/colbert/ss_lora_then_prefix/fold2-seed1.run"
    before = (workflow / target).read_bytes()
    result = snakemake(workflow, target, "--forcerun", "train", "rerank", "--cores", "2", hash_seed="2")  # both stages
    assert result.returncode == 0, result.stderr[-3000:]
    assert "localrule train" in result.stdout + result.stderr
    assert (workflow / target).read_bytes() == before

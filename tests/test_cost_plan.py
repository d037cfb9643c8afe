"""``peftir plan``: the jobs a target needs and what they cost on GPUs, before any runs."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from peftir.pipeline import cost

REPO = Path(__file__).resolve().parents[1]
CONDENSER = REPO / "config/paper-condenser.yaml"


def test_backbone_sizes_are_counted_from_their_modules():
    assert round(cost.architecture("bert-base-uncased").parameters / 1e6) == 109       # "110M"
    assert round(cost.architecture("roberta-large").parameters / 1e6) == 355
    assert round(cost.architecture("distilbert-base-uncased").parameters / 1e6) == 66
    bert = cost.architecture("bert-base-uncased")
    assert bert.compute == bert.parameters - (30522 + 512 + 2) * 768 and bert.head == 768 * 30522
    assert cost.architecture("embedded:all-MiniLM-L6-v2").layers == 6


def analytic() -> cost.Calibration:
    """The checkout's calibration without its measured rates: every figure from the GPU's peak."""
    calibration = cost.Calibration.read(REPO / cost.CALIBRATION)
    calibration.measured = []
    return calibration


@pytest.fixture(scope="module")
def condenser_plan():
    return {entry.rule: entry for entry in cost.plan(REPO, [CONDENSER], ["all_dense_tables"], analytic()).rules}


def test_the_plan_counts_the_jobs_snakemake_would_run(condenser_plan):
    assert {rule: condenser_plan[rule].jobs for rule in ("pretrain", "train_retriever", "mine_negatives",
                                                         "dense_index", "dense_table")} == \
        {"pretrain": 5, "train_retriever": 18, "mine_negatives": 1, "dense_index": 18, "dense_table": 3}
    assert condenser_plan["pretrain"].gpu and not condenser_plan["dense_table"].gpu
    assert not condenser_plan["mine_negatives"].gpu     # mined, not denoised: no model runs, no GPU asked


def test_a_gpu_rule_no_system_prices_is_said_to_cost_nothing(condenser_plan):
    """Attention entropy runs a backbone over documents on a GPU, and no cost function is registered for it."""
    entropy = condenser_plan["attention_entropy"]
    assert entropy.gpu and entropy.gpu_hours == 0
    assert "no system registers a cost function for this GPU rule: priced at 0 GPU-hours" in entropy.notes
    assert not any("no system registers" in note for note in condenser_plan["pretrain"].notes)


def test_gpu_hours_follow_the_tokens_a_job_trains(condenser_plan):
    """Three pretraining runs of 34,400 steps × 2,048 texts on BERT-base with its MLM head: 6·N FLOPs a trained
    token; Condenser's blocks are 128 tokens, coCondenser's texts two spans of 34 each, which the gradient cache runs
    forward twice (+2·N); two ICT runs of 17,200 steps × 4,096 passages × (query + context), cached too, without the
    MLM head."""
    bert = cost.architecture("bert-base-uncased")
    per_token = bert.compute + bert.head
    flops = per_token * 34_400 * 2_048 * 128 * (6 + 6)                # Condenser on MS MARCO and on NQ
    flops += per_token * 34_400 * 2_048 * 2 * 34 * (6 + 2)              # coCondenser
    flops += 2 * bert.compute * 17_200 * 4_096 * 2 * 128 * (6 + 2)          # ICT on MS MARCO and on NQ
    expected = flops / (989e12 * 0.35) / 3600
    assert condenser_plan["pretrain"].gpu_hours == pytest.approx(expected, rel=1e-6)
    assert condenser_plan["train_retriever"].gpu_hours > 0 and condenser_plan["dense_table"].gpu_hours == 0


def test_auto_passes_are_sized_as_the_jobs_size_them_on_the_plans_gpu(condenser_plan):
    """``chunk: auto``: a retriever's 64 passages a step in one pass on 80 GB; a pretraining batch of 2,048 blocks
    (4,096 spans, 8,192 ICT texts) in passes of what fits, the same rows the job's own memory model picks."""
    bert = cost.architecture("bert-base-uncased")
    condenser = cost.passes.sized("auto", 2048, bert.encoder(True), cost.passes.Shape(128, True, 2),
                                  int(80e9) - 4 * bert.parameters, True, "cuda")
    assert 1 < condenser < 2048 and f"{condenser}/2048" in condenser_plan["pretrain"].passes
    assert condenser_plan["train_retriever"].passes >= {"64/64"}


def test_a_measured_rate_replaces_the_analytic_one(tmp_path):
    table = json.loads((REPO / cost.CALIBRATION).read_text())
    table["measured"] = [{"family": "bert", "precision": "bf16", "layers": 12, "train_tokens_per_s": 1e6,
                          "infer_tokens_per_s": 3e6, "gpu": "a test GPU", "date": "2026-11-25"}]
    calibration = cost.Calibration(**{key: table[key] for key in ("gpu", "peak_tflops", "utilisation", "measured",
                                                                  "reported", "source")})
    work = cost.Work("bert-base-uncased", trained=3.6e9)
    seconds, source = calibration.seconds(work, cost.architecture("bert-base-uncased"), "bf16")
    assert seconds == pytest.approx(3600) and source.startswith("measured (a test GPU, 2026-11-25")
    encoded = cost.Work("bert-base-uncased", trained=3.6e9, encoded=3e9)      # forward only: the inference rate
    assert calibration.seconds(encoded, cost.architecture("bert-base-uncased"), "bf16")[0] == pytest.approx(4600)


def test_the_command_prints_the_plan_with_its_sources():
    done = subprocess.run([sys.executable, "-m", "peftir.app.cli", "plan", "--checkout", str(REPO), str(CONDENSER),
                           "all_dense_tables"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["rule", "jobs", "GPU-h/job"] and "rows/pass" in lines[0]
    assert any(line.startswith("pretrain ") and "measured (NVIDIA H200" in line for line in lines)
    assert any(line.startswith("total ") for line in lines) and any("34.42 h" in line for line in lines)
    # then what a cluster sees: allocations with groups, beside one per job, and the start-up each costs
    kinds = lines.index(next(line for line in lines if line.split()[:2] == ["allocations", "jobs"]))
    assert any(line.endswith(" dense_index + dense_search + dense_search_target") for line in lines[kinds:])
    counts = re.search(r"allocations: (\d+) \((\d+) with a GPU\) for (\d+) jobs, (\d+) of them on the submitting "
                       r"host \(localrules\); one allocation per job \(execution.groups: false\) would be (\d+)",
                       done.stdout)
    allocations, _, jobs, local, alone = map(int, counts.groups())
    assert allocations < alone == jobs - local
    assert re.search(r"start-up per allocation: Snakemake [\d.]+ s, each job's process [\d.]+ s .*measured on this "
                     r"CPU", done.stdout)
    assert re.search(r"GPU-hours with start-up: [\d.]+ \+ [\d.]+ = [\d.]+ \(one allocation per job", done.stdout)

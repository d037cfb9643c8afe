"""Bad configuration is rejected before any job runs, with one message naming key and allowed values."""
import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from peftir.config import ConfigError, validate

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config.yaml").read_text())


def overlay(base: dict, extra: dict) -> dict:
    """Snakemake's recursive merge of a later --configfile over an earlier one."""
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        merged[key] = overlay(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def test_shipped_configurations_are_valid():
    validate(DEFAULT, SCHEMA)
    validate(overlay(DEFAULT, yaml.safe_load((REPO / "config/paper.yaml").read_text())), SCHEMA)


def test_paper_configuration_plans_the_full_matrix_without_data(tmp_path):
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                             str(REPO / "Snakefile"), "--directory", str(tmp_path), "--configfile",
                             str(REPO / "config.yaml"), str(REPO / "config/paper.yaml")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    counts = dict(line.split()[:2] for line in result.stdout.splitlines()
                  if len(line.split()) == 2 and line.split()[1].isdigit())
    folds = 5 + 5 + 1                       # Robust04, ClueWeb09b: 5 folds; MS MARCO: its fixed split
    assert int(counts["train"]) == folds * 3 * 2 * 3   # × rankers × methods × seeds
    assert int(counts["download"]) == 3 and int(counts["table"]) == 2


@pytest.mark.parametrize("change, message", [
    (lambda c: c["experiment"]["rankers"].append("bert"),
     "config key experiment.rankers[3] = 'bert': allowed: monobert, twinbert, colbert"),
    (lambda c: c["experiment"]["methods"].append("adapter"),
     "config key experiment.methods[2] = 'adapter': allowed: full, prompt, prefix, lora, lora_pp, prefix_lora"),
    (lambda c: c["experiment"]["datasets"].append("trec-covid"),
     "config key experiment.datasets[1] = 'trec-covid': allowed: vaswani, robust04, clueweb09b, msmarco-doc"),
    (lambda c: c["bm25"].update(k1="high"), "config key bm25.k1 = 'high': expected type: number"),
    (lambda c: c["training"].pop("epochs"), "config key training: required keys:"),
    (lambda c: c["ranker"]["twinbert"].update(pooling="max"), "allowed: mean, cls"),
    (lambda c: c["methods"]["lora"].update(scaling="peft"), "allowed: alpha_over_r, r_over_alpha"),
    (lambda c: c["training"].update(epoch=3), "unknown key(s) epoch"),
    (lambda c: c["experiment"].update(metrics=["P@20", "precision"]), "allowed forms: P@k, nDCG@k"),
])
def test_config_errors_name_the_key_and_allowed_values(change, message):
    config = copy.deepcopy(DEFAULT)
    change(config)
    with pytest.raises(ConfigError) as error:
        validate(config, SCHEMA)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_snakemake_stops_before_any_job_with_one_message(tmp_path):
    overlay = tmp_path / "bad.yaml"
    overlay.write_text("experiment: {datasets: [vaswani], rankers: [monobert, splade], methods: [full],"
                       " seeds: [1], metrics: [P@20]}\n")
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                             str(REPO / "Snakefile"), "--directory", str(tmp_path), "--configfile",
                             str(REPO / "config.yaml"), str(overlay)], capture_output=True, text=True)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "config key experiment.rankers[1] = 'splade': allowed: monobert, twinbert, colbert" in output
    assert "Job stats" not in output and not (tmp_path / "results").exists()

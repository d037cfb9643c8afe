"""The manual (``mkdocs.yml``, ``docs/``): its generated rule → script → function table covers every rule Snakemake
knows and names only functions the package has; the site builds with ``--strict`` (no broken link or anchor); the
README stays a short front door that points to it."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
HOOK = REPO / "docs" / "hooks" / "rules_table.py"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    """The MkDocs hook that writes the table, imported as MkDocs imports it."""
    spec = importlib.util.spec_from_file_location("rules_table", HOOK)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # as MkDocs does: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _snakemake_rules(tmp_path: Path) -> set[str]:
    """Every rule Snakemake knows in the embedded default (every system's section on), from Snakemake itself."""
    env = dict(os.environ, IR_DATASETS_HOME=str(tmp_path / "irds"))     # the config check reads metadata only
    result = subprocess.run([sys.executable, "-m", "snakemake", "--list-rules", "--snakefile", str(REPO / "Snakefile"),
                             "--directory", str(tmp_path), "--configfile", str(REPO / "config.yaml")],
                            check=False, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return {line for line in result.stdout.splitlines() if re.fullmatch(r"[A-Za-z_]\w*", line)}


def test_every_rule_is_in_the_table_with_functions_that_exist(generator: ModuleType, tmp_path: Path) -> None:
    rules = generator.collect(REPO)
    names = [rule.name for rule in rules]
    assert len(names) == len(set(names)), "a rule declared twice"
    known = _snakemake_rules(tmp_path)
    assert len(known) > 50                               # the parse of the output found the list
    assert not known - set(names), f"rules Snakemake knows that the table misses: {sorted(known - set(names))}"
    for rule in rules:
        if rule.runner is None and rule.name.startswith("all"):    # a target (the Snakefile's, a system's): inputs
            continue
        assert rule.runner == "script" and rule.script, f"{rule.file}:{rule.line}: rule {rule.name}: no script found"
        assert (REPO / rule.script).is_file()
        assert rule.functions, f"{rule.script} (rule {rule.name}): no peftir function called"
        for name in rule.functions + rule.helpers:
            assert callable(generator.resolve(name)), f"{rule.script}: {name} is not a callable of the package"
    markdown = generator.markdown(rules)
    for name in known:
        assert f"| `{name}`" in markdown


def test_a_renamed_function_fails(generator: ModuleType, tmp_path: Path) -> None:
    """The table is read from the scripts, so a function the package lost is found, not printed."""
    script = tmp_path / "script.py"
    script.write_text("from peftir.pipeline.job import job\n\nwith job(snakemake) as smk:\n"
                      "    from peftir.data.folds import no_such_function\n\n"
                      "    print(no_such_function(smk.input.a, helper=len(smk.output)))\n")
    functions, helpers, _ = generator.script_calls(script)
    assert functions == ["peftir.data.folds.no_such_function"] and helpers == []
    with pytest.raises(AttributeError):
        generator.resolve(functions[0])


def test_variants_run_their_parents_script(generator: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "workflow" / "rules").mkdir(parents=True)
    (tmp_path / "workflow" / "scripts").mkdir()
    (tmp_path / "workflow" / "scripts" / "evaluate.py").write_text(
        '"""Rule `evaluate`: metrics."""\nfrom peftir.evaluation.metrics import measure_run\n\nmeasure_run(1)\n')
    (tmp_path / "workflow" / "rules" / "a.smk").write_text(
        "rule evaluate:\n    input:\n        run=PATHS.run,\n    script:\n        \"../scripts/evaluate.py\"\n\n\n"
        "# a comment\nuse rule evaluate as evaluate_reference with:\n    output:\n        metrics=PATHS.m,\n\n\n"
        "rule target:\n    input:\n        \"x\",\n")
    rules = {rule.name: rule for rule in generator.collect(tmp_path)}
    assert set(rules) == {"evaluate", "evaluate_reference", "target"}
    assert rules["evaluate_reference"].parent == "evaluate"
    for name in ("evaluate", "evaluate_reference"):
        assert rules[name].script == "workflow/scripts/evaluate.py"
        assert rules[name].functions == ["peftir.evaluation.metrics.measure_run"]
        assert rules[name].summary == "metrics."
    assert rules["target"].runner is None and rules["target"].script is None


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                            cwd=REPO, check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    page = (site / "development" / "rules" / "index.html").read_text()
    assert "rules-table" not in page and "train_first_stage" in page
    assert (site / "assets" / "learning_curve.png").is_file()


def test_the_readme_is_a_front_door_to_the_manual() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "make docs" in readme and "](docs/index.md)" in readme
    for target in re.findall(r"\]\((docs/[^)#\s]+)(?:#[^)\s]*)?\)", readme):
        assert (REPO / target).is_file(), f"README links {target}, which does not exist"
    for command in ("make demo", "make test", "make all-tables", "peftir audit", "--profile slurm"):
        assert command in readme

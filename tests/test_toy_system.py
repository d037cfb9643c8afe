"""A sixth system, added the way a user's package adds one: ``tests/toy_system`` (BM25 + RM3 against BM25, one table)
is its own distribution, installed here with pip into a throwaway folder (the clone's ignored ``.venv/``, where
``make install`` puts packages) and found through the ``peftir.systems`` entry point; no file the workflow runs names
it. Installed beside the workflow, it is checked by the config check, planned by ``snakemake -n all_tables``, built
by a real Snakemake run on the Cranfield fixture, priced by ``peftir plan``, audited by ``peftir audit`` and packed
by ``peftir crate``; the workflow's checkout is unchanged."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from checkout import clone
from irds_fixtures import write_fixtures
from test_workflow import snakemake

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tests" / "toy_system"
NAMES = ("toy_rm3", "toy-rm3", "peftir_toy_rm3")
# what the workflow runs: the toy's name in none of them is the point of the proof
WORKFLOW = ("src", "workflow", "Snakefile", "config.yaml", "config", "pyproject.toml", "Makefile")
TOY = """
datasets:
  cranfield:
    label: Cranfield
    irds: cranfield
    query_field: text
    doc_fields: [title, text]
    folds: {scheme: seeded, n: 3, seed: 7}
    validation_metric: P@20
toy_rm3:
  dataset: cranfield
  depth: 100
  rm3: {fb_terms: 10, fb_docs: 5, original_query_weight: 0.5}
  metrics: [nDCG@10, AP]
  tables:
    table1: {caption: "BM25 and BM25 + RM3 on the Cranfield fixture (mean over its 3 folds' test queries)."}
resources:
  toy_rm3_search: {threads: 1, mem_mb: 2000, runtime: 10}
  evaluate_toy_rm3: {threads: 1, mem_mb: 1000, runtime: 10}
  toy_rm3_table: {threads: 1, mem_mb: 1000, runtime: 10}
"""
TABLE = "results/tables/toy-rm3/table1"
TOY_RULES = {"toy_rm3_search": 1, "evaluate_toy_rm3": 3, "evaluate_toy_bm25": 3, "toy_rm3_table": 1}


def _tracked(root: Path) -> dict[str, bytes]:
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True).stdout
    paths = [path for path in listed.decode().split("\0") if path and (root / path).is_file()]
    return {path: (root / path).read_bytes() for path in paths}


@pytest.fixture(scope="module")
def toy(irds_home, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A clone of the repository with the toy package pip-installed where ``make install`` puts packages, in the
    clone's ignored ``.venv/`` (built from a copy: pip writes beside its source), its table and companions built;
    the clone and the environment that puts the toy beside peftir."""
    write_fixtures(irds_home, ["cranfield"])
    workdir = clone(tmp_path_factory.mktemp("toy"))
    before = _tracked(workdir)
    build, site = tmp_path_factory.mktemp("toy-source"), workdir / ".venv" / "toy-site"
    shutil.copytree(SOURCE, build / "toy_system")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(site), str(build / "toy_system")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    (workdir / "tiny.yaml").write_text(TOY)
    result = snakemake(workdir, f"{TABLE}.tex", f"{TABLE}.repro.tex", f"{TABLE}.significance.tex", "--cores", "2",
                       env=env)
    assert result.returncode == 0, result.stderr[-5000:]
    assert _tracked(workdir) == before, "building the toy's table changed the workflow's checkout"
    return workdir, env


@contextmanager
def edited(path: Path, text: bytes):
    """``path`` with ``text`` appended, restored after."""
    kept = path.read_bytes()
    path.write_bytes(kept + text)
    try:
        yield
    finally:
        path.write_bytes(kept)


def _peftir(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "peftir.app.cli", *args], capture_output=True, text=True,
                          timeout=900, cwd=cwd, env={**os.environ, **env})


def _python(env: dict[str, str], code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def test_nothing_the_workflow_runs_names_the_toy_system():
    """The toy needs no edit of the core: no file of the package, rules, configs or build names it."""
    named = sorted(path for path, text in _tracked(REPO).items() if path.startswith(WORKFLOW)
                   and any(name.encode() in text for name in NAMES))
    assert not named, f"the workflow names the toy system in {named}"


@pytest.mark.integration
def test_the_config_check_accepts_and_checks_its_section_and_asks_nothing_of_a_config_without_it(toy, tmp_path):
    toy_workflow, installed = toy

    def loaded(*files: str, then: str = "print('accepted')") -> subprocess.CompletedProcess:
        given = [str(toy_workflow / name) for name in files]
        return _python(installed, f"from peftir.pipeline.config import load_config, validate; "
                                  f"c = load_config({str(toy_workflow)!r}, {given!r}); {then}")

    checked = loaded("config.yaml", "tiny.yaml")
    assert checked.stdout.strip() == "accepted", checked.stderr
    plain = loaded("config.yaml")
    assert plain.stdout.strip() == "accepted", plain.stderr       # installed, unused: its rules need no resources
    for change, message in [
            ("toy_rm3: {dataset: robust05}", "config key toy_rm3.dataset = 'robust05': allowed: "),
            ("toy_rm3: {metrics: [nDCG@ten]}", "config key toy_rm3.metrics[0] = 'nDCG@ten'"),
            ("toy_rm3: {rm3: {fb_docs: 0}}", "config key toy_rm3.rm3.fb_docs = 0"),
            ("toy_rm3: {prf: rm3}", "config key toy_rm3: unknown key(s) prf"),
            ("resources: {toy_rm3_table: null}", "config key resources.toy_rm3_table = None")]:
        (tmp_path / "bad.yaml").write_text(change + "\n")      # outside the checkout: a crate refuses strays
        refused = loaded("config.yaml", "tiny.yaml", str(tmp_path / "bad.yaml"))
        assert refused.returncode != 0 and message in refused.stderr, (change, refused.stderr[-2000:])
    schema = toy_workflow / "workflow/schemas/config.schema.yaml"
    without = loaded("config.yaml", "tiny.yaml", then="[c['resources'].pop(rule) for rule in ('toy_rm3_search', "
                                                      "'evaluate_toy_rm3', 'toy_rm3_table')]; "
                                                      f"validate(c, {str(schema)!r})")
    assert "config key resources: missing key(s) toy_rm3_search, evaluate_toy_rm3, toy_rm3_table" in without.stderr


@pytest.mark.integration
def test_snakemake_plans_its_jobs_among_all_tables(toy):
    toy_workflow, installed = toy
    planned = snakemake(toy_workflow, "-n", "--forceall", "all_tables", env=installed)
    assert planned.returncode == 0, planned.stderr[-3000:]
    counts = {line.split()[0]: int(line.split()[1]) for line in planned.stdout.splitlines()
              if len(line.split()) == 2 and line.split()[1].isdigit()}
    assert {rule: counts.get(rule) for rule in TOY_RULES} == TOY_RULES
    assert counts["scorecard"] > 1 and counts["table"] >= 1      # beside the embedded default's own tables


@pytest.mark.integration
def test_a_real_build_makes_its_table_from_anserinis_runs_and_the_audit_passes_it(toy):
    toy_workflow, installed = toy
    cells = json.loads((toy_workflow / f"{TABLE}.json").read_text())
    assert [cell["cell"] for cell in cells] == ["bm25/nDCG@10", "bm25/AP", "rm3/nDCG@10", "rm3/AP"]
    assert all(len(cell["runs"]) == 3 for cell in cells)                    # one metrics file per fold
    assert [cell["ttest"]["against"] for cell in cells if cell["ttest"]] == ["bm25/nDCG@10", "bm25/AP"]
    run = (toy_workflow / "results/toy-rm3/runs/cranfield/rm3.run").read_text().splitlines()
    assert run and all(line.split()[5] == "rm3" for line in run)            # Anserini's RM3 run, tagged
    record = json.loads((toy_workflow / "results/provenance/toy-rm3/runs/cranfield/rm3.run.json").read_text())
    # installed inside the checkout's .venv/, its script is named by its package all the same
    assert record["params"]["code"]["script"] == "peftir_toy_rm3:scripts/toy_rm3_search.py"
    assert "peftir_toy_rm3.search" in record["params"]["code"]["digests"]   # its package's modules count too
    scorecard_record = json.loads((toy_workflow / f"results/provenance/{TABLE.removeprefix('results/')}.repro.tex.json"
                                   ).read_text())
    assert [entry["path"] for entry in scorecard_record["params"]["reported"]] == [
        "peftir_toy_rm3:reported/toy-rm3.yaml"]                              # no install path in a record
    for report in ("", ".repro", ".significance"):
        audited = _peftir(installed, "audit", f"{TABLE}{report}.tex", "--directory", str(toy_workflow),
                          "--checkout", str(toy_workflow), cwd=toy_workflow)
        assert audited.returncode == 0, audited.stdout[-3000:] + audited.stderr[-3000:]
        assert "audit passed: 4" in audited.stdout or report == ".repro", audited.stdout[-1000:]
    scorecard = json.loads((toy_workflow / f"{TABLE}.repro.json").read_text())
    assert scorecard["cells"] == [] and "no table1 in" in scorecard["place"]    # no paper: it compares nothing
    traced = _peftir(installed, "audit", f"{TABLE}.tex", "--cell", "rm3/AP", "--cell", "bm25/AP", "--directory",
                     str(toy_workflow), "--checkout", str(toy_workflow), cwd=toy_workflow)
    assert "index results/index/cranfield" in traced.stdout and "→ toy_rm3_run " in traced.stdout, traced.stdout
    assert "cell rm3/AP (BM25 + RM3, cranfield AP)" in traced.stdout                  # a method row, no group
    assert "cell bm25/AP (reference / BM25, cranfield AP)" in traced.stdout
    search = Path(installed["PYTHONPATH"].split(os.pathsep)[0]) / "peftir_toy_rm3/search.py"
    with edited(search, b"DEPTH_MARGIN = 0\n"):          # another version of its search: its runs are stale
        stale = _peftir(installed, "audit", f"{TABLE}.tex", "--directory", str(toy_workflow), "--checkout",
                        str(toy_workflow), cwd=toy_workflow)
    assert stale.returncode != 0 and "the code it ran has changed since (peftir_toy_rm3.search)" in stale.stdout, \
        stale.stdout[-2000:]


@pytest.mark.integration
def test_peftir_plan_prices_its_rules(toy):
    toy_workflow, installed = toy
    priced = _peftir(installed, "plan", "--checkout", str(toy_workflow), str(toy_workflow / "tiny.yaml"),
                     f"{TABLE}.tex", cwd=toy_workflow)
    assert priced.returncode == 0, priced.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in priced.stdout.splitlines() if line.split()}
    for rule, jobs in TOY_RULES.items():
        assert rows[rule][1] == str(jobs) and rows[rule][-2:] == ["CPU", "job"], rows.get(rule)


@pytest.mark.integration
def test_peftir_crate_packs_it_with_its_packages_scripts_and_a_reviewer_audits_the_crate(toy):
    toy_workflow, installed = toy
    crate = toy_workflow / "results/crates/toy.crate.zip"
    packed = _peftir(installed, "crate", f"{TABLE}.tex", "-o", str(crate), "--directory", str(toy_workflow),
                     "--checkout", str(toy_workflow), cwd=toy_workflow)
    assert packed.returncode == 0, packed.stderr[-3000:]
    with zipfile.ZipFile(crate) as packed_files:
        assert "systems/peftir_toy_rm3/scripts/toy_rm3_search.py" in packed_files.namelist()
    reviewed = _peftir(installed, "audit", "--crate", str(crate), "--checkout", str(toy_workflow), "--unpublished",
                       "--scratch", str(toy_workflow / "review"), cwd=toy_workflow)
    assert reviewed.returncode == 0 and "audit passed: 4 cell(s)" in reviewed.stdout, reviewed.stdout[-3000:]
    assert "system packages' scripts: 3 of 3 equal to the installed peftir_toy_rm3's" in reviewed.stdout
    script = Path(installed["PYTHONPATH"].split(os.pathsep)[0]) / "peftir_toy_rm3/scripts/toy_rm3_table.py"
    with edited(script, b"# another version of the package\n"):         # the reviewer's is not the run's
        refused = _peftir(installed, "audit", "--crate", str(crate), "--checkout", str(toy_workflow),
                          "--unpublished", "--scratch", str(toy_workflow / "review"), cwd=toy_workflow)
    assert refused.returncode != 0, refused.stdout[-2000:]
    assert "1 rule script(s) differ from the installed system packages' (e.g. " \
           "systems/peftir_toy_rm3/scripts/toy_rm3_table.py)" in refused.stdout, refused.stdout[-2000:]

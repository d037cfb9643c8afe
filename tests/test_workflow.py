"""The whole DAG with Snakemake on a tiny configuration: every table cell traces to its runs."""
import hashlib
import json
import os
import re
import subprocess
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path
from statistics import mean

import pytest
import torch
import yaml
from scipy import stats

from peftir.pipeline.contract import artefact
from peftir.semi_siamese import contract as semi_siamese
from peftir.data import folds, trec

from checkout import clone, uncommitted
from seam import audited, check_the_seam

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
ranker: {max_doc_len: 16, max_seq_len: 36}   # a monoBERT pass holds 36 - 20 - 3 = 13 document pieces: documents chunked
training: {epochs: 1, pairs_per_epoch: 8, batch_size: 4, micro_batch: 4,
           sequential: {first_epochs: 1, second_epochs: 1}}
rerank: {depth: 25, batch_size: 64}
publication: {authors: ["Ada Lovelace <https://orcid.org/0000-0002-1825-0097>", "Tiny Test"]}
"""


def command_line(workdir: Path, *args: str, overlays: tuple[Path, ...] = ()) -> list[str]:
    """Snakemake in ``workdir``, configured by config.yaml + tiny.yaml + overlays: the workflow of the clone
    ``workdir`` is, as a user runs it, or else the repository's."""
    checkout = workdir if (workdir / "Snakefile").is_file() else REPO
    return [sys.executable, "-m", "snakemake", *args, "--snakefile", str(checkout / "Snakefile"), "--directory",
            str(workdir), "--configfile", str(checkout / "config.yaml"), str(workdir / "tiny.yaml"),
            *map(str, overlays)]


def snakemake(workdir: Path, *args: str, hash_seed: str = "1", overlays: tuple[Path, ...] = (),
              env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the workflow; ``hash_seed`` fixes Python's set/dict-of-str order for the run, so two runs
    with different seeds expose any result that depends on it."""
    return subprocess.run(command_line(workdir, *args, overlays=overlays), capture_output=True, text=True,
                          timeout=1800, env={**os.environ, **(env or {}), "PYTHONHASHSEED": hash_seed})


@contextmanager
def tampered(path: Path, change):
    """Apply ``change`` to a file (or delete it, change=None), then restore its bytes and times."""
    saved, times = path.read_bytes(), path.stat()
    if change is None:
        path.unlink()
    else:
        path.write_bytes(change(saved))
    try:
        yield
    finally:
        path.write_bytes(saved)
        os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))


TARGETS = ("results/tables/table3.tex", "results/tables/table4.tex", "results/tables/table5.tex",
           "results/figures/figure4.pdf", "results/crates/table5.crate.zip", "results/tables/table5.repro.tex",
           "results/tables/table5.significance.tex")


@pytest.fixture(scope="module")
def workflow(irds_home, tmp_path_factory):
    """The tiny configuration built in a clone of the repository, from its root, as a user runs it."""
    workdir = clone(tmp_path_factory.mktemp("workflow"))
    (workdir / "tiny.yaml").write_text(TINY)
    result = snakemake(workdir, *TARGETS, "--cores", "2", env=audited(workdir))
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir


@pytest.mark.integration
def test_every_ranker_job_runs_its_models_through_the_execution_seam(workflow):
    check_the_seam(workflow, {"train", "rerank", "zero_shot"})


def _table(workflow, name):
    return json.loads((workflow / f"results/tables/{name}.json").read_text())


def _metric_files(workflow, ranker, method):
    files = sorted((workflow / f"results/metrics/vaswani/{ranker}/{method}").glob("fold*-seed*.json"))
    assert len(files) == 3 * 2                      # 3 folds × 2 seeds
    return files


@pytest.mark.integration
@pytest.mark.parametrize("name, rankers, rows", [("table3", ["monobert"], 2), ("table4", ["colbert"], 4),
                                                 ("table5", ["colbert"], 4)])
def test_each_cell_is_the_mean_of_the_runs_it_summarises(workflow, name, rankers, rows):
    table = _table(workflow, name)
    cells = [c for c in table if c["row_kind"] == "method"]
    assert sorted({c["ranker"] for c in cells}) == rankers
    for cell in cells:
        files = _metric_files(workflow, cell["ranker"], cell["method"])   # lft_best: the method it took
        values = {f.stem: json.loads(f.read_text())["mean"][cell["metric"]] for f in files}
        assert cell["value"] == pytest.approx(mean(values.values()), abs=1e-12)
        assert cell["printed"] == f"{cell['value']:.4f}"
        per_seed = {s: mean(v for k, v in values.items() if k.endswith(f"seed{s}")) for s in (1, 2)}
        assert cell["per_seed"] == pytest.approx({str(s): v for s, v in per_seed.items()})
        if cell["row"] != "full":
            base = next(c for c in cells if c["ranker"] == cell["ranker"] and c["row"] == "full"
                        and c["metric"] == cell["metric"])
            expected = stats.ttest_ind(list(per_seed.values()), list(base["per_seed"].values()),
                                       equal_var=True, alternative="greater").pvalue
            if cell["p_value"] is not None:
                assert cell["p_value"] == pytest.approx(expected)
    assert len(cells) == len(rankers) * rows * 3
    tex = (workflow / f"results/tables/{name}.tex").read_text()
    assert "\\toprule" in tex and "BM25" in tex and "Improvement" in tex
    assert (workflow / f"results/tables/{name}.csv").read_text().count("\n") > len(cells)


@pytest.mark.integration
def test_lft_best_is_the_best_table4_method_per_column(workflow):
    table4 = [c for c in _table(workflow, "table4") if c["row_kind"] == "method" and c["row"] != "full"]
    best = [c for c in _table(workflow, "table5") if c["row"] == "lft_best"]
    assert len(best) == 3
    for cell in best:
        column = [c for c in table4 if c["metric"] == cell["metric"]]
        top = max(column, key=lambda c: c["value"])
        assert (cell["method"], cell["value"]) == (top["method"], top["value"])
    assert best[0]["printed_parameters"] == "≤ " + max(table4, key=lambda c: c["trainable_parameters"])[
        "printed_parameters"]


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
    table4 = {c["row"]: c for c in _table(workflow, "table4") if c["ranker"] == "colbert" and c["metric"] == "P@20"}
    (panel,) = figure["panels"]
    assert [bar["method"] for bar in panel["bars"]] == ["prefix", "lora", "prefix_then_lora"]
    for bar in panel["bars"]:
        assert bar["value"] == table4[bar["method"]]["value"]
    assert (workflow / "results/figures/figure4.png").read_bytes().startswith(b"\x89PNG")
    assert (workflow / "results/figures/figure4.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.integration
def test_reference_rows_and_runs_follow_the_fold_rotation(workflow):
    doc = json.loads((workflow / "results/data/vaswani/folds.json").read_text())
    references = [c for c in _table(workflow, "table4") if c["row_kind"] == "reference"]
    assert {c["row"] for c in references} == {"bm25", "backbone"}         # BM25, the untrained backbone
    for cell in references:
        values = [json.loads((workflow / f"results/metrics/vaswani/{cell['row']}/fold{k}.json").read_text())["mean"][
            cell["metric"]] for k in ("1", "2", "3")]
        assert cell["value"] == pytest.approx(mean(values))
    zero_shot = trec.read_run(workflow / "results/runs/vaswani/backbone.run")
    bm25 = trec.read_run(workflow / "results/runs/vaswani/bm25.run", depth=25)
    assert zero_shot.keys() == bm25.keys() and all(zero_shot[q].keys() == bm25[q].keys() for q in bm25)
    assert any(trec.ranked(zero_shot[q])[:5] != trec.ranked(bm25[q])[:5] for q in bm25)   # it reranks
    for k in ("1", "2", "3"):
        test = set(folds.rotation(doc, k)["test"])
        run = trec.read_run(workflow / f"results/runs/vaswani/colbert/lora/fold{k}-seed1.run")
        assert set(run) <= test and len(run) >= len(test) - 1
        assert all(len(docs) == 25 for docs in run.values())
        summary = json.loads((workflow / f"results/models/vaswani/colbert/lora/fold{k}-seed1.json").read_text())
        assert summary["trainable_parameters"] == 2 * 1 * 16 * (384 + 384)   # LoRA r=16 on q,v of 1 layer
    log = (workflow / "results/logs/train/vaswani/monobert/full/fold1-seed1.log").read_text()
    assert "[progress] epoch 1: " in log and "validation" in log      # progress reaches the rule's log


@pytest.mark.integration
def test_every_run_is_plain_trec_that_trec_eval_style_readers_take(workflow):
    """trec_eval 9.0 rejects comment lines; every run is six columns, its ir_metadata in a sidecar."""
    import ir_measures
    import pytrec_eval
    import yaml

    runs = sorted((workflow / "results/runs").rglob("*.run"))
    assert len(runs) > 20
    for path in runs:
        lines = path.read_text().splitlines()
        assert lines and all(len(f) == 6 and f[1] == "Q0" and f[3].isdigit() and float(f[4]) == float(f[4])
                             for f in map(str.split, lines)), path
        with open(path) as handle:
            parsed = pytrec_eval.parse_run(handle)
        assert parsed == trec.read_run(path)
        assert sum(1 for _ in ir_measures.read_trec_run(str(path))) == len(lines)
        metadata = yaml.safe_load(path.with_suffix(".ir_metadata.yaml").read_text())
        assert metadata["tag"] == lines[0].split()[5]


@pytest.mark.integration
def test_a_complete_workflow_plans_nothing_more(workflow):
    result = snakemake(workflow, *TARGETS, "-n", "--cores", "1")
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout + result.stderr


def planned(workflow: Path, overlays: tuple[Path, ...] = (), env: dict | None = None) -> set[tuple[str, str]]:
    """(rule, wildcards) of every job ``snakemake -n`` plans for the tiny targets."""
    result = snakemake(workflow, *TARGETS, "-n", "--cores", "1", overlays=overlays, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = set()
    for block in re.split(r"\n(?= *(?:local)?rule )", result.stdout):        # a group's jobs are indented
        rule = re.match(r" *(?:local)?rule (\w+):", block)
        wildcards = re.search(r"wildcards: (.*)", block)
        if rule and rule.group(1) not in ("all", "all_tables"):
            jobs.add((rule.group(1), wildcards.group(1) if wildcards else ""))
    return jobs


def _uses(method: str, entry: str) -> bool:
    """Whether a method's settings come (also) from config entry ``entry``."""
    spec = semi_siamese.method(method)
    return entry in spec.entries or any(_uses(part, entry) for part in spec.parts)


@pytest.mark.integration
def test_changing_lora_rank_plans_exactly_the_lora_runs_and_their_tables(workflow, tmp_path):
    overlay = tmp_path / "rank.yaml"
    overlay.write_text("methods: {lora: {rank: 8}}\n")
    jobs = planned(workflow, overlays=(overlay,))
    trained = {(re.search(r"ranker=(\w+)", w).group(1), re.search(r"method=(\w+)", w).group(1))
               for rule, w in jobs if rule == "train"}
    built = {(p.parent.parent.name, p.parent.name)
             for p in (workflow / "results/models/vaswani").glob("*/*/fold1-seed1.pt")}
    assert built and trained == {run for run in built if _uses(run[1], "lora")}
    assert {rule for rule, _ in jobs} == {"train", "rerank", "evaluate", "table", "figure", "crate",
                                   "scorecard", "significance"}
    assert sum(rule == "train" for rule, _ in jobs) == len(trained) * 3 * 2      # every fold and seed
    assert sum(rule == "rerank" for rule, _ in jobs) == sum(rule == "evaluate" for rule, _ in jobs) == len(trained) * 6


NO_RERUN = set()
TRAINING_ON = {"train", "rerank", "evaluate", "table", "figure", "crate", "scorecard", "significance"}


@pytest.mark.integration
@pytest.mark.parametrize("module, edit, rules", [
    # what does not change a result reruns nothing
    ("semi_siamese/loop.py", lambda code: code + b"\n# a comment\n", NO_RERUN),
    ("semi_siamese/loop.py", lambda code: code.replace(b'"""Paper eq. 1: mean of', b'"""Paper eq. 1 (the loss): mean of'),
     NO_RERUN),
    ("semi_siamese/loop.py", lambda code: code.replace(b'print(f"epoch {epoch}: loss', b'print(f"epoch {epoch}: training loss'),
     NO_RERUN),
    ("provenance/records.py", lambda code: code + b"\n\ndef unused():\n    return 1\n", NO_RERUN),
    ("pipeline/job.py", lambda code: code + b"\n\ndef unused():\n    return 1\n", NO_RERUN),
    # what does reruns exactly the jobs whose results depend on it
    ("semi_siamese/loop.py", lambda code: code.replace(b"(1.0 - torch.softmax", b"(1.0 * 1.0 - torch.softmax"), TRAINING_ON),
    ("evaluation/stats.py", lambda code: code.replace(b"alternative=\"greater\")", b"alternative=\"greater\", axis=0)"),
     {"table", "figure", "crate", "scorecard", "significance"}),
    ("evaluation/metrics.py", lambda code: code + b"\n\ndef unused():\n    return 1\n",
     TRAINING_ON | {"evaluate_reference"}),   # validation is scored with it inside training
])
def test_code_is_tracked_by_content(workflow, module, edit, rules):
    """The edit is made in the clone's copy of the package, which the dry run imports first (PYTHONPATH): the
    installed one stays as it is for the workflows and audits other tests run beside this one."""
    path = workflow / "src" / "peftir" / module
    assert edit(path.read_bytes()) != path.read_bytes()          # the edit applies
    with tampered(path, edit):
        jobs = planned(workflow, env={"PYTHONPATH": str(workflow / "src")})
    assert {rule for rule, _ in jobs} == rules


def audit(workflow: Path, *args: str, checkout: Path | None = None,
          report: str = "results/tables/table5.tex") -> subprocess.CompletedProcess:
    """``peftir audit`` of Table 5 (or ``report``) in ``workflow`` against its checkout (the clone it was built in)."""
    return subprocess.run([sys.executable, "-m", "peftir.app.cli", "audit", report, *args,
                           "--directory", str(workflow), "--checkout", str(checkout or workflow)],
                          capture_output=True, text=True, timeout=600)


CELL = "colbert:ss_lora:vaswani:P@20"


@pytest.mark.integration
def test_a_clean_audit_passes_and_prints_the_chain(workflow):
    done = audit(workflow)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "audit passed" in done.stdout and "params and code match the config and checkout" in done.stdout
    one = audit(workflow, "--cell", CELL, "--skip-config")
    assert one.returncode == 0
    assert f"cell {CELL}" in one.stdout and "commit " in one.stdout
    assert one.stdout.count("(ir_measures agrees)") == 3 * 2     # one chain line per fold × seed
    assert "results/models/vaswani/colbert/ss_lora/fold1-seed1.pt" in one.stdout
    assert re.search(r'^  config → params: method \{.*"name": "ss_lora".*; training \{.*; backbone \{', one.stdout,
                     re.MULTILINE)      # the params the weights were trained with
    best = audit(workflow, "--cell", "colbert:lft_best:vaswani:P@20", "--skip-config")
    assert best.returncode == 0 and re.search(r"cell colbert:lft_best:vaswani:P@20 \(.* P@20, taken from "
                                              r"(lora|prefix|prefix_then_lora)\)", best.stdout), best.stdout[-2000:]


def _first_line_with_new_score(data: bytes) -> bytes:
    lines = data.decode().splitlines(keepends=True)
    qid, q0, docid, rank, score, tag = lines[0].split()
    lines[0] = f"{qid} {q0} {docid} {rank} {float(score) + 1000.0!r} {tag}\n"
    return "".join(lines).encode()


def _json_edit(edit):
    """A change that edits a JSON file's document in place (``edit`` mutates it)."""
    def change(data: bytes) -> bytes:
        document = json.loads(data)
        edit(document)
        return json.dumps(document, indent=1, sort_keys=True).encode()
    return change


RUN = "results/runs/vaswani/colbert/ss_lora/fold2-seed1.run"
METRICS = "results/metrics/vaswani/colbert/ss_lora/fold2-seed1.json"
WEIGHTS = "results/models/vaswani/colbert/ss_lora/fold2-seed1.pt"
SUMMARY = "results/models/vaswani/colbert/ss_lora/fold2-seed1.json"
RECORD = {path: str(Path("results/provenance") / Path(path).relative_to("results")) + ".json"
          for path in (RUN, METRICS, WEIGHTS, SUMMARY)}
# One edit each, to a file or a record of CELL's chain: what is edited, how, and the file the audit must name.
TAMPERINGS = {
    "run score": (RUN, _first_line_with_new_score, RUN),
    "run metadata": (RUN.replace(".run", ".ir_metadata.yaml"), lambda d: d.replace(b"colbert", b"twinbert"),
                     RUN.replace(".run", ".ir_metadata.yaml")),
    "metric value": (METRICS, _json_edit(lambda d: d["mean"].update({"P@20": d["mean"]["P@20"] + 0.05})), METRICS),
    "per-query value": (METRICS, _json_edit(lambda d: d["per_query"][next(iter(d["per_query"]))].update(
        {"P@20": 1.0})), METRICS),
    "metrics record deleted": (RECORD[METRICS], None, RECORD[METRICS]),
    "record params": (RECORD[RUN], _json_edit(lambda d: d["params"]["rerank"].update(depth=99)), RECORD[RUN]),
    "record seed": (RECORD[WEIGHTS], _json_edit(lambda d: d["seeds"].update(training=7)), RECORD[WEIGHTS]),
    "record commit": (RECORD[METRICS], _json_edit(lambda d: d["git"].update(commit="0" * 40)), RECORD[METRICS]),
    "summary's parameter count": (SUMMARY, _json_edit(lambda d: d.update(trainable_parameters=1)), SUMMARY),
    "weights": (WEIGHTS, lambda d: d[:-100] + bytes([d[-100] ^ 1]) + d[-99:], WEIGHTS),
    "table JSON twin": ("results/tables/table5.json", lambda d: d.replace(b'"printed": "0.', b'"printed": "1.', 1),
                        "results/tables/table5.json"),
    "table CSV twin": ("results/tables/table5.csv", lambda d: d.replace(b",0.", b",1.", 1),
                       "results/tables/table5.csv"),
    "table LaTeX": ("results/tables/table5.tex", lambda d: d.replace(b"0.", b"1.", 1), "results/tables/table5.tex"),
}


@pytest.mark.integration
@pytest.mark.parametrize("what", TAMPERINGS)
def test_the_audit_fails_naming_the_tampered_file(workflow, what):
    target, change, named = TAMPERINGS[what]
    with tampered(workflow / target, change):
        done = audit(workflow, "--cell", CELL, "--skip-config")
    assert done.returncode == 1, done.stdout[-2000:]
    assert re.search(rf"AUDIT FAILED: cell \S+: {re.escape(named)}:", done.stdout), done.stdout[-2000:]


@pytest.mark.integration
def test_the_audit_passes_again_once_every_tampering_is_undone(workflow):
    """Run after the tamperings above (a file's tests run in order): the audit passes on the restored files, so each
    of them failed for its edit alone, and an audit keeps nothing of what it saw. One audit for the thirteen (each
    tampering test audited once more after its own, before)."""
    done = audit(workflow, "--cell", CELL, "--skip-config")
    assert done.returncode == 0 and "audit passed: 1 cell(s)" in done.stdout, done.stdout[-2000:]


SCORECARD, SIGNIFICANCE = "results/tables/table5.repro.tex", "results/tables/table5.significance.tex"
SCORECARD_FIGURE = "results/figures/table5.repro.pdf"


@pytest.mark.integration
def test_table5s_scorecard_compares_its_cells_with_the_papers_through_the_stand_in(workflow):
    card = json.loads((workflow / "results/tables/table5.repro.json").read_text())
    table = {c["cell"]: c for c in _table(workflow, "table5")}
    by_cell = {c["cell"]: c for c in card["cells"]}
    cell = by_cell[CELL]                                        # colbert:ss_lora:vaswani:P@20 ← the paper's Robust04
    assert cell["reported_cell"] == "colbert:ss_lora:robust04:P@20" and cell["reported"] == 0.3406
    assert cell["reproduced"] == table[CELL]["value"]
    assert cell["difference"] == pytest.approx(table[CELL]["value"] - 0.3406)
    assert card["budget"] == "embedded" and "embedded default" in (workflow / SCORECARD).read_text()
    assert {row["baseline"] for row in card["rows"]} == {"colbert:full"}
    assert (workflow / "results/figures/table5.repro.png").stat().st_size > 0


@pytest.mark.integration
def test_each_run_records_the_significance_test_it_is_evaluated_with(workflow):
    metadata = yaml.safe_load((workflow / "results/runs/vaswani/colbert/lora/fold1-seed1.ir_metadata.yaml").read_text())
    (test,) = metadata["research goal"]["evaluation"]["significance test"]
    assert test["correction method"] == "holm" and "paired t-test" in test["name"]


@pytest.mark.integration
def test_the_companions_audit_down_to_the_runs_and_a_changed_byte_is_named(workflow):
    for report in (SCORECARD, SCORECARD_FIGURE, SIGNIFICANCE):
        done = audit(workflow, report=report)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "audit passed" in done.stdout and "(ir_measures agrees)" in done.stdout   # the table cells' chains
    with tampered(workflow / SCORECARD_FIGURE, lambda b: b[:-64] + b"%" * 64):
        redrawn = audit(workflow, "--skip-config", report=SCORECARD_FIGURE)
    assert redrawn.returncode == 1 and SCORECARD_FIGURE in redrawn.stdout, redrawn.stdout[-2000:]
    refused = audit(workflow, report="results/tables/table5.repro.csv")      # a twin: audited through its .tex
    assert refused.returncode == 2 and "scorecard csv, which the audit does not check alone" in refused.stdout
    assert "….repro.pdf" in refused.stdout and "significance companion" in refused.stdout
    one = audit(workflow, "--cell", CELL, "--skip-config", report=SCORECARD)
    assert one.returncode == 0 and f"cell {CELL}" in one.stdout
    changes = [(SCORECARD.replace(".tex", ".json"), lambda b: b.replace(b'"compared": ', b'"compared": 1', 1)),
               ("config/reported/semi-siamese.yaml", lambda b: b.replace(b"value: 0.3406", b"value: 0.3407", 1)),
               (SIGNIFICANCE.replace(".tex", ".json"), lambda b: b.replace(b'"family": ', b'"family": 1', 1))]
    for path, change in changes:
        with tampered(workflow / path, change):
            failed = audit(workflow, report=SIGNIFICANCE if "significance" in path else SCORECARD)
        assert failed.returncode == 1 and path in failed.stdout, (path, failed.stdout[-2000:])


@pytest.mark.integration
def test_weights_changed_with_their_record_rehashed_still_fail(workflow):
    from peftir.provenance.records import sha256

    with ExitStack() as stack:
        stack.enter_context(tampered(workflow / WEIGHTS, TAMPERINGS["weights"][1]))
        new = sha256(workflow / WEIGHTS)
        stack.enter_context(tampered(workflow / RECORD[WEIGHTS], _json_edit(
            lambda d: d["outputs"]["weights"].update({WEIGHTS: new}))))
        done = audit(workflow, "--cell", CELL, "--skip-config")
    assert done.returncode == 1
    assert f"{WEIGHTS}: changed since {RUN} was made from it" in done.stdout


@pytest.mark.integration
def test_a_forged_run_with_every_hash_recomputed_is_caught_only_by_rescoring(workflow):
    """Scores shifted by 0.5 keep every ranking and metric; the forger then recomputes every hash and
    record digest up to the table. Hashes cannot tell; rescoring from the weights does."""
    from peftir.provenance.records import record_path, sha256

    def shift(data: bytes) -> bytes:
        return "".join(f"{q} Q0 {d} {r} {float(s) + 0.5!r} {t}\n"
                       for q, _, d, r, s, t in map(str.split, data.decode().splitlines())).encode()

    with ExitStack() as stack:
        def forge(path, edit):
            stack.enter_context(tampered(workflow / path, edit if path == RUN else _json_edit(edit)))

        forge(RUN, shift)
        run_digest = sha256(workflow / RUN)
        for output in (RUN, RUN.replace(".run", ".ir_metadata.yaml")):      # the run job's records
            forge(record_path(output), lambda d: d["outputs"]["run"].update({RUN: run_digest}))
        record_digest = sha256(workflow / record_path(RUN))
        forge(record_path(METRICS), lambda d: (d["inputs"]["run"].update({RUN: run_digest}),
                                               d["input_records"].update({RUN: record_digest})))
        metrics_record = sha256(workflow / record_path(METRICS))
        for kind in ("tex", "json", "csv"):                                   # the table job's records
            forge(record_path(f"results/tables/table5.{kind}"),
                  lambda d: d["input_records"].update({METRICS: metrics_record}))
        assert audit(workflow, "--cell", CELL, "--skip-config").returncode == 0     # every hash agrees
        done = audit(workflow, "--cell", CELL, "--skip-config", "--rescore", "2")
    assert done.returncode == 1
    assert f"AUDIT FAILED: cell (rescore): {RUN}: not what its weights give" in done.stdout
    rescored = audit(workflow, "--cell", CELL, "--skip-config", "--rescore", "2")
    assert rescored.returncode == 0 and re.search(r"rescored (\d+) of \1 runs made from trained weights on 2 "
                                                  r"queries each", rescored.stdout), rescored.stdout[-2000:]


@pytest.mark.integration
def test_the_audit_fails_when_a_config_value_behind_a_job_changed(workflow):
    config = workflow / "tiny.yaml"
    with tampered(config, lambda data: data + b"methods: {lora: {rank: 4}}\n"):
        done = audit(workflow)
    assert done.returncode == 1
    failure = re.search(r"AUDIT FAILED: cell \(config\): (\S+): (.*)", done.stdout)
    assert failure, done.stdout[-2000:]
    assert failure.group(1).startswith("results/models/vaswani/") and "lora" in failure.group(1)
    assert re.match(r"params\.method\.(parts\[\d\]\.)?settings\.rank: recorded 16, the config gives 4",
                    failure.group(2)), failure.group(2)


@pytest.mark.integration
def test_the_audit_fails_when_the_seeds_changed_or_the_config_file_moved(workflow):
    config = workflow / "tiny.yaml"
    with tampered(config, lambda data: data.replace(b"seeds: [1, 2]", b"seeds: [1]")):
        done = audit(workflow)
    assert done.returncode == 1
    assert "results/tables/table5.tex: its metrics are not those the current config asks for (experiment.seeds" \
        in done.stdout
    with tampered(config, None):
        done = audit(workflow)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{config}: a config file the table was built with is missing" in done.stdout


@pytest.mark.integration
def test_nothing_runs_git_or_starts_a_process_when_the_workflow_is_parsed(workflow, tmp_path):
    calls, scratch, bin_dir = tmp_path / "git-calls", tmp_path / "tmp", tmp_path / "bin"
    scratch.mkdir(), bin_dir.mkdir()
    git = bin_dir / "git"
    git.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec /usr/bin/git "$@"\n')
    git.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(scratch)}
    assert snakemake(workflow, *TARGETS, "-n", "--cores", "1", env=env).returncode == 0
    assert not calls.exists() and not list(scratch.iterdir())          # no git, no warm worker, no temp dir
    assert snakemake(workflow, *TARGETS, "--report", str(tmp_path / "r.html"), env=env).returncode == 0
    assert "rev-parse" in calls.read_text()                            # the landing page asks when rendered


@pytest.mark.integration
def test_the_report_shows_tables_figures_commit_config_and_versions(workflow):
    result = snakemake(workflow, *TARGETS, "--report", str(workflow / "report.html"))
    assert result.returncode == 0, result.stderr[-3000:]
    report = (workflow / "report.html").read_text()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert commit.strip() and commit.strip() in report
    assert f"<li>torch {torch.__version__}</li>" in report and "</tt> built at commit <tt" in report
    assert f"Config files: {workflow / 'config.yaml'}, {workflow / 'tiny.yaml'}" in report
    assert "max_doc_len" in report                           # the resolved config itself
    for name in ("table3.tex", "table4.tex", "table5.tex", "figure4.pdf"):
        assert name in report


# --- results that travel: a moved copy, a crate (before the tests below, which rerun jobs in place) ----------

CRATE = "results/crates/table5.crate.zip"
CONTEXT_1_1 = Path(__file__).resolve().parent / "data" / "ro-crate-1.1-context.jsonld"


@pytest.mark.integration
def test_no_record_names_where_the_checkout_or_the_results_are(workflow):
    texts = [path.read_text() for path in (workflow / "results/provenance").rglob("*.json")]
    assert texts and not [text for text in texts if str(workflow) in text or str(REPO) in text]


@pytest.mark.integration
def test_a_copy_of_the_results_in_another_clone_audits_and_a_changed_byte_is_named(workflow, tmp_path):
    """A reviewer's clone elsewhere, the results and the run's overlay copied in, the first clone gone."""
    import shutil

    other = clone(tmp_path / "elsewhere")
    shutil.copytree(workflow / "results", other / "results")
    shutil.copy2(workflow / "tiny.yaml", other / "tiny.yaml")
    away = workflow.with_name(workflow.name + "-moved-away")
    workflow.rename(away)
    try:
        done = audit(other)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        metrics = other / "results/metrics/vaswani/colbert/ss_lora/fold1-seed1.json"
        with tampered(metrics, lambda data: data.replace(b'"queries": ', b'"queries":  ', 1)):
            done = audit(other)
        assert done.returncode == 1
        assert "results/metrics/vaswani/colbert/ss_lora/fold1-seed1.json: " in done.stdout, done.stdout[-2000:]
    finally:
        away.rename(workflow)


def _offline_http_cache(path: Path) -> Path:
    """A requests-cache file that answers roc-validator's request for the RO-Crate 1.1 context offline."""
    import io

    import requests
    import urllib3
    from requests_cache import CachedSession

    url = "https://w3id.org/ro/crate/1.1/context"
    body = CONTEXT_1_1.read_bytes()
    response = requests.Response()
    response.status_code, response.url, response._content = 200, url, body
    response.headers["Content-Type"] = "application/ld+json"
    response.raw = urllib3.HTTPResponse(body=io.BytesIO(body), headers={"Content-Type": "application/ld+json"},
                                        status=200, preload_content=False, request_url=url)
    response.request = requests.Request("GET", url).prepare()
    CachedSession(cache_name=str(path), backend="sqlite").cache.save_response(response)
    return path


@pytest.mark.integration
def test_the_crate_is_a_valid_provenance_run_crate(workflow, tmp_path):
    from rocrate_validator import services
    from rocrate_validator.models import Severity

    settings = {"rocrate_uri": str(workflow / CRATE), "profile_identifier": "provenance-run-crate-0.5",
                "offline": True, "cache_path": str(_offline_http_cache(tmp_path / "http_cache.sqlite"))}
    # one validation down to RECOMMENDED runs the REQUIRED checks too (abort_on_first is off): no issue of theirs
    result = services.validate({**settings, "requirement_severity": "RECOMMENDED"})
    required = result.get_issues(Severity.REQUIRED)
    assert not required, [(issue.identifier, issue.message) for issue in required][:10]
    recommended = {issue.check.identifier for issue in result.get_issues()}
    assert recommended and not recommended & {"process-run-crate-0.5_8.6", "ro-crate-1.1_22.2"}, recommended


@pytest.mark.integration
def test_the_crate_holds_every_cell_s_chain_and_describes_the_weights_it_leaves_out(workflow, tmp_path):
    import zipfile

    from rocrate.rocrate import ROCrate

    with zipfile.ZipFile(workflow / CRATE) as archive:
        archive.extractall(tmp_path)
    crate = ROCrate(tmp_path)
    entities = {entity.id: entity for entity in crate.get_entities()}
    assert crate.mainEntity.id == "Snakefile" and crate.root_dataset["about"].id == "results/tables/table5.tex"
    authors = [author.id for author in crate.root_dataset["author"]]
    assert authors == ["https://orcid.org/0000-0002-1825-0097", "#author/tiny-test"]
    assert all(entities[author].type == "Person" for author in authors)
    actions = [e for e in entities.values() if e.type == "CreateAction" and e.id != "#run"]
    assert actions and all([agent.id for agent in action["agent"]] == authors for action in actions)
    made = {result.id for action in actions for result in (action["result"] if isinstance(action["result"], list)
                                                           else [action["result"]])}
    seen: set[str] = set()
    for cell in _table(workflow, "table5"):
        for run in cell["runs"] or []:
            chain = [run["metrics_file"]]
            while chain:
                path = chain.pop()
                if path in seen:
                    continue
                seen.add(path)
                record = json.loads((workflow / "results/provenance" / (path[len("results/"):] + ".json")).read_text())
                kind = artefact(path)[0]
                identifier = f"#left-out/{path}" if kind in ("weights", "first_stage_weights") else \
                    path + "/" * (workflow / path).is_dir()        # a Dataset's id ends with a slash
                assert identifier in entities and identifier in made, path
                assert entities[identifier]["sha256"] == record["outputs"][next(
                    name for name, files in record["outputs"].items() if path in files)][path]
                if kind in ("weights", "first_stage_weights"):
                    assert entities[identifier]["additionalType"] == "left-out"
                    assert not (tmp_path / path).exists()
                else:
                    assert (tmp_path / path).is_file() or (tmp_path / path).is_dir()
                chain += [p for files in record["inputs"].values() for p in files if p.startswith("results/")]
    tools = {action["instrument"].id for action in actions}
    assert tools <= {f"workflow/scripts/{rule}.py" for rule in ("download", "folds", "index", "bm25", "zero_shot",
                                                                "train", "rerank", "evaluate", "table")}


@pytest.mark.integration
def test_a_reviewer_audits_the_crate_in_a_clone_at_its_commit_and_a_changed_byte_is_named(workflow, tmp_path):
    import zipfile

    reviewer = clone(tmp_path / "reviewer")

    def peftir(*args: str, cwd: Path = reviewer) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "peftir.app.cli", *args], capture_output=True, text=True,
                              timeout=600, cwd=cwd)

    # a crate made from this checkout's uncommitted changes (a developer's run) is audited as unpublished
    dirty = uncommitted()

    def audit_crate(crate: Path, *args: str) -> subprocess.CompletedProcess:
        return peftir("audit", "--crate", str(crate), "--checkout", str(reviewer), *args,
                      *(["--unpublished"] if dirty else []))

    done = audit_crate(workflow / CRATE)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "not re-hashed: " in done.stdout and "(weights" in done.stdout
    # trust from outside the crate: its sha256 said, its workflow the reviewer's commit's, its overlay's keys named
    assert f"sha256 {hashlib.sha256((workflow / CRATE).read_bytes()).hexdigest()}" in done.stdout
    assert ("NOT FROM A PUBLISHED COMMIT" in done.stdout) == dirty
    assert dirty or re.search(r"workflow: (\d+) of \1 files equal to commit [0-9a-f]{40}'s", done.stdout), \
        done.stdout[:3000]
    assert "config overlays outside the commit: tiny.yaml" in done.stdout
    assert "  experiment.seeds: [1, 2] (the commit's: [1, 2, 3])" in done.stdout
    forged = tmp_path / "forged.zip"                 # a crate rewritten bottom-up: fewer seeds, hashes recomputed
    with zipfile.ZipFile(workflow / CRATE) as source, zipfile.ZipFile(forged, "w") as target:
        config = source.read("config.yaml").replace(b"  seeds: [1, 2, 3]", b"  seeds: [1, 2]", 1)
        metadata = json.loads(source.read("ro-crate-metadata.json"))
        for entity in metadata["@graph"]:
            if entity["@id"] == "config.yaml":
                entity["sha256"] = hashlib.sha256(config).hexdigest()
        for item in source.infolist():
            data = {"config.yaml": config, "ro-crate-metadata.json": json.dumps(metadata).encode()}.get(
                item.filename) or source.read(item.filename)
            target.writestr(item, data)
    done = audit_crate(forged)
    assert dirty or (done.returncode == 1 and "workflow file(s) differ from commit" in done.stdout and
                     "(e.g. config.yaml), though the crate says it was made from that commit: refused" in
                     done.stdout), done.stdout[-3000:]
    weighed = tmp_path / "weights.zip"
    made = peftir("crate", "results/tables/table5.tex", "-o", str(weighed), "--with-weights", "--checkout",
                  str(workflow), "--author", "Ada <x>", cwd=workflow)
    assert made.returncode == 1 and "author 'Ada <x>': give a name, or a name and its URL" in made.stdout
    # Figure 4's runs (LFT methods of ColBERT, no full fine-tuning): their weights are 10 MB, where Table 5's full
    # fine-tuning alone zips 315 MB; the same crate code and rescoring
    made = peftir("crate", "results/figures/figure4.pdf", "-o", str(weighed), "--with-weights", "--checkout",
                  str(workflow), cwd=workflow)
    assert made.returncode == 0 and " 0 left out" in made.stdout, made.stdout + made.stderr[-2000:]
    done = audit_crate(weighed, "--rescore", "1")
    assert done.returncode == 0 and re.search(r"rescored (\d+) of \1 runs made from trained weights on 1 queries "
                                              r"each", done.stdout), done.stdout[-2000:]
    assert "not re-hashed" not in done.stdout
    changed = tmp_path / "changed.zip"
    member = "results/runs/vaswani/colbert/ss_lora/fold1-seed1.run"
    with zipfile.ZipFile(workflow / CRATE) as source, zipfile.ZipFile(changed, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            target.writestr(item, data.replace(b" Q0 ", b" Q0  ", 1) if item.filename == member else data)
    done = audit_crate(changed)
    assert done.returncode == 1 and f"{member}: its bytes are not those the crate's metadata describes" in done.stdout
    subprocess.run(["git", "-C", str(reviewer), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet",
                    "--allow-empty", "-m", "a later commit"], check=True)
    done = audit_crate(workflow / CRATE)
    assert done.returncode == 2 and "the crate was made at commit" in done.stdout and "git checkout" in done.stdout


@pytest.mark.integration
def test_a_job_writes_the_same_bytes_with_and_without_the_warm_worker(workflow, tmp_path):
    """The demo's local run uses the warm worker (execution.warm_worker: auto); the same job run in its own
    process gives the same run file and the same record of it."""
    target = "results/runs/vaswani/colbert/lora/fold1-seed2.run"
    log = workflow / "results/logs/rerank/vaswani/colbert/lora/fold1-seed2.log"
    served = (workflow / target).read_bytes()
    assert "run by the warm worker" in log.read_text()
    record = json.loads((workflow / "results/provenance/runs/vaswani/colbert/lora/fold1-seed2.run.json").read_text())
    before = len(log.read_text())
    overlay = tmp_path / "cold.yaml"
    overlay.write_text("execution: {warm_worker: false}\n")
    result = snakemake(workflow, target, "--forcerun", "rerank", "--cores", "1", overlays=(overlay,))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "run by the warm worker" not in log.read_text()[before:]
    assert (workflow / target).read_bytes() == served
    again = json.loads((workflow / "results/provenance/runs/vaswani/colbert/lora/fold1-seed2.run.json").read_text())
    assert again["outputs"] == record["outputs"] and again["params"] == record["params"]


@pytest.mark.integration
def test_retraining_with_the_same_seed_gives_the_same_run_file(workflow):
    """Last of the module: it retrains, so the tables built before are out of date afterwards."""
    target = "results/runs/vaswani/colbert/ss_lora_then_prefix/fold2-seed1.run"
    before = (workflow / target).read_bytes()
    result = snakemake(workflow, target, "--forcerun", "train", "rerank", "--cores", "2", hash_seed="2")  # both stages
    assert result.returncode == 0, result.stderr[-3000:]
    assert "localrule train" in result.stdout + result.stderr
    assert (workflow / target).read_bytes() == before

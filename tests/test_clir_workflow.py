"""The modular CLIR system through Snakemake on a tiny configuration: Debian packages → corpora, collection →
backbone → language and ranking modules → composed rerankers → Table 1 and Figure 2, audited. The tiny tables
rerank BM25 (the dense pre-ranker embeds every document with all 12 layers of e5; tests/test_modular_clir.py
checks it)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from peftir.clir import debian
from peftir.provenance.records import read_record

from checkout import clone, uncommitted
from seam import audited, check_the_seam
from test_workflow import snakemake, tampered

TINY_CLIR = """
experiment: {datasets: [vaswani]}
modular_clir:
  backbone: {layers: 1, mlm_head: {steps: 4, batch_size: 4, block_size: 32, lr: 1.0e-3, seed: 1}}
  corpus: {max_words: 20000}
  collection: {test_queries: 12, valid_queries: 4}
  language_modules:
    adapter: {steps: 3, batch_size: 2, block_size: 32, heldout_blocks: 4}
    sftm: {phase_steps: [2, 2], batch_size: 2, block_size: 32, heldout_blocks: 4}
  ranking:
    train: {batch_size: 4, max_len: 48, warmup: 1}
    adapter: {steps: 3}
    sftm: {phase_steps: [2, 2]}
    full: {steps: 3}
  prerank: {dense: {depth: 8}, bm25: {depth: 8}}
  rerank: {depth: 4, batch_size: 4, max_len: 48}
  tables:
    table1: {prerank: bm25, pairs: [en-de, de-es], systems: [monobert, ra_doc, ra_split, ra_nola, rm_doc, rm_both]}
  figures:
    figure2: {prerank: bm25, pairs: [en-de], reduction_factors: [8, 32]}
"""
TABLE, FIGURE = "results/tables/modular-clir/table1.tex", "results/figures/modular-clir/figure2.pdf"


@pytest.fixture(scope="module")
def clir_workflow(irds_home, tmp_path_factory):
    """Table 1 and Figure 2 of the tiny configuration, built in a clone as a user builds them."""
    workdir = clone(tmp_path_factory.mktemp("clir"))
    (workdir / "tiny.yaml").write_text(TINY_CLIR)
    try:
        debian.fetch_package("https://deb.debian.org/debian/pool/main/d/debian-reference/"
                             "debian-reference-en_2.100_all.deb",
                             "9f31d3a17df505de09689ca255512ea58c1fc47c59bb1b0c7bf1c23362e9743f",
                             tmp_path_factory.mktemp("network") / "probe.deb")   # the pipeline fetches its own
    except debian.PackageFetchError as problem:
        if "sha256" in str(problem):
            raise
        pytest.skip(f"no network to deb.debian.org: {problem}")
    result = snakemake(workdir, TABLE, FIGURE, "--cores", "2", env=audited(workdir))
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir


@pytest.mark.integration
def test_every_module_and_reranker_job_runs_its_models_through_the_execution_seam(clir_workflow):
    check_the_seam(clir_workflow, {"mlm_head", "mlm_language_adapter", "ranking_adapter", "rerank_clir"})


def _cells(workdir: Path) -> dict[str, dict]:
    return {cell["cell"]: cell for cell in json.loads((workdir / TABLE).with_suffix(".json").read_text())}


def _audit(workdir: Path, report: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "peftir.app.cli", "audit", report, "--directory", str(workdir),
                           "--checkout", str(workdir), *args], capture_output=True, text=True, timeout=600)


@pytest.mark.integration
def test_table1_cells_are_the_runs_map_and_the_pairs_average(clir_workflow):
    cells = _cells(clir_workflow)
    for system in ("prerank", "monobert", "ra_doc", "ra_split", "ra_nola", "rm_doc", "rm_both"):
        pairs = [cells[f"{system if system != 'prerank' else 'bm25'}:{pair}:AP"] for pair in ("en-de", "de-es")]
        for cell in pairs:
            metrics = [json.loads((clir_workflow / run["metrics_file"]).read_text()) for run in cell["runs"]]
            assert cell["value"] == pytest.approx(sum(m["mean"]["AP"] for m in metrics) / len(metrics))
        average = cells[f"{system if system != 'prerank' else 'bm25'}:avg:AP"]
        assert average["value"] == pytest.approx((pairs[0]["value"] + pairs[1]["value"]) / 2)


@pytest.mark.integration
def test_each_composition_reads_its_own_modules(clir_workflow, monkeypatch):
    """The rerank jobs' recorded inputs: the query and document languages' modules for Split, the document's for
    Doc, none for the RA alone and monoBERT; adapters for RA rows, masks for RM rows."""
    monkeypatch.chdir(clir_workflow)      # records are found from the working directory

    def inputs(system: str, ranking: str) -> dict:
        return read_record(f"results/modular-clir/runs/de-es/bm25/{system}/{ranking}-seed1.run")["inputs"]
    models = "results/modular-clir/models/language"
    assert sorted(inputs("ra_split", "adapter-rf16")["language_modules"]) == [f"{models}/adapter/de",
                                                                             f"{models}/adapter/es"]
    assert sorted(inputs("ra_doc", "adapter-rf16")["language_modules"]) == [f"{models}/adapter/de",
                                                                           f"{models}/adapter/es"][1:]
    assert sorted(inputs("rm_both", "sftm-rf2")["language_modules"]) == [f"{models}/sftm/de", f"{models}/sftm/es"]
    assert not inputs("ra_nola", "adapter-rf16").get("language_modules")
    assert not inputs("monobert", "full").get("language_modules")


@pytest.mark.integration
def test_language_modules_lower_the_heldout_mlm_loss(clir_workflow):
    for kind in ("adapter", "sftm"):
        summary = json.loads((clir_workflow / f"results/modular-clir/models/language/{kind}/de.json").read_text())
        assert summary["heldout_after"]["loss"] < summary["heldout_before"]["loss"]


@pytest.mark.integration
def test_the_audit_passes_and_fails_on_an_edited_run(clir_workflow):
    for report in (TABLE, FIGURE):
        done = _audit(clir_workflow, report)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "audit passed" in done.stdout
        # the rankers' training collection re-exported; the one a CLIR job built from its packages named as not
        assert re.search(r"re-exported from ir_datasets and equal: 1 of 2 collection\(s\); not re-exported: "
                         r"results/modular-clir/collection/\w+/queries\.tsv, .* \(made by rule clir_collection",
                         done.stdout), done.stdout[-3000:]
    run = clir_workflow / "results/modular-clir/runs/en-de/bm25/ra_doc/adapter-rf16-seed1.run"
    with tampered(run, lambda data: re.sub(rb"^(\S+ Q0 \S+ 1 )", rb"\g<1>9", data, count=1)):
        failed = _audit(clir_workflow, TABLE)
    assert failed.returncode == 1 and "adapter-rf16-seed1.run" in failed.stdout


@pytest.mark.integration
def test_rescoring_re_derives_every_composed_rerankers_run_and_catches_a_forged_score(clir_workflow, monkeypatch,
                                                                                     tmp_path):
    """With --rescore every composed system's run of Table 1 is reranked again from its stored modules, composed
    as the job composed them; a changed score is caught."""
    from peftir.app.rescore import rescore
    from peftir.data import trec
    from peftir.provenance.records import read_record

    done = _audit(clir_workflow, TABLE, "--rescore", "1")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    counted = re.search(r"rescored (\d+) of (\d+) runs made from trained weights", done.stdout)
    assert counted and counted[1] == counted[2] and int(counted[1]) > 0, done.stdout[-2000:]
    monkeypatch.chdir(clir_workflow)
    run = "results/modular-clir/runs/en-de/bm25/ra_doc/adapter-rf16-seed1.run"
    stored = trec.read_run(run)
    forged = tmp_path / "forged.run"
    trec.write_run(forged, {qid: {doc: score + (0.5 if rank == 0 else 0.0) for rank, (doc, score) in
                                  enumerate(sorted(docs.items(), key=lambda item: -item[1]))}
                            for qid, docs in stored.items()}, "forged")
    why, _, _ = rescore(str(forged), read_record(run), 1)
    assert why and "the run file says" in why, why


@pytest.mark.integration
def test_changing_the_adapters_learning_rate_reruns_only_what_uses_ranking_adapters(clir_workflow, tmp_path):
    overlay = tmp_path / "lr.yaml"
    overlay.write_text("modular_clir: {ranking: {adapter: {lr: 2.0e-3}}}\n")
    result = snakemake(clir_workflow, TABLE, FIGURE, "-n", "--cores", "1", overlays=(overlay,))
    assert result.returncode == 0, result.stderr[-3000:]
    planned = re.findall(r" *(?:local)?rule (\w+):\n(?: +.*\n)*? +wildcards: (.*)", result.stdout)  # groups indent
    trained = {wildcards for rule, wildcards in planned if rule == "ranking_adapter"}
    assert trained == {"ranking=adapter-rf16, seed=1", "ranking=adapter-rf8, seed=1", "ranking=adapter-rf32, seed=1"}
    reranked = {wildcards for rule, wildcards in planned if rule == "rerank_clir"}
    assert reranked and all("ranking=adapter" in w for w in reranked)
    assert not {rule for rule, _ in planned} & {"mlm_language_adapter", "mlm_head", "multilingual_backbone",
                                                "language_corpus", "clir_collection", "prerank_clir"}


@pytest.mark.integration
def test_a_reviewer_audits_table1_from_its_crate_which_describes_the_modules_it_leaves_out(clir_workflow,
                                                                                         tmp_path):
    crate = "results/crates/modular-clir/table1.crate.zip"
    result = snakemake(clir_workflow, crate, "--cores", "1")
    assert result.returncode == 0, result.stderr[-3000:]
    reviewer = clone(tmp_path / "reviewer")
    dirty = uncommitted()                                     # a developer's uncommitted run
    done = subprocess.run([sys.executable, "-m", "peftir.app.cli", "audit", "--crate", str(clir_workflow / crate),
                           "--checkout", str(reviewer), *(["--unpublished"] if dirty else [])], capture_output=True,
                          text=True, timeout=600, cwd=reviewer)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    skipped = re.search(r"not re-hashed: \d+ files the crate leaves out by design \(([^)]*)\)", done.stdout)
    assert skipped and {"language_module", "ranking_module", "clir_mlm_backbone"} <= set(skipped[1].split(", "))

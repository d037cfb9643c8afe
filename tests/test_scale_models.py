"""Every paper configuration run end to end as a scale model (``scale_model``): the real rules, not a dry run.

Each configuration keeps its datasets, method kinds, tables, lengths and code paths; its collections are tiny
fixtures in their real formats (``irds_fixtures`` writes what ir_datasets reads; CLEF, Wikipedia text and
MarginMSE's teacher are files), its backbones tiny random models of the same families, its steps and batches
divided. Where a configuration repeats one code path over many rows, columns, language pairs, rankers or factors,
its shape (``scale_shapes/``, an overlay after the sizes, each file saying what its cuts still cover) leaves the
repeats out; the rules it runs are checked to be every rule the whole configuration plans, listed here, and every
table and figure is built. Every table of the paper is built and audited, and every job that runs a
model ran it through the execution seam. They are what catches a crash on the paper path (a RoBERTa tokenizer, a
DistilBERT without ``token_type_ids``, a pre-split collection with a missing split, a 128-long prompt) before a
user's cluster does. Slow: ``make scale-test`` (``.ci/run`` runs it after ``make test``), two at a time.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from peftir.provenance.records import sha256
from peftir.retrieval import anserini

import scale_model
from checkout import clone
from irds_fixtures import SUPPORTED, write_fixtures
from seam import audited, check_the_seam

REPO = Path(__file__).resolve().parents[1]
SHARED_IRDS = Path(os.environ.get("PEFTIR_IRDS_CACHE", REPO.parent / "shared" / "irds"))
SHAPES = Path("tests") / "scale_shapes"          # in the clone a scale model runs in
_CLIR_RULES = {"download", "folds", "index", "bm25", "clir_collection", "language_corpus", "clir_index",
               "clir_dense_index", "mlm_language_adapter", "ranking_adapter", "prerank_clir", "evaluate_clir_prerank",
               "rerank_clir", "evaluate_clir", "clir_table", "clir_figure"}
# Each configuration: its files and targets; the job kinds that must run a placed model; and every rule the whole
# configuration plans for its targets, which its scale model must run (a rule a configuration gains is added here,
# and its shape then runs it or the check says which not). Its shape is scale_shapes/<name>.yaml where there is one.
PAPERS = {
    "semi-siamese": {"files": ["config/paper.yaml"], "targets": ["all_tables"],
                     "kinds": {"train", "rerank"},
                     "rules": {"download", "folds", "index", "bm25", "triples", "evaluate_reference", "train",
                               "rerank", "evaluate", "table", "figure", "scorecard", "significance", "report_page",
                               "all_tables"}},
    "splade-adapters": {"files": ["config/paper-splade-adapters.yaml"], "targets": ["all_splade_tables"],
                        "kinds": {"train_splade", "splade_index", "splade_search", "train_splade_reranker",
                                  "splade_rerank"},
                        "rules": {"download", "folds", "index", "bm25", "splade_teacher", "train_splade",
                                  "train_splade_reranker", "splade_index", "splade_search", "evaluate_splade",
                                  "splade_rerank", "evaluate_splade_reranked", "splade_table", "all_splade_tables"}},
    "modular-clir": {"files": ["config/paper-modular-clir.yaml"], "targets": ["clir"],
                     "kinds": {"mlm_language_adapter", "ranking_adapter", "rerank_clir", "clir_dense_index",
                               "prerank_clir"},
                     "rules": _CLIR_RULES},
    "modular-clir-neuclir": {"files": ["config/paper-modular-clir.yaml", "config/paper-modular-clir-neuclir.yaml"],
                             "targets": ["clir"],
                             "kinds": {"mlm_language_adapter", "ranking_adapter", "rerank_clir"},
                             "rules": _CLIR_RULES},
    "dptdr": {"files": ["config/paper-dptdr.yaml"], "targets": ["all_dense_tables"],
              "kinds": {"pretrain", "train_retriever", "dense_index", "dense_search", "mine_negatives", "train"},
              "rules": {"download", "folds", "index", "bm25", "pretrain", "train", "mine_negatives",
                        "train_retriever", "dense_index", "dense_search", "evaluate_dense", "evaluate_dense_bm25",
                        "dense_index_untrained", "dense_search_untrained", "evaluate_dense_untrained",
                        "dense_geometry_untrained", "dense_table", "all_dense_tables"}},
    "condenser": {"files": ["config/paper-condenser.yaml"], "targets": ["all_dense_tables"],
                  "kinds": {"pretrain", "train_retriever", "dense_index", "dense_search"},
                  "rules": {"download", "folds", "index", "bm25", "export_answers", "pretrain", "train_retriever",
                            "mine_negatives", "dense_index", "dense_search", "dense_search_target", "evaluate_dense",
                            "evaluate_dense_target", "evaluate_dense_bm25", "answer_judgments",
                            "answer_judgments_bm25", "attention_entropy", "attention_entropy_pretrained",
                            "dense_figure", "dense_table", "all_dense_tables"}},
}


def irds_ids(config: dict) -> set[str]:
    """Every ir_datasets id the configuration names (collections, splits, folds, topics, CLIR collections)."""
    found = set()
    for spec in config["datasets"].values():
        found |= {spec["irds"], *(spec.get("splits") or {}).values(), *spec.get("topics", [])}
        found |= set((spec.get("folds") or {}).get("irds", []))
    clir = config.get("modular_clir") or {}
    for spec in (clir.get("collection", {}).get("languages") or {}).values():
        if isinstance(spec, dict) and spec.get("irds"):
            found.add(spec["irds"])
    return found - {"vaswani"}


def targets(config: dict, names: list[str]) -> list[str]:
    """Snakemake targets: rule names, or ``clir`` for every table and figure of the CLIR paper."""
    if names != ["clir"]:
        return names
    clir = config["modular_clir"]
    return ([f"results/tables/modular-clir/{name}.tex" for name in clir["tables"]]
            + [f"results/figures/modular-clir/{name}.pdf" for name in clir.get("figures") or {}])


def local_files(config: dict, workdir: Path, home: Path) -> dict:
    """The files a configuration names beside ir_datasets (CLEF, Wikipedia text, the MarginMSE teacher), written
    where it names them; the overlay entries that point at them."""
    extra: dict = {}
    clir = config.get("modular_clir")
    if clir:
        for language, spec in clir["languages"].items():
            for part in spec["corpus"]:
                if part["kind"] == "text":
                    scale_model.write_text(workdir / part["path"], language)
        if clir["collection"]["source"] == "files":
            scale_model.write_clir_collection(workdir / clir["collection"]["path"],
                                              sorted(clir["collection"].get("languages") or clir["languages"]))
    sparse = config.get("sparse_retrieval")
    if sparse and sparse.get("teacher"):
        queries = _training_queries(home, config["datasets"][sparse["dataset"]]["splits"]["train"])
        path = scale_model.write_teacher(workdir / "scale" / "teacher.pkl.gz", queries)
        extra["sparse_retrieval"] = {"teacher": {"scores": str(path), "sha256": sha256(path)}}   # read, checked
    return extra


def _training_queries(home: Path, irds: str) -> dict[str, list[str]]:
    """Each training query of the fixture with its judged documents and a few others (what the teacher scored)."""
    code = ("import json, sys, ir_datasets; d = ir_datasets.load(sys.argv[1]); docs = [x.doc_id for x in "
            "d.docs_iter()][:20]; q = {}\nfor r in d.qrels_iter(): q.setdefault(r.query_id, set()).add(r.doc_id)\n"
            "print(json.dumps({k: sorted(v | set(docs[:5])) for k, v in q.items()}))")
    done = subprocess.run([sys.executable, "-c", code, irds], capture_output=True, text=True, check=True,
                          env={**os.environ, "IR_DATASETS_HOME": str(home)}, timeout=300)
    return json.loads(done.stdout)


def job_counts(output: str) -> dict[str, int]:
    """Jobs per rule of the first "Job stats" table Snakemake printed (a run's plan, or a dry run's)."""
    assert "Job stats:" in output, f"Snakemake printed no plan:\n{output[-3000:]}"
    table = output.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    rows = [line.split() for line in table.splitlines()]
    return {row[0]: int(row[1]) for row in rows if len(row) == 2 and row[1].isdigit() and row[0] != "total"}


def run_scale_model(paper: str, workdir: Path, shaped: bool = True) -> tuple[dict, dict[str, int],
                                                                           subprocess.CompletedProcess, float]:
    """The paper configuration ``paper`` run as a scale model in ``workdir`` (a clone), in its shape unless
    ``shaped`` is false: its configuration, the jobs per rule the whole configuration plans (its shape left out),
    Snakemake's result and its wall time."""
    spec = PAPERS[paper]
    files = [REPO / "config.yaml", *(REPO / name for name in spec["files"])]
    config = scale_model.merged(*files)
    home = workdir / "irds"
    if (SHARED_IRDS / "vaswani").is_dir():
        shutil.copytree(SHARED_IRDS / "vaswani", home / "vaswani")
    write_fixtures(home, sorted(irds_ids(config)))
    overlay = scale_model.overlay(config, workdir / "scale")
    scale_model._update(overlay, local_files(config, workdir, home))
    (workdir / "scale.yaml").write_text(yaml.safe_dump(overlay, sort_keys=False))
    configfiles = [workdir / "config.yaml", *(workdir / name for name in spec["files"]), workdir / "scale.yaml"]
    shape = [path for path in [workdir / SHAPES / f"{paper}.yaml"] if shaped and path.is_file()]
    # One thread a job: a paper configuration asks for 4-16 threads a job, which on two cores runs one tiny job at
    # a time with one core spinning (measured on the Semi-Siamese configuration: 15.7 min, 9.1 min with one thread).
    # Threads are a resource request: every rule and code path runs the same with one (floating-point sums may
    # round differently, as they do between machines).
    def snakemake(*args: str, configs: list[Path]) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "snakemake", *args, "--cores", "2", "--max-threads", "1", "--scheduler",
                   "greedy", "--snakefile", str(workdir / "Snakefile"), "--directory", str(workdir), "--configfile",
                   *map(str, configs), "--", *targets(config, spec["targets"])]
        return subprocess.run(command, capture_output=True, text=True, timeout=3000,
                              env={**os.environ, "IR_DATASETS_HOME": str(home), **audited(workdir)})

    whole = snakemake("-n", "--forceall", "--quiet", "rules", configs=configfiles)
    assert whole.returncode == 0, whole.stderr[-3000:]
    started = time.monotonic()
    result = snakemake(configs=configfiles + shape)
    return config, job_counts(whole.stdout), result, time.monotonic() - started


def built_tables(workdir: Path) -> list[Path]:
    return sorted((workdir / "results" / "tables").rglob("*.tex"))


@pytest.mark.scale
@pytest.mark.parametrize("paper", PAPERS)
def test_a_paper_configuration_runs_end_to_end_as_a_scale_model(paper, tmp_path_factory):
    workdir = clone(tmp_path_factory.mktemp(paper))
    config, whole, result, seconds = run_scale_model(paper, workdir)
    assert result.returncode == 0, result.stderr[-6000:]
    jobs = sum(1 for line in result.stderr.splitlines() if line.startswith("Finished jobid") or
               line.startswith("Finished job "))
    ran = job_counts(result.stderr)
    tables = built_tables(workdir)
    print(f"{paper}: {jobs} jobs in {seconds:.0f} s (the whole configuration plans {sum(whole.values())}), "
          f"{len(tables)} tables; jobs per rule run / planned whole: "
          + ", ".join(f"{rule} {ran.get(rule, 0)}/{count}" for rule, count in whole.items()))
    listed = PAPERS[paper]["rules"]
    assert set(whole) == listed, f"the configuration's rules changed (PAPERS): {sorted(set(whole) ^ listed)}"
    assert set(ran) == set(whole), f"rules its shape leaves out: {sorted(set(whole) - set(ran))}"
    reports = {rule for rule in whole if any(kind in rule for kind in ("table", "figure", "scorecard", "significance",
                                                                        "report_page"))}
    assert {rule: ran[rule] for rule in reports} == {rule: whole[rule] for rule in reports}   # every table and figure
    assert jobs == sum(ran.values())
    assert tables
    for table in tables:
        audit = subprocess.run([sys.executable, "-m", "peftir.app.cli", "audit", str(table.relative_to(workdir)),
                                "--directory", str(workdir), "--checkout", str(workdir)],
                               capture_output=True, text=True, timeout=900)
        assert audit.returncode == 0, f"{table}: {audit.stdout[-3000:]}{audit.stderr[-2000:]}"
    check_the_seam(workdir, PAPERS[paper]["kinds"])
    check_the_empty_documents(workdir)


def check_the_empty_documents(workdir: Path) -> None:
    """Every fixture collection holds a document with no text (a record without TEXT, a page of markup only, an empty
    row): its export counted it and every BM25 index of it reconciled Anserini's counters with that count."""
    exported = {info.parent.name: json.loads(info.read_text())
                for info in (workdir / "results" / "data").glob("*/info.json")}
    fixtures = {name: info for name, info in exported.items() if info["irds"] in SUPPORTED}
    assert fixtures and all(info["empty_docs"] >= 1 for info in fixtures.values()), exported
    for name, info in fixtures.items():
        index = workdir / "results" / "index" / name / anserini.INDEX_INFO
        if index.is_file():
            counted = json.loads(index.read_text())["anserini"]
            assert (counted["empty"], counted["indexed"] + counted["empty"]) == (info["empty_docs"], info["docs"])

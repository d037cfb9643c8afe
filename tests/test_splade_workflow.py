"""The SPLADE system through Snakemake on a tiny configuration: the embedded MiniLM's MLM head fitted → an adapter
and a bi-adapter SPLADE trained → the whole vaswani collection in Anserini impact indexes, every query searched →
Table 1 with BM25 and R-FLOPS; two cross-encoders reranking the adapter SPLADE's top documents → Table 7; both
audited; a changed λ reruns only what it changes."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from peftir.data import trec

from checkout import clone
from seam import audited, check_the_seam
from test_workflow import snakemake, tampered

TINY_SPARSE = """
pretraining:
  backbone: {mlm_head: {steps: 2, batch_size: 4, block_size: 32}}
sparse_retrieval:
  layers: 1
  methods: {adapter: {reduction_factor: 64}, bi_adapter: {reduction_factor: 64}}
  # documents cut at 4 pieces: each of the 11,429 costs a pass through the 30,522-wide MLM head per piece (padding
  # within a batch: the queries here, tests/test_splade.py)
  train: {q_max_len: 16, d_max_len: 4, batch_size: 4, steps: 2, validation_queries: 6, validation_depth: 10,
          validate_every: 1, warmup_steps: 1, regularisation: {warmup_steps: 1}}
  index: {depth: 100, batch_size: 128}
  metrics: [RR@10, R@100, nDCG@10]         # cutoffs within the index's search depth
  rerankers:
    train: {max_len: 32, batch_size: 4, steps: 2, validation_queries: 6, validation_depth: 10, validate_every: 1,
            warmup_steps: 1}
    rerank: {depth: 20}
  tables:
    table1:
      baseline: Adapter
      columns: [{label: MRR@10, metric: RR@10}, {label: R@100, metric: R@100}, {label: nDCG@10, metric: nDCG@10},
                {label: R-FLOPS, metric: R-FLOPS}]
      rows:
        - {label: BM25, reference: bm25}
        - {label: Adapter, backbone: minilm, splade: adapter}
        - {label: Bi-adapter, backbone: minilm, splade: bi_adapter}
"""
TABLE = "results/tables/splade-adapters/table1.tex"
RERANKERS = "results/tables/splade-adapters/table7.tex"


@pytest.fixture(scope="module")
def splade_workflow(irds_home, tmp_path_factory):
    workdir = clone(tmp_path_factory.mktemp("splade"))
    (workdir / "tiny.yaml").write_text(TINY_SPARSE)
    result = snakemake(workdir, TABLE, RERANKERS, "--cores", "2", env=audited(workdir))
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir


@pytest.mark.integration
def test_every_splade_and_reranker_job_runs_its_models_through_the_execution_seam(splade_workflow):
    check_the_seam(splade_workflow, {"pretraining_mlm_head", "train_splade", "splade_index", "splade_search",
                                     "train_splade_reranker", "splade_rerank"})


def _audit(workdir: Path, table: str = TABLE, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "peftir.app.cli", "audit", table, "--directory", str(workdir),
                           "--checkout", str(workdir), *args], capture_output=True, text=True, timeout=600)


@pytest.mark.integration
def test_each_retriever_searched_the_whole_collection_in_its_impact_index(splade_workflow):
    key = "vaswani/vaswani/minilm/bi_adapter/fold1-seed1"
    run = (splade_workflow / f"results/sparse/runs/{key}.run").read_text().splitlines()
    assert len({line.split()[0] for line in run}) > 80 and all(int(line.split()[3]) <= 100 for line in run)
    assert (splade_workflow / f"results/sparse/index/{key}/lucene").is_dir()
    flops = json.loads((splade_workflow / f"results/sparse/runs/{key}.flops.json").read_text())
    assert len(flops["per_query"]) == 93 and flops["r_flops"] > 0
    metadata = (splade_workflow / f"results/sparse/runs/{key}.ir_metadata.yaml").read_text()
    assert "impact index" in metadata and "documents: 11429" in metadata


@pytest.mark.integration
def test_table1_prints_r_flops_and_trainable_shares_and_audits(splade_workflow):
    cells = json.loads((splade_workflow / "results/tables/splade-adapters/table1.json").read_text())
    by_cell = {cell["cell"]: cell for cell in cells}
    assert by_cell["BM25 | R-FLOPS"]["printed"] == "-" and float(by_cell["Adapter | R-FLOPS"]["printed"]) > 0
    assert by_cell["Bi-adapter | MRR@10"]["ttest"]["against"] == "Adapter | MRR@10"
    assert re.fullmatch(r"[\d.]+[KM] \(\d+\.\d\d%\)", by_cell["Adapter | MRR@10"]["printed_parameters"])
    done = _audit(splade_workflow)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "audit passed: 12 cell(s)" in done.stdout
    flops = splade_workflow / "results/sparse/runs/vaswani/vaswani/minilm/adapter/fold1-seed1.flops.json"
    with tampered(flops, lambda data: data.replace(b'"r_flops": ', b'"r_flops": 1', 1)):
        failed = _audit(splade_workflow)
    assert failed.returncode == 1 and "adapter/fold1-seed1.flops.json" in failed.stdout


@pytest.mark.integration
def test_rerankers_rerank_the_first_stages_top_documents_and_table7_audits(splade_workflow):
    key = "vaswani/vaswani/{}/fold1-seed1"
    first = trec.read_run(splade_workflow / "results/sparse/runs" / f"{key.format('minilm/adapter')}.run", depth=20)
    reranked = trec.read_run(splade_workflow / "results/sparse/rerankers/runs" / f"{key.format('minilm_adapter')}.run")
    assert len(reranked) == 19 and all(set(docs) == set(first[qid]) for qid, docs in reranked.items())  # fold 1's test
    summary = json.loads((splade_workflow / "results/sparse/rerankers/models/vaswani/minilm_adapter/fold1-seed1.json")
                         .read_text())
    assert 0 < summary["percent_trainable"] < 5 and len(summary["validation"]) == 2
    done = _audit(splade_workflow, RERANKERS)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "audit passed: 6 cell(s)" in done.stdout


@pytest.mark.integration
def test_rescoring_re_derives_every_splade_and_reranker_run_and_catches_a_forged_score(splade_workflow, monkeypatch,
                                                                                      tmp_path):
    """Table 7's chain holds rerankers' runs and the SPLADE runs they rerank: with --rescore every one is
    re-derived from its weights (the retrievers' queries searched again in the impact index with Anserini and their
    top documents quantised again; the rerankers' candidates scored again); a changed score is caught."""
    from peftir.app.rescore import rescore
    from peftir.provenance.records import read_record

    done = _audit(splade_workflow, RERANKERS, "--rescore", "1")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    counted = re.search(r"rescored (\d+) of (\d+) runs made from trained weights", done.stdout)
    assert counted and counted[1] == counted[2] and int(counted[1]) >= 3, done.stdout[-2000:]
    monkeypatch.chdir(splade_workflow)
    for run in ("results/sparse/runs/vaswani/vaswani/minilm/adapter/fold1-seed1.run",
                "results/sparse/rerankers/runs/vaswani/vaswani/minilm_adapter/fold1-seed1.run"):
        record = read_record(run)
        stored = trec.read_run(run)
        forged = tmp_path / "forged.run"
        trec.write_run(forged, {qid: {doc: score + (7.0 if rank == 0 else 0.0) for rank, (doc, score) in
                                      enumerate(sorted(docs.items(), key=lambda item: -item[1]))}
                                for qid, docs in stored.items()}, "forged")
        why, _, _ = rescore(str(forged), record, 2)
        assert why and "the run file says" in why, (run, why)


@pytest.mark.integration
def test_a_changed_document_regulariser_reruns_the_retrievers_not_bm25_the_head_or_the_rerankers(splade_workflow,
                                                                                                 tmp_path):
    overlay = tmp_path / "lambda.yaml"
    overlay.write_text("sparse_retrieval: {train: {regularisation: {lambda_d: 1.0e-3}}}\n")
    result = snakemake(splade_workflow, TABLE, RERANKERS, "-n", "--cores", "1", overlays=(overlay,))
    assert result.returncode == 0, result.stderr[-3000:]
    planned = re.findall(r"(?:local)?rule (\w+):", result.stdout)
    assert planned.count("train_splade") == 2 and planned.count("splade_index") == 2
    assert planned.count("splade_rerank") == 2           # the first stage they rerank changed, not the rerankers
    assert not set(planned) & {"pretraining_mlm_head", "bm25", "evaluate_splade_bm25", "download",
                               "train_splade_reranker"}

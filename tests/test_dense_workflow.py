"""The dense retrieval system through Snakemake on a tiny configuration: an MLM head for the embedded MiniLM →
a RIP run → retrievers (full fine-tuning; deep prompts on BM25 negatives, then on UNM's mined ones) → the whole
vaswani corpus indexed with faiss and searched → a table, audited; the pretrained backbone reused by a ranker."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from peftir.provenance.records import read_record

from checkout import clone
from seam import audited, check_the_seam
from test_workflow import snakemake, tampered

TINY_DENSE = """
pretraining:
  backbone: {mlm_head: {steps: 2, batch_size: 4, block_size: 32}}
  settings: {max_len: 32, batch_size: 4, chunk: 4, steps: 2}
dense_retrieval:
  layers: 1
  methods: {dpt: {length: 4}}
  # passages cut at 12 pieces (11,429 encoded per retriever), queries at 16: each length where it belongs
  train: {q_max_len: 16, p_max_len: 12, passages: 2, batch_size: 4, steps: 2}
  mining: {depth: 20, sample: 3}
  search: {depth: 100, batch_size: 256}
  metrics: [RR@10, R@100, nDCG@10]         # cutoffs within the search depth
  tables:
    dptdr:
      tiny:
        caption: A tiny table.
        baseline: FT
        columns: [{label: MRR@10, metric: RR@10}, {label: R@100, metric: R@100}]
        rows:
          - {label: BM25, reference: bm25}
          - {label: MiniLM untrained, reference: untrained, backbone: minilm}
          - {label: FT, backbone: minilm, retriever: ft, negatives: bm25}
          - {label: FT + RIP, backbone: rip, retriever: ft, negatives: bm25}
          - {label: DPT + UNM, backbone: minilm, retriever: dpt, negatives: mined}
          - {label: Paper, reported: {source: "a paper", values: [0.5, null]}}
      geometry:
        caption: Alignment and uniformity.
        columns: [{label: Alignment, metric: alignment}, {label: Uniformity, metric: uniformity}]
        rows:
          - {label: MiniLM untrained, reference: untrained, backbone: minilm}
          - {label: FT, backbone: minilm, retriever: ft, negatives: bm25}
  figures:
    condenser:
      figure2: {passages: 6, panels: [{label: RIP, backbone: rip}, {label: MiniLM, backbone: minilm}]}
"""
TABLE = "results/tables/dptdr/tiny.tex"
FIGURE = "results/figures/condenser/figure2.pdf"      # Condenser Figure 2: [CLS] attention entropy per layer
GEOMETRY = "results/tables/dptdr/geometry.tex"       # DPTDR Table 8's columns, of a backbone untrained and trained


@pytest.fixture(scope="module")
def dense_workflow(irds_home, tmp_path_factory):
    workdir = clone(tmp_path_factory.mktemp("dense"))
    (workdir / "tiny.yaml").write_text(TINY_DENSE)
    result = snakemake(workdir, TABLE, FIGURE, GEOMETRY, "--cores", "2", env=audited(workdir))
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir


@pytest.mark.integration
def test_every_pretraining_and_retriever_job_runs_its_models_through_the_execution_seam(dense_workflow):
    check_the_seam(dense_workflow, {"pretraining_mlm_head", "pretrain", "train_retriever", "dense_index",
                                    "dense_search", "attention_entropy", "attention_entropy_pretrained",
                                    "dense_geometry", "dense_geometry_untrained"})


def _audit(workdir: Path, *args: str, report: str = TABLE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "peftir.app.cli", "audit", report, "--directory", str(workdir),
                           "--checkout", str(workdir), *args], capture_output=True, text=True, timeout=600)


@pytest.mark.integration
def test_every_retriever_searched_the_whole_corpus(dense_workflow):
    runs = dense_workflow / "results/dense/runs/vaswani"
    ft = (runs / "minilm/ft/bm25/fold1-seed1.run").read_text().splitlines()
    assert len({line.split()[0] for line in ft}) == 93 and len(ft) == 93 * 100     # every query, depth 100
    metadata = (runs / "minilm/ft/bm25/fold1-seed1.ir_metadata.yaml").read_text()
    assert "documents: 11429" in metadata and "index: flat" in metadata


@pytest.mark.integration
def test_unm_trains_the_second_round_on_negatives_mined_by_the_first(dense_workflow, monkeypatch):
    mined = json.loads((dense_workflow / "results/dense/negatives/vaswani/minilm/dpt/mined/fold1-seed1.json").read_text())
    assert mined["training_queries"] == 74 and 0 < mined["pool"] <= 2 * 3 * 74
    record = json.loads((dense_workflow / "results/dense/models/vaswani/minilm/dpt/mined/fold1-seed1.json").read_text())
    assert record["kept_parameters"] == 2 * 1 * 384 * 4           # prompts of length 4 in MiniLM's one kept layer
    monkeypatch.chdir(dense_workflow)
    made = read_record("results/dense/models/vaswani/minilm/dpt/mined/fold1-seed1")
    assert list(made["inputs"]["negatives"]) == ["results/dense/negatives/vaswani/minilm/dpt/mined/fold1-seed1.run"]


@pytest.mark.integration
def test_the_table_audits_and_an_edited_run_fails_it(dense_workflow):
    done = _audit(dense_workflow)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "audit passed: 12 cell(s)" in done.stdout and "copied from a paper" in done.stdout
    assert re.search(r"not rescored: \d+ runs made from trained weights", done.stdout)
    asked = _audit(dense_workflow, "--rescore", "1")          # every dense run re-derived from its weights
    assert asked.returncode == 0, asked.stdout[-3000:] + asked.stderr[-3000:]
    learned = int(re.search(r"rescored (\d+) of (\d+) runs made from trained weights", asked.stdout)[2])
    assert learned > 0 and f"rescored {learned} of {learned} runs" in asked.stdout
    run = dense_workflow / "results/dense/runs/vaswani/rip/ft/bm25/fold1-seed1.run"
    with tampered(run, lambda data: re.sub(rb"^(\S+ Q0 \S+ 1 )", rb"\g<1>9", data, count=1)):
        failed = _audit(dense_workflow)
    assert failed.returncode == 1 and "rip/ft/bm25/fold1-seed1.run" in failed.stdout


@pytest.mark.integration
def test_rescoring_a_dense_run_catches_a_forged_score_and_an_index_not_from_its_weights(dense_workflow, monkeypatch,
                                                                                       tmp_path):
    """A run whose hashes were all recomputed passes every other check: rescoring re-derives it. A changed score is
    caught against the stored vectors; a document the run leaves out by searching the stored index again; an index and a run made consistent with each other but not with the weights (vectors
    scaled by 1.5, the run's scores with them) only by encoding the documents' text again."""
    import numpy as np

    from peftir.app.rescore import rescore
    from peftir.data import trec
    from peftir.provenance.records import record_path
    from peftir.retrieval import faiss_index

    monkeypatch.chdir(dense_workflow)
    run = "results/dense/runs/vaswani/rip/ft/bm25/fold1-seed1.run"
    record = read_record(run)
    assert rescore(run, record, 2) == (None, None, 2)
    stored = trec.read_run(run)
    forged = tmp_path / "forged.run"
    trec.write_run(forged, {qid: {doc: score + (0.5 if rank == 0 else 0.0)
                                  for rank, (doc, score) in enumerate(sorted(docs.items(), key=lambda i: -i[1]))}
                            for qid, docs in stored.items()}, "forged")
    why, _, _ = rescore(str(forged), record, 2)
    assert why and "the run file says" in why and "its stored vector" in why
    swapped = {qid: dict(docs) for qid, docs in stored.items()}
    for docs in swapped.values():                             # each query's last document left out
        ranked = sorted(docs, key=lambda doc: -docs[doc])
        del docs[ranked[-1]]
    trec.write_run(forged, swapped, "forged")
    why, _, _ = rescore(str(forged), record, 2)
    assert why and "the run holds 99 documents" in why, why
    index = next(iter(record["inputs"]["index"]))
    opened = faiss_index.read(index, 1)
    scaled = f"{index}-scaled-for-a-test"
    batches, offset = [], 0
    for shard in opened.shards:
        vectors = np.load(shard)
        batches.append((vectors * 1.5, opened.ids[offset:offset + len(vectors)]))
        offset += len(vectors)
    faiss_index.write(scaled, batches)
    copied = record_path(scaled)
    copied.write_text(record_path(index).read_text())                  # the index's record: its documents
    try:
        trec.write_run(forged, {qid: {doc: 1.5 * score for doc, score in docs.items()} for qid, docs in
                                stored.items()}, "forged")
        inputs = {**record["inputs"], "index": {scaled: "0" * 64}}
        why, _, _ = rescore(str(forged), {**record, "inputs": inputs}, 2)
        assert why and "encoding the document's text again" in why, why
    finally:
        copied.unlink()
        shutil.rmtree(scaled)


@pytest.mark.integration
def test_the_attention_figure_audits_and_an_edited_entropy_fails_it(dense_workflow, monkeypatch):
    """Every point traced to its attention file (the fine-tuned retriever's, the backbone's as it comes), each file
    back to its checkpoint and documents; a number changed in a file fails the audit, naming the file."""
    from peftir.app.audit import audit

    monkeypatch.chdir(dense_workflow)
    said: list[str] = []
    assert audit(FIGURE, dense_workflow, say=said.append) == 0, said[-3:]
    assert said[-1].startswith("audit passed: 4 point(s)")     # two backbones' one kept layer, as they come and tuned
    assert any("of results/dense/attention/condenser/figure2/vaswani/rip/ft/bm25/fold1-seed1.json" in line
               for line in said)
    figure = json.loads(Path(FIGURE.replace(".pdf", ".json")).read_text())
    assert figure["passages"] == 6 and [panel["label"] for panel in figure["panels"]] == ["RIP", "MiniLM"]
    entropy = dense_workflow / "results/dense/attention/condenser/figure2/vaswani/untrained/minilm.json"
    with tampered(entropy, lambda data: data.replace(b'"entropy": [\n  ', b'"entropy": [\n  9', 1)):
        said.clear()
        assert audit(FIGURE, dense_workflow, ["minilm:pretrained:layer1"], check_config=False, say=said.append) == 1
    assert "untrained/minilm.json" in said[-1] and said[-1].startswith("AUDIT FAILED")


@pytest.mark.integration
def test_the_alignment_and_uniformity_table_audits_and_an_edited_distance_fails_it(dense_workflow):
    done = _audit(dense_workflow, report=GEOMETRY)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "audit passed: 4 cell(s)" in done.stdout and "recomputed from the index's vectors" in done.stdout
    path = dense_workflow / "results/dense/geometry/vaswani/minilm/ft/bm25/fold1-seed1.json"
    stored = json.loads(path.read_text())
    assert stored["queries"] == len(stored["per_query"]) and -4.5 < stored["mean"]["uniformity"] < 0
    first = rb'("distances": \{\n  "[^"]+": \{\n   "[^"]+": )[-0-9.e]+'
    with tampered(path, lambda data: re.sub(first, rb"\g<1>3.9", data, count=1)):
        failed = _audit(dense_workflow, report=GEOMETRY)
    assert failed.returncode == 1 and "minilm/ft/bm25/fold1-seed1.json" in failed.stdout


@pytest.mark.integration
def test_changing_the_prompt_length_reruns_only_the_deep_prompt_retrievers(dense_workflow, tmp_path):
    overlay = tmp_path / "length.yaml"
    overlay.write_text("dense_retrieval: {methods: {dpt: {length: 5}}}\n")
    result = snakemake(dense_workflow, TABLE, "-n", "--cores", "1", overlays=(overlay,))
    assert result.returncode == 0, result.stderr[-3000:]
    planned = re.findall(r" *(?:local)?rule (\w+):\n(?: +.*\n)*? +wildcards: (.*)", result.stdout)  # groups indent
    trained = {wildcards for rule, wildcards in planned if rule == "train_retriever"}
    assert trained and all("retriever=dpt" in w for w in trained) and len(trained) == 2   # round 1 and round 2
    assert not {rule for rule, _ in planned} & {"pretrain", "pretraining_mlm_head", "dense_index_untrained"}


@pytest.mark.integration
def test_a_ranker_reuses_the_pretrained_backbone_by_name(dense_workflow, tmp_path, monkeypatch):
    overlay = tmp_path / "reuse.yaml"
    overlay.write_text("backbone: {name: 'pretrained:rip', layers: 1}\n")
    target = "results/models/vaswani/monobert/full/fold1-seed1.pt"
    result = snakemake(dense_workflow, target, "--cores", "2", overlays=(overlay,))
    assert result.returncode == 0, result.stderr[-3000:]
    monkeypatch.chdir(dense_workflow)
    record = read_record(target)
    assert "results/pretrained/rip" in record["inputs"]["backbone"]

"""Condenser Figure 2: [CLS] attention entropy per layer on a seeded sample of passages, and the figure
drawn from it with its JSON and CSV twins; the config checks and the jobs the configurations plan."""
from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
import torch

from peftir.dense.attention_entropy import (attention_entropy, load_encoder, passage_entropies, sample_digest,
                                                 sample_passages)
from peftir.execution.seam import CPU
from peftir.pipeline.contract import PATHS
from peftir.dense import attention_figure as attention
from peftir.pipeline import plan
from peftir.pipeline.config import load_config

from test_clir_config import one_line_error
from test_dense_config import CONDENSER, REPO, _planned
from tiny import tiny_backbone
from peftir.dense import plan as dense_plan

MAX_LEN = 24
LAYOUT = {"name": "condenser/figure2", "caption": "A tiny figure.", "dataset": "tiny", "passages": 6, "seed": 1,
          "fine_tuned": {"retriever": "ft", "negatives": "bm25", "fold": "1", "seed": "1"},
          "panels": [{"label": "Tiny", "backbone": "tiny"}]}


def _spec(backbone: str, passages: int = 6, seed: int = 1) -> dict:
    return {"backbone": backbone, "layers": None, "p_max_len": MAX_LEN, "passages": passages, "seed": seed,
            "execution": {"device": "cpu", "precision": "fp32"}}


def _docs(path: Path, count: int) -> str:
    words = "the cat sat on a mat while dense passage retrieval models attend to every token".split()
    path.write_text("".join(json.dumps({"id": f"d{i}", "contents": " ".join(words[:2 + i % 30] * (1 + i % 3))}) + "\n"
                            for i in range(count)))
    return str(path)


def _saved(directory: Path, uniform: bool = False) -> str:
    """A tiny random BERT and MiniLM's tokenizer as a checkpoint; ``uniform``: queries and keys zeroed, so every
    attention row is uniform over the keys the mask keeps."""
    loaded = tiny_backbone(layers=2)
    if uniform:
        with torch.no_grad():
            for layer in loaded.model.encoder.layer:
                for projection in (layer.attention.self.query, layer.attention.self.key):
                    projection.weight.zero_()
                    projection.bias.zero_()
    loaded.model.save_pretrained(directory)
    loaded.tokenizer.save_pretrained(directory)
    return str(directory)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("attention")
    return {"random": _saved(root / "random"), "uniform": _saved(root / "uniform", uniform=True),
            "docs": _docs(root / "docs.jsonl", 40)}


def test_uniform_attention_has_the_entropy_of_the_passage_length_in_nats(checkpoints, tmp_path):
    """Every [CLS] row uniform over the n tokens the passage keeps (cut at p_max_len, padding left out): log n."""
    output = tmp_path / "entropy.json"
    attention_entropy(_spec(checkpoints["uniform"]), checkpoints["docs"], 1, str(output))
    found = json.loads(output.read_text())
    _, texts, _ = sample_passages(checkpoints["docs"], 6, 1)
    _, tokenizer = load_encoder(checkpoints["uniform"], None, CPU)
    lengths = [len(tokenizer(text, truncation=True, max_length=MAX_LEN)["input_ids"]) for text in texts]
    assert len(set(lengths)) > 2 and MAX_LEN in lengths                 # padded batches, a passage cut
    assert found["unit"] == "nats" and len(found["per_passage"]) == 6
    for row, length in zip(found["per_passage"], lengths):
        assert row == pytest.approx([math.log(length)] * 2, abs=1e-5)
    assert found["entropy"] == pytest.approx([sum(map(math.log, lengths)) / 6] * 2, abs=1e-5)


def test_the_entropy_is_the_cls_rows_of_the_attention_maps_passage_by_passage(checkpoints):
    """Batched and padded as the job runs it, each passage's value is the one its own unpadded forward pass gives:
    −Σ p log p of the [CLS] row, mean over the heads, per layer."""
    model, tokenizer = load_encoder(checkpoints["random"], None, CPU)
    _, texts, _ = sample_passages(checkpoints["docs"], 8, 3)
    batched = passage_entropies(model, tokenizer, texts, MAX_LEN, CPU)
    for text, row in zip(texts, batched):
        with torch.no_grad():
            maps = model(**tokenizer(text, truncation=True, max_length=MAX_LEN, return_tensors="pt"),
                         output_attentions=True).attentions
        manual = [float((-(layer[0, :, 0] * layer[0, :, 0].log()).sum(-1)).mean()) for layer in maps]
        assert row == pytest.approx(manual, abs=1e-5)
    assert len({round(row[0], 4) for row in batched}) > 1


def test_the_sample_is_seeded_uniform_and_in_file_order(checkpoints):
    ids, texts, _ = sample_passages(checkpoints["docs"], 10, 7)
    assert (ids, texts, 0) == sample_passages(checkpoints["docs"], 10, 7) and len(ids) == 10
    assert ids == sorted(ids, key=lambda docid: int(docid[1:])) and ids != sample_passages(checkpoints["docs"], 10, 8)[0]
    assert len(sample_passages(checkpoints["docs"], 100, 7)[0]) == 40            # fewer documents: all of them
    drawn = Counter(docid for seed in range(300) for docid in sample_passages(checkpoints["docs"], 10, seed)[0])
    assert len(drawn) == 40 and 40 < min(drawn.values()) and max(drawn.values()) < 110    # each about 300 · 10/40


def test_documents_with_no_text_are_not_passages_of_the_sample_and_are_counted(checkpoints, tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(Path(checkpoints["docs"]).read_text() + "".join(
        json.dumps({"id": f"e{n}", "contents": text}) + "\n" for n, text in enumerate(["", " ", "\x01"])))
    ids, texts, empty = sample_passages(str(docs), 100, 7)
    assert empty == 3 and len(ids) == 40 and not [docid for docid in ids if docid.startswith("e")]


def test_the_figure_twins_trace_every_point_to_its_attention_file(checkpoints, tmp_path):
    files = {}
    for model, checkpoint in (("pretrained", "random"), ("fine_tuned", "uniform")):
        files[model] = str(tmp_path / f"{model}.json")
        attention_entropy(_spec(checkpoints[checkpoint]), checkpoints["docs"], 1, files[model])
    outputs = {kind: str(tmp_path / f"figure2.{kind}") for kind in ("pdf", "png", "json", "csv")}
    attention.make_attention_figure(LAYOUT, [files["pretrained"]], [files["fine_tuned"]], *outputs.values())
    figure = json.loads(Path(outputs["json"]).read_text())
    points = attention.figure_points(figure)
    assert [p["cell"] for p in points] == [f"tiny:{m}:layer{n}" for m in ("pretrained", "fine_tuned") for n in (1, 2)]
    for point in points:
        found = json.loads(Path(point["attention_file"]).read_text())
        assert point["value"] == found["entropy"][point["layer"] - 1] and point["printed"] == f"{point['value']:.4f}"
        assert point["checkpoint"] == found["checkpoint"] and point["passages"] == 6
        assert point["sample_sha256"] == sample_digest(found["sample"]["ids"]) == figure["sample_sha256"]
    rows = Path(outputs["csv"]).read_text().splitlines()
    assert rows[0].split(",") == list(attention.CSV_COLUMNS) and len(rows) == 1 + len(points)
    assert rows[1].startswith(f"tiny:pretrained:layer1,Tiny,tiny,pretrained,1,{points[0]['value']!r},")
    assert attention.drawn(figure)[0] == Path(outputs["pdf"]).read_bytes()        # the audit's redraw
    other = str(tmp_path / "other.json")
    attention_entropy(_spec(checkpoints["uniform"], seed=2), checkpoints["docs"], 1, other)
    with pytest.raises(ValueError, match="different samples"):
        attention.build_attention_figure(LAYOUT, [files["pretrained"]], [other])


@pytest.mark.parametrize("text, key", [
    ("dense_retrieval: {figures: {condenser: {figure2: {retriever: dpt}}}}",
     "dense_retrieval.figures.condenser.figure2.retriever = 'dpt': a dpt method"),
    ("dense_retrieval: {figures: {condenser: {figure2: {retriever: nope}}}}",
     "dense_retrieval.figures.condenser.figure2.retriever = 'nope': allowed:"),
    ("dense_retrieval: {figures: {condenser: {figure2: {panels: [{label: X, backbone: bert}]}}}}",
     "dense_retrieval.figures.condenser.figure2.panels[0].backbone = 'bert': allowed: minilm"),
    (("dense_retrieval: {figures: {condenser: {figure2: {panels: [{label: X, backbone: minilm}, "
      "{label: X, backbone: rip}]}}}}"), "figure2.panels: each panel names its own label"),
    (("dense_retrieval: {figures: {condenser: {table5: {caption: c, passages: 3, seed: 1, retriever: ft, "
      "negatives: bm25, panels: [{label: X, backbone: minilm}]}}}}"), "has a table 'table5'"),
    ("dense_retrieval: {figures: {condenser: {figure2: {passages: 0}}}}", "figure2.passages"),
])
def test_a_bad_figure_config_is_one_line_naming_the_key(irds_home, tmp_path, text, key):
    assert key in one_line_error(tmp_path, text)


def test_the_figure_reads_each_backbone_as_it_comes_and_its_fine_tuned_retriever(irds_home):
    config = load_config(REPO, [CONDENSER])
    inputs = dense_plan.dense_figure_inputs(config, "condenser", "figure2")
    backbones = [panel["backbone"] for panel in config["dense_retrieval"]["figures"]["condenser"]["figure2"]["panels"]]
    assert inputs["pretrained"] == [PATHS.attention_pretrained.format(paper="condenser", figure="figure2",
                                                                      dataset="msmarco-passage", backbone=b)
                                    for b in backbones]
    tuned = dense_plan.attention_input(config, {"dataset": "msmarco-passage", "backbone": "bert", "retriever": "ft",
                                          "negatives": "bm25", "fold": "1", "seed": "1"})
    assert tuned == {"docs": PATHS.docs.format(dataset="msmarco-passage"),
                     "model": "results/dense/models/msmarco-passage/bert/ft/bm25/fold1-seed1"}   # Table 5's BERT
    assert plan.report_file(config, "condenser/figure2") == "results/figures/condenser/figure2.pdf"
    assert "condenser/figure2" in plan.crate_reports(config)


def test_the_paper_overlay_plans_the_figures_jobs_without_training_another_retriever(irds_home, tmp_path):
    counts = _planned(tmp_path, [REPO / "config.yaml", CONDENSER], "results/figures/condenser/figure2.pdf")
    panels = len(load_config(REPO, [CONDENSER])["dense_retrieval"]["figures"]["condenser"]["figure2"]["panels"])
    assert {rule: counts.get(rule, 0) for rule in ("attention_entropy", "attention_entropy_pretrained",
                                                   "dense_figure", "dense_index")} == \
        {"attention_entropy": panels, "attention_entropy_pretrained": panels, "dense_figure": 1, "dense_index": 0}
    assert counts["train_retriever"] == panels

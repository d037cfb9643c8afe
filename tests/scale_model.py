"""Scale models of the paper configurations: the same configuration files, run for real on a laptop.

A scale model keeps everything a paper configuration says but sizes:

- every backbone a hub name stands for is replaced by a tiny randomly initialised model of the same architecture
  family (BERT, DistilBERT, RoBERTa with a byte-level BPE, a sentence-transformers DistilBERT), built here from a
  ``config.json`` with the real depth and a hidden size of 32 — no download, and a layer index a config names (a
  Condenser head on layer 6 of 12, 12 of RoBERTa-large's 24) still exists;
- every collection is a tiny fixture in its real format where the pipeline reads it (``irds_fixtures`` for the
  ir_datasets collections, ``write_local_files`` for those a configuration names as files);
- every step count is divided by ``STEP_FACTOR`` and every batch by ``BATCH_FACTOR`` (at least ``MINIMUM``, at most
  ``MAXIMUM_BATCH``: what a fixture holds), while rows per forward pass (``chunk``) stay below a batch, so gradient
  accumulation and the gradient cache run with several chunks as they do on a GPU;
- only the first seed runs, and cross-validation runs on three folds (the fewest that rotate test, validation and
  training: Robust04's first three published folds, three seeded ClueWeb folds);
- a SPLADE backbone's MLM logits start below zero (``logit_offset``): a random head's logits centre on 0, so its
  SPLADE vectors would hold half the vocabulary where a trained head's hold a few hundred pieces.

``overlay`` returns that last configuration file as a dict, given the configuration the paper's files make.
"""
from __future__ import annotations

import gzip
import json
import math
import pickle
import random
import string
from pathlib import Path
from typing import Any

import yaml

from peftir.contract.backbones import hub_repository

REPO = Path(__file__).resolve().parents[1]
STEP_FACTOR = 150_000      # 300k SPLADE updates → 2, 625k ranking-module updates → 5; at least MINIMUM
BATCH_FACTOR = 16          # 64 DPTDR queries → 4, 128 SPLADE queries → 8
MAXIMUM_BATCH = 8          # a fixture split holds about ten queries and a hundred documents
MINIMUM = 2                # two updates, two rows: what accumulation, caches and validation curves need
CHUNK = 4                  # rows per forward pass: every batch is split into several
HIDDEN = 32

# The hub names of the paper configurations and their families; a new name must be added here, so a scale model
# never silently downloads one.
FAMILIES = {
    "bert-base-uncased": ("bert", 12),
    "bert-base-multilingual-uncased": ("bert", 12),     # mBERT: a BERT with a WordPiece vocabulary
    "naver/splade-cocondenser-ensembledistil": ("bert", 12),
    "castorini/tct_colbert-v2-msmarco": ("bert", 12),
    "Luyu/co-condenser-marco": ("bert", 12),
    "distilbert-base-uncased": ("distilbert", 6),
    "roberta-large": ("roberta", 24),
    "sentence-transformers/distilbert-multilingual-nli-stsb-quora-ranking": ("sentence-transformers", 6),
}


def _training_text() -> list[str]:
    """What the tiny tokenizers learn their pieces from: the words the fixtures write (and nothing that changes
    with the repository's prose, so a scale model's vocabulary stays the same from commit to commit)."""
    from irds_fixtures import FILLER_WORDS, TOPIC_WORDS

    return [" ".join(TOPIC_WORDS), " ".join(FILLER_WORDS), " ".join(WORDS), " ".join(string.punctuation)]


def _vocabulary(directory: Path) -> str:
    """A small uncased WordPiece vocabulary (about 1,300 pieces, BERT's special tokens and its ``[unused…]`` ones
    among them: ColBERT's markers, SPLADE's empty-document piece), so that every |V|-wide tensor (MLM heads,
    SPLADE vectors) is a tiny model's size too."""
    from tokenizers import BertWordPieceTokenizer

    path = directory / "vocab.txt"
    if not path.is_file():
        wordpiece = BertWordPieceTokenizer(lowercase=True)
        wordpiece.train_from_iterator(_training_text(), vocab_size=3000, special_tokens=[
            "[PAD]", *(f"[unused{i}]" for i in range(994)), "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        directory.mkdir(parents=True, exist_ok=True)
        wordpiece.save_model(str(directory))
    return str(path)


def _bpe_tokenizer(directory: Path):
    """A byte-level BPE tokenizer (RoBERTa's kind) trained on a little English, saved as RoBERTa's files."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(_training_text(), vocab_size=2000,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    directory.mkdir(parents=True, exist_ok=True)
    bpe.save_model(str(directory))
    return RobertaTokenizerFast(vocab_file=str(directory / "vocab.json"), merges_file=str(directory / "merges.txt"))


def tiny_backbone(name: str, directory: Path) -> Path:
    """A tiny randomly initialised masked LM of ``name``'s family and depth in ``directory`` (made once); a BERT
    with its pooler, as the released checkpoints have one."""
    import torch
    from transformers import (BertConfig, BertForPreTraining, BertTokenizerFast, DistilBertConfig,
                              DistilBertForMaskedLM, DistilBertTokenizerFast, RobertaConfig, RobertaForMaskedLM)

    family, layers = FAMILIES[name]
    if (directory / "config.json").is_file() or (directory / "modules.json").is_file():
        return directory
    torch.manual_seed(0)
    if family == "bert":
        tokenizer = BertTokenizerFast(vocab_file=_vocabulary(directory.parent / "wordpiece"), do_lower_case=True)
        # as the released BERTs: an MLM head and a pooler (the CLIR ranking head reads mBERT's, head_pooler)
        model = BertForPreTraining(BertConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN,
                                              num_hidden_layers=layers, num_attention_heads=2,
                                              intermediate_size=2 * HIDDEN))
    elif family in ("distilbert", "sentence-transformers"):
        tokenizer = DistilBertTokenizerFast(vocab_file=_vocabulary(directory.parent / "wordpiece"),
                                            do_lower_case=True)
        model = DistilBertForMaskedLM(DistilBertConfig(vocab_size=len(tokenizer), dim=HIDDEN, n_layers=layers,
                                                       n_heads=2, hidden_dim=2 * HIDDEN))
    else:
        tokenizer = _bpe_tokenizer(directory / "bpe")
        model = RobertaForMaskedLM(RobertaConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN,
                                                 num_hidden_layers=layers, num_attention_heads=2,
                                                 intermediate_size=2 * HIDDEN, max_position_embeddings=514,
                                                 pad_token_id=tokenizer.pad_token_id, type_vocab_size=1))
    if family == "sentence-transformers":
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

        (directory / "hf").mkdir(parents=True, exist_ok=True)
        model.save_pretrained(directory / "hf")
        tokenizer.save_pretrained(directory / "hf")
        SentenceTransformer(modules=[Transformer(str(directory / "hf")), Pooling(HIDDEN, "mean")],
                            device="cpu").save(str(directory))
        return directory
    model.save_pretrained(directory)
    if family == "bert":      # the released BERTs' config names the masked LM, their weights hold the pooler too
        config = BertConfig.from_pretrained(directory)
        config.architectures = ["BertForMaskedLM"]
        config.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


# --- the configuration ----------------------------------------------------------------------------------------

def merged(*files: Path) -> dict:
    """The configuration Snakemake makes of these files (later files update earlier ones, dicts recursively)."""
    config: dict = {}
    for path in files:
        _update(config, yaml.safe_load(path.read_text()) or {})
    return config


def _update(base: dict, extra: dict) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _update(base[key], value)
        else:
            base[key] = value


STEP_KEYS = {"steps", "epochs", "first_epochs", "second_epochs"}
BATCH_KEYS = {"batch_size", "pairs_per_epoch", "train_queries", "calibration_queries", "heldout_blocks",
              "validation_queries", "passages"}
INTERVAL_KEYS = {"validate_every", "warmup_steps", "warmup"}


def _scaled(key: str, value: Any) -> Any:
    """A value of the configuration at its scale-model size (None: unchanged). Passes are made small, ``auto``
    ones too, so the scale models run the gradient accumulation and the gradient cache the paper shapes need on
    smaller GPUs (the embedded default's jobs run ``auto``)."""
    if key in ("chunk", "micro_batch"):
        return 1 if key == "micro_batch" else CHUNK
    if isinstance(value, bool) or not isinstance(value, int):
        if key == "phase_steps" and isinstance(value, list):
            return [MINIMUM] * len(value)
        return None
    if key in STEP_KEYS:
        return max(1 if "epochs" in key else MINIMUM, math.ceil(value / STEP_FACTOR))
    if key in BATCH_KEYS:
        return max(MINIMUM, min(MAXIMUM_BATCH, value // BATCH_FACTOR))
    if key in INTERVAL_KEYS:
        return 1
    return None


def _sized(config: Any, path: tuple = ()) -> Any:
    """The changed leaves of ``config`` (a nested dict of them), sizes scaled; tables and resources untouched."""
    if not isinstance(config, dict):
        return None
    changed = {}
    for key, value in config.items():
        if key in ("tables", "figures", "resources", "labels") and not path:
            continue
        inner = _sized(value, (*path, key)) if isinstance(value, dict) else _scaled(key, value)
        if inner not in (None, {}):
            changed[key] = inner
    return changed


def _backbones(config: dict, directory: Path) -> dict:
    """Every backbone name of the configuration that a hub stands for, as the tiny model's directory."""
    def tiny(name: str) -> str | None:
        if not isinstance(name, str) or name.startswith(("embedded:", "pretrained:", "/")):
            return None
        repo = hub_repository(name)[0]       # a pinned hub name stands for its repository
        if repo not in FAMILIES:
            raise KeyError(f"{repo}: not a family the scale models know (tests/scale_model.py, FAMILIES)")
        return str(tiny_backbone(repo, directory / repo.replace("/", "--")))

    found: dict = {}
    if tiny(config["backbone"]["name"]):
        found["backbone"] = {"name": tiny(config["backbone"]["name"])}
    for section, key in (("pretraining", "backbone"), ("modular_clir", "backbone")):
        if config.get(section) and tiny(config[section][key]["name"]):
            found.setdefault(section, {})[key] = {"name": tiny(config[section][key]["name"])}
    runs = {run: {"backbone": tiny(spec.get("backbone"))} for run, spec in (config.get("pretraining") or {})
            .get("runs", {}).items() if tiny(spec.get("backbone"))}      # a run's own backbone (DPTDR Table 6's)
    if runs:
        found.setdefault("pretraining", {})["runs"] = runs
    dense = config.get("dense_retrieval")
    if dense:
        named = {key: tiny(name) for key, name in dense["backbones"].items()}
        if any(named.values()):
            found["dense_retrieval"] = {"backbones": {key: path for key, path in named.items() if path}}
    sparse = config.get("sparse_retrieval")
    if sparse:
        named = {key: tiny(spec["name"]) for key, spec in sparse["backbones"].items()}
        if any(named.values()):
            found["sparse_retrieval"] = {"backbones": {key: {"name": path} for key, path in named.items() if path}}
        models = (sparse.get("rerankers") or {}).get("models", {})
        tiny_models = {key: {"backbone": tiny(spec["backbone"])} for key, spec in models.items()
                       if tiny(spec["backbone"])}
        if tiny_models:
            found.setdefault("sparse_retrieval", {})["rerankers"] = {"models": tiny_models}
    clir = config.get("modular_clir")
    if clir and tiny(clir["prerank"]["dense"]["model"]):
        found.setdefault("modular_clir", {})["prerank"] = {"dense": {"model": tiny(clir["prerank"]["dense"]["model"])}}
    return found


SPLADE_OFFSET = -0.25      # a random head's logits: about N(0, 0.25²) at hidden 32: a sixth of its pieces stay above


def _folds(config: dict) -> dict:
    """Three folds for every cross-validated dataset the experiment runs."""
    fewer = {}
    for name in config["experiment"]["datasets"]:
        folds = config["datasets"][name]["folds"]
        if folds.get("scheme") == "published":
            fewer[name] = {"folds": {"irds": folds["irds"][:3]}}
        elif folds.get("scheme") == "seeded":
            fewer[name] = {"folds": {"n": 3}}
    return fewer


def overlay(config: dict, directory: Path) -> dict:
    """The scale model's own configuration file for ``config`` (the merged paper configuration), its tiny
    backbones written under ``directory``."""
    scaled = _sized(config)
    _update(scaled, _backbones(config, directory / "backbones"))
    _update(scaled, {"datasets": _folds(config)})
    sparse = config.get("sparse_retrieval")
    if sparse:
        _update(scaled, {"sparse_retrieval": {"backbones": {key: {"logit_offset": SPLADE_OFFSET}
                                                            for key in sparse["backbones"]}}})
    _update(scaled, {"experiment": {"seeds": config["experiment"]["seeds"][:1]}})
    for section in ("dense_retrieval", "sparse_retrieval"):
        if config.get(section):
            _update(scaled, {section: {"seeds": config[section]["seeds"][:1]}})
    if config.get("modular_clir"):
        _update(scaled, {"modular_clir": {"ranking": {"seeds": config["modular_clir"]["ranking"]["seeds"][:1]}}})
    return scaled


# --- collections a configuration names as files ---------------------------------------------------------------

WORDS = ("retrieval ranking passage query index search model neural sparse dense adapter prompt prefix encoder "
         "language translation corpus document relevance judgment vector token embedding training batch").split()


def write_teacher(path: Path, queries: dict[str, list[str]]) -> Path:
    """MarginMSE's teacher scores as the sentence-transformers file is: a gzipped pickle ``{qid: {pid: score}}``."""
    rng = random.Random(0)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") as out:
        pickle.dump({int(qid): {int(doc): rng.uniform(-5, 5) for doc in docs} for qid, docs in queries.items()}, out)
    return path


def write_clir_collection(directory: Path, languages: list[str], documents: int = 30, queries: int = 6) -> None:
    """A CLEF-like collection as ``modular_clir.collection.source: files`` reads it: per language ``docs.jsonl``,
    ``queries.tsv`` (id, title, description) and ``qrels.txt``, the same topics in every language (words tagged by
    language), and one document with no text among them, as real collections have."""
    rng = random.Random(1)
    for language in languages:
        folder = directory / language
        folder.mkdir(parents=True, exist_ok=True)
        docs = {f"{language}-d{i}": " ".join(f"{w}_{language}" for w in rng.sample(WORDS, 8))
                for i in range(documents)}
        docs[f"{language}-empty"] = ""
        topics = {f"q{i}": " ".join(docs[f"{language}-d{i}"].split()[:3]) for i in range(queries)}
        (folder / "docs.jsonl").write_text("".join(json.dumps({"id": d, "contents": t}) + "\n"
                                                   for d, t in docs.items()))
        # id, title, description: the columns the paper configuration's query_text (title_description) reads
        (folder / "queries.tsv").write_text("".join(f"{q}\t{t}\t{t} {language}\n" for q, t in topics.items()))
        (folder / "qrels.txt").write_text("".join(f"q{i} 0 {language}-d{i} 1\n" for i in range(queries)))


def write_text(path: Path, language: str, lines: int = 400) -> None:
    """A language's plain text, one unit per line (what a Wikipedia dump extracted per article looks like), with a
    blank line among them (as wikiextractor leaves between articles)."""
    rng = random.Random(hash(language) % 1000)
    path.parent.mkdir(parents=True, exist_ok=True)
    units = [" ".join(f"{w}_{language}" for w in rng.choices(WORDS, k=40)) for _ in range(lines)]
    path.write_text("".join(f"{unit}\n" for unit in units[:lines // 2] + [""] + units[lines // 2:]))

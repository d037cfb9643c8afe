"""Pretraining text for Condenser, coCondenser and RIP, cut from a collection's documents.

- ``blocks`` (Condenser; the released ``helper/create_train.py``): each document's sentences, tokenised, are
  packed greedily into blocks of at most ``max_len − 2`` tokens (room for [CLS] and [SEP]); with probability
  ``short_probability`` (0.1) a document's target length is drawn uniformly from 1 to ``max_len − 2`` instead,
  so the model also sees short inputs.
- ``spans`` (coCondenser): each document's tokens cut end to end into windows of ``max_len − 2`` (a last window
  of at least half that kept), regardless of sentence borders — the text spans DPTDR sets against sentences
  (§4.5: spans "do not consider the borders of natural sentences"); documents with fewer than two spans cannot
  give a pair and are dropped (as ``create_train_co.py`` drops them).
- ``sentences`` (RIP): each passage's sentences, tokenised and cropped; passages of one sentence are dropped.

A unit's word pieces are cut from its whole text's tokenisation, not tokenised alone (``_tokenised``): the same
pieces for BERT's WordPiece, and for RoBERTa's byte-level BPE the leading space each later sentence has in running
text (DPTDR's RoBERTa-large Condenser and coCondenser).

The units are written to disk as they are cut (``Pieces``: ids, row and document offsets, memory-mapped), so a
collection of 8.8 M passages costs its tokens on disk, not Python lists in memory.

Sentences come from pysbd (rule-based, no model download); the released code used nltk's punkt, whose data
does not install with the package (named in the README). A text without sentence punctuation (vaswani's
abstracts are lower-case words only) is one "sentence" to any splitter; with ``window`` set, such a text is cut
into windows of ``window`` words that stand in for its sentences (ours, for the embedded default; named in the
README), so RIP has sentence pairs and coCondenser two spans per document.
"""
from __future__ import annotations

import bisect
import random
import re
from array import array
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from .. import progress_log

Ids = list[int]
TOKEN_TYPE = np.uint32            # token ids on disk: vocabularies beyond 65,536 pieces (mBERT's 105k, XLM-R's 250k)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Where the text's sentences are (start and end offsets, surrounding whitespace left out), split as if it had no
    double quotes: pysbd keeps a quotation whole, and DPR's Wikipedia passages arrive quoted (psgs_w100.tsv's CSV
    quoting, which ir_datasets keeps), so each passage would be one sentence and give ICT and RIP no pair (punkt
    splits inside quotes)."""
    import pysbd

    spans = []
    for span in pysbd.Segmenter(language="en", clean=False, char_span=True).segment(text.replace('"', " ")):
        piece = text[span.start:span.end]
        if piece.strip():
            start = span.start + len(piece) - len(piece.lstrip())
            spans.append((start, start + len(piece.strip())))
    return spans


def split_sentences(text: str) -> list[str]:
    """The text's sentences (``sentence_spans``), cut from the text as it is."""
    return [text[start:end] for start, end in sentence_spans(text)]


def _unit_spans(text: str, window: int | None) -> list[tuple[int, int]]:
    """Where the text's sentences are, or its ``window``-word windows when it has one sentence only and ``window`` is
    set."""
    sentences = sentence_spans(text)
    if window is None or len(sentences) != 1:
        return sentences
    words = [word.span() for word in re.finditer(r"\S+", text)]
    return [(words[start][0], words[min(start + window, len(words)) - 1][1]) for start in range(0, len(words), window)]


def _tokenised(tokenizer, text: str, window: int | None = None) -> list[Ids]:
    """The text's units (``_unit_spans``) as word pieces: the whole text tokenised once and its pieces cut where the
    units begin, each piece to the unit its last character is in (an empty piece, as byte-level BPE's lone ``Ġ``
    before a word with trimmed offsets, to the unit at its place; whitespace between two units goes with the first).
    A piece of text that no unit holds (the opening quote of a DPR passage, which the sentence split reads as a
    space) is left out, as tokenising the units alone leaves it out. So a unit's pieces are what the model reads in
    running text: with byte-level BPE (RoBERTa) a sentence after the first keeps its leading space (``ĠHello``),
    which tokenising it alone would lose (``Hello``, a form rare in pretraining); WordPiece (BERT) splits at
    whitespace first and gives the same pieces either way. The released ``create_train.py`` tokenises sentence by
    sentence and was run with BERT only."""
    spans = _unit_spans(text, window)
    if not spans:
        return []
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    starts = [start for start, _ in spans]
    units: list[Ids] = [[] for _ in spans]
    for piece, (start, end) in zip(encoded["input_ids"], encoded["offset_mapping"]):
        unit = bisect.bisect_right(starts, end - 1 if end > start else start) - 1
        if (unit >= 0 and start < spans[unit][1]) or not text[start:end].strip():
            units[max(unit, 0)].append(piece)
    return [ids for ids in units if ids]


def _pack(sentences: list[Ids], target: int) -> list[Ids]:
    """Sentences packed greedily into blocks of at most ``target`` tokens (a longer sentence is cropped)."""
    blocks, current = [], []
    for sentence in sentences:
        if current and len(current) + len(sentence) > target:
            blocks.append(current)
            current = []
        current = (current + sentence)[:target]
    return blocks + ([current] if current else [])


def blocks(tokenizer, texts: Iterable[str], max_len: int, short_probability: float, seed: int,
           window: int | None = None) -> Iterator[Ids]:
    """Condenser's training blocks: every document's blocks (without special tokens), one after the other."""
    rng, longest = random.Random(seed), max_len - 2
    for text in texts:
        target = rng.randint(1, longest) if rng.random() < short_probability else longest
        yield from _pack(_tokenised(tokenizer, text, window), target)


def spans(tokenizer, texts: Iterable[str], max_len: int) -> Iterator[list[Ids]]:
    """coCondenser's documents as their spans, those with at least two: windows of ``max_len − 2`` tokens of the
    whole text, end to end, the last kept when it holds at least half a window (a shorter one is a fragment, not a
    span). Every document is cut the same way: no short target (Condenser's blocks draw one, which would leave only
    the documents that drew it with two spans)."""
    width = max_len - 2
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        document = [ids[start:start + width] for start in range(0, len(ids), width)]
        if document and len(document[-1]) < (width + 1) // 2:
            document.pop()
        if len(document) >= 2:
            yield document


def sentences(tokenizer, texts: Iterable[str], max_len: int, window: int | None = None) -> Iterator[list[Ids]]:
    """RIP's passages as their sentences (cropped to ``max_len − 2`` tokens), those with at least two."""
    for text in texts:
        tokenised = [ids[:max_len - 2] for ids in _tokenised(tokenizer, text, window)]
        if len(tokenised) >= 2:
            yield tokenised


class Pieces:
    """Documents of pieces (rows of word-piece ids) on disk: ``ids`` (every row's ids, end to end), ``rows`` (where
    each row starts, and the end) and ``documents`` (where each document's rows start, and the end)."""

    def __init__(self, directory: str | Path) -> None:
        directory = Path(directory)
        self.row_starts = np.load(directory / "rows.npy")
        self.document_starts = np.load(directory / "documents.npy")
        size = (directory / "ids").stat().st_size
        self.ids = np.memmap(directory / "ids", dtype=TOKEN_TYPE, mode="r") if size else np.empty(0, TOKEN_TYPE)

    @classmethod
    def write(cls, documents: Iterable[list[Ids]], directory: str | Path) -> Pieces:
        """Store ``documents`` (each a list of rows) in ``directory`` as they come; the store."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        rows, starts, tokens = array("q", [0]), array("q", [0]), 0
        with open(directory / "ids", "wb") as out:
            for document in documents:
                for row in document:
                    np.asarray(row, dtype=TOKEN_TYPE).tofile(out)
                    tokens += len(row)
                    rows.append(tokens)
                starts.append(len(rows) - 1)
                progress_log.advance("tokenising the pretraining text")
        progress_log.finish("tokenising the pretraining text")
        np.save(directory / "rows.npy", np.frombuffer(rows, dtype=np.int64))
        np.save(directory / "documents.npy", np.frombuffer(starts, dtype=np.int64))
        return cls(directory)

    @property
    def rows(self) -> int:
        return len(self.row_starts) - 1

    def __len__(self) -> int:
        """The number of documents."""
        return len(self.document_starts) - 1

    def row(self, index: int) -> Ids:
        return self.ids[self.row_starts[index]:self.row_starts[index + 1]].tolist()

    def document(self, index: int) -> list[Ids]:
        return [self.row(i) for i in range(self.document_starts[index], self.document_starts[index + 1])]


def pairs(documents: list[list[Ids]], rng: random.Random) -> list[Ids]:
    """Two distinct pieces of each document, side by side (rows 2i and 2i+1), drawn uniformly."""
    return [piece for document in documents for piece in rng.sample(document, 2)]

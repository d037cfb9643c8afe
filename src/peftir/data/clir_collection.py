"""A small cross-lingual test collection from the Debian Reference's translations, where CLEF 2003 is licensed.

The Debian Reference (debian-reference-en/-de/-es) carries the same section anchors in every translation.
Each section is a document in each language and its title a query in each language; the one relevant
document of a query is the section it titles (a known-item collection), so a query in language X against
the documents in language Y asks for the translation of the section it names. Qrels are therefore shared by
all language pairs: query id = document id = the anchor.
"""
from __future__ import annotations

import json
import random
import re
import statistics
from pathlib import Path
from typing import Any, Mapping

from ..errors import ActionableError
from ..files import atomic_write
from .debian import package_info
from .export import normalise
from .folds import validate, write_folds
from .multilingual_text import debian_reference_sections
from .trec import write_qrels, write_topics

MIN_BODY_WORDS = 20     # a shorter section (a chapter's one-line lead-in) cannot be told from its neighbours
QUERY_FIELDS = ("title",)
DATASET = "debian-reference"

Sections = dict[str, tuple[str, str]]


def doc_id(anchor: str) -> str:
    """The anchor as a TREC id: one HTML anchor holds a space (``_customizing_vim_with internal_features``)."""
    return re.sub(r"\s+", "_", anchor)


def _untranslated(anchor: str, sections: Mapping[str, Sections]) -> bool:
    """Two languages with the same body: one of them is the English original left untranslated."""
    bodies = [language_sections[anchor][1] for language_sections in sections.values()]
    return len(set(bodies)) < len(bodies)


def _ambiguous_titles(sections: Sections) -> set[str]:
    """Titles (case-folded) that name more than one section of a language: as queries they have no one answer."""
    seen: dict[str, int] = {}
    for title, _ in sections.values():
        key = title.casefold()
        seen[key] = seen.get(key, 0) + 1
    return {title for title, count in seen.items() if count > 1}


def select_sections(sections: Mapping[str, Sections]) -> tuple[list[str], dict[str, list[str]]]:
    """The anchors usable in every language, in the first language's document order, and the dropped ones
    by reason (the first reason that applies)."""
    languages = list(sections)
    everywhere = [anchor for anchor in sections[languages[0]] if all(anchor in sections[lang] for lang in languages)]
    ambiguous = {lang: _ambiguous_titles(sections[lang]) for lang in languages}
    dropped: dict[str, list[str]] = {
        "not_in_every_language": sorted(set().union(*map(set, sections.values())) - set(everywhere)),
        "empty_title": [], "short_body": [], "untranslated": [], "ambiguous_title": []}
    kept = []
    for anchor in everywhere:
        texts = {lang: sections[lang][anchor] for lang in languages}
        if any(not title for title, _ in texts.values()):
            dropped["empty_title"].append(anchor)
        elif any(len(body.split()) < MIN_BODY_WORDS for _, body in texts.values()):
            dropped["short_body"].append(anchor)
        elif _untranslated(anchor, sections):
            dropped["untranslated"].append(anchor)
        elif any(texts[lang][0].casefold() in ambiguous[lang] for lang in languages):
            dropped["ambiguous_title"].append(anchor)
        else:
            kept.append(anchor)
    return kept, dropped


def _splits(ids: list[str], test_queries: int, valid_queries: int, seed: int) -> dict[str, list[str]]:
    """Seeded test and validation samples; the remaining queries are the train split (not trained on by the
    modular system, whose rankers learn from MS MARCO, but ``peftir.data.folds`` wants no split empty)."""
    if test_queries < 1 or valid_queries < 1 or test_queries + valid_queries >= len(ids):
        raise ActionableError(f"{DATASET}: {len(ids)} usable queries cannot give {test_queries} test and "
                              f"{valid_queries} validation queries and leave some for train")
    shuffled = sorted(ids)
    random.Random(seed).shuffle(shuffled)
    return {"train": sorted(shuffled[test_queries + valid_queries:]),
            "valid": sorted(shuffled[test_queries:test_queries + valid_queries]),
            "test": sorted(shuffled[:test_queries])}


def _write_docs(path: str | Path, records: list[tuple[str, str]]) -> None:
    """Documents as JSON lines (Anserini's JsonCollection, as ``peftir.data.export`` writes them)."""
    with atomic_write(path, "wb") as handle:
        for identifier, text in records:
            handle.write((json.dumps({"id": identifier, "contents": text}) + "\n").encode())


def _median_words(texts: list[str]) -> float:
    return statistics.median(len(text.split()) for text in texts)


def build_clir_collection(packages: dict[str, str], languages: list[str], query_field: str, test_queries: int,
                          valid_queries: int, seed: int, docs: dict[str, str], queries: dict[str, str], qrels: str,
                          folds: str, info: str) -> None:
    """The ``clir_collection`` rule: per language, the documents (JSON lines, the same ids in the same order in
    every language) and the queries (TSV); the shared qrels; the presplit folds; ``info`` (counts, drops by
    reason, median lengths, package versions)."""
    if query_field not in QUERY_FIELDS:
        raise ActionableError(f"{DATASET}: query_field must be one of {QUERY_FIELDS}, got {query_field!r}")
    missing = [lang for lang in languages if lang not in packages]
    if len(languages) < 2 or missing:
        raise ActionableError(f"{DATASET}: needs debian-reference packages for two or more languages; "
                              f"languages {languages}, packages given for {sorted(packages)}")
    sections = {lang: debian_reference_sections(packages[lang]) for lang in languages}
    kept, dropped = select_sections(sections)
    ids = {anchor: doc_id(anchor) for anchor in kept}
    if len(set(ids.values())) < len(ids):
        raise ActionableError(f"{DATASET}: anchors that differ only in whitespace: {sorted(ids)}")
    splits = _splits(list(ids.values()), test_queries, valid_queries, seed)
    described: dict[str, Any] = {}
    for lang in languages:
        texts = [normalise(" ".join(sections[lang][anchor])) for anchor in kept]
        titles = {ids[anchor]: sections[lang][anchor][0] for anchor in kept}
        _write_docs(docs[lang], list(zip(ids.values(), texts)))
        write_topics(queries[lang], titles)
        described[lang] = {"sections": len(sections[lang]), "docs": len(texts), "queries": len(titles),
                           "median_doc_words": _median_words(texts),
                           "median_query_words": _median_words(list(titles.values())),
                           "words": sum(len(text.split()) for text in texts), "deb": package_info(packages[lang])}
    write_qrels(qrels, {identifier: {identifier: 1} for identifier in ids.values()})
    fold_doc = {"dataset": DATASET, "scheme": "presplit", "seed": seed, "splits": splits,
                "source": f"random.Random({seed}) shuffle of the sorted usable anchors: the first {test_queries} "
                          f"test, the next {valid_queries} valid, the rest train"}
    validate(fold_doc, list(ids.values()))
    write_folds(folds, fold_doc)
    record = {"dataset": DATASET, "languages": languages, "query_field": query_field, "seed": seed,
              "min_body_words": MIN_BODY_WORDS, "kept": len(kept),
              "dropped": {reason: len(anchors) for reason, anchors in dropped.items()}, "dropped_anchors": dropped,
              "renamed_ids": {anchor: ids[anchor] for anchor in kept if ids[anchor] != anchor},
              "splits": {split: len(members) for split, members in splits.items()}, "per_language": described}
    with atomic_write(info) as handle:
        json.dump(record, handle, indent=2, ensure_ascii=False)
        handle.write("\n")

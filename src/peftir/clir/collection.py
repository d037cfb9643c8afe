"""A small cross-lingual test collection from the Debian Reference's translations, where CLEF 2003 is licensed.

The Debian Reference (debian-reference-en/-de/-es) carries the same section anchors in every translation.
Each section's text is a document in each language and its title a query in each language; the one relevant
document of a query is the section it titles (a known-item collection), so a query in language X against
the documents in language Y asks for the translation of the section it names. The document leaves the
heading out: with it, every document would begin with its own query and monolingual search would be string
matching (BM25 reached 0.93-0.97 MAP, a saturated collection). Qrels are therefore shared by
all language pairs: query id = document id = the anchor.

The paper's collection, CLEF-2003, is licensed: a user's converted copy is read from files
(:func:`copy_local_collection`); a public cross-lingual collection (NeuCLIR, HC4) is exported from
ir_datasets (:func:`export_irds_collection`).
"""
from __future__ import annotations

import json
import random
import re
import statistics
import tempfile
from pathlib import Path
from typing import Any, Mapping

from ..errors import ActionableError
from ..files import atomic_write, write_json
from .debian import check_pinned, package_info
from ..data.empty_documents import is_empty
from ..data.export import queries_and_qrels, export_dataset, normalise
from ..data.folds import read_folds, validate, write_folds
from .multilingual_text import debian_reference_sections
from ..data.trec import read_qrels, read_topics, write_qrels, write_topics

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
                          valid_queries: int, seed: int, docs: dict[str, str], queries: dict[str, str],
                          qrels: dict[str, str], folds: str, info: str) -> None:
    """Per language, the documents (JSON lines, the same ids in the same order in every language), the queries
    (TSV) and the qrels (the same in every language: a query's relevant document is the section it titles); the
    presplit folds; ``info`` (counts, drops by reason, median lengths, package versions)."""
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
        texts = [normalise(sections[lang][anchor][1]) for anchor in kept]      # the body, not the heading
        titles = {ids[anchor]: sections[lang][anchor][0] for anchor in kept}
        _write_docs(docs[lang], list(zip(ids.values(), texts)))
        write_topics(queries[lang], titles)
        described[lang] = {"sections": len(sections[lang]), "docs": len(texts), "queries": len(titles),
                           "median_doc_words": _median_words(texts),
                           "median_query_words": _median_words(list(titles.values())),
                           "words": sum(len(text.split()) for text in texts), "deb": package_info(packages[lang])}
    for path in qrels.values():
        write_qrels(path, {identifier: {identifier: 1} for identifier in ids.values()})
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
    write_json(info, record)


LOCAL_FILES = ("docs.jsonl", "queries.tsv", "qrels.txt")


def _every_query_a_test_query(dataset: str, qids: set[str], source: str) -> dict[str, Any]:
    """Presplit folds for a collection that only tests (its rankers learn from other data, as in the paper)."""
    return {"dataset": dataset, "scheme": "presplit", "splits": {"train": [], "valid": [], "test": sorted(qids)},
            "source": source}


def copy_local_collection(settings: Mapping[str, Any], languages: list[str], docs: dict[str, str],
                          queries: dict[str, str], qrels: dict[str, str], folds: str, info: str) -> None:
    """A collection the user has (CLEF-2003 is licensed): ``settings["path"]``/<language>/ holds docs.jsonl
    (``{"id", "contents"}`` per line), queries.tsv (``id<TAB>title``, or ``id<TAB>title<TAB>description`` read as
    ``settings["query_text"]`` says) and qrels.txt (TREC qrels of those queries
    on that language's documents), and optionally folds.json (presplit); without it every query is a test
    query. Each file is parsed (bad lines are named by file and line) and copied."""
    root = Path(settings.get("path") or "")
    missing = [str(root / lang / name) for lang in languages for name in LOCAL_FILES if not (root / lang / name).is_file()]
    if not settings.get("path") or missing:
        raise ActionableError(
            f"the test collection is not here ({', '.join(missing[:3]) or 'no modular_clir.collection.path'}"
            f"{' ...' if len(missing) > 3 else ''}). {settings.get('licence', '')} Put each language's "
            f"docs.jsonl, queries.tsv and qrels.txt under <path>/<language>/ (README, 'Modular cross-lingual "
            f"rerankers', says how to convert CLEF-2003) and set modular_clir.collection.path.")
    qids: set[str] = set()
    described = {}
    for lang in languages:
        with open(root / lang / "docs.jsonl", encoding="utf-8") as lines:
            records = []
            for number, line in enumerate(lines, 1):
                try:
                    doc = json.loads(line)
                    records.append((str(doc["id"]), normalise(str(doc["contents"]))))
                except (ValueError, KeyError, TypeError):
                    raise ActionableError(f"{root / lang / 'docs.jsonl'}:{number}: not a JSON object with id and "
                                          f"contents") from None
        topics = {qid: _query_text(text, settings.get("query_text", "title"), root / lang / "queries.tsv", qid)
                  for qid, text in read_topics(root / lang / "queries.tsv").items()}
        judged = read_qrels(root / lang / "qrels.txt")
        _write_docs(docs[lang], records)
        write_topics(queries[lang], topics)
        write_qrels(qrels[lang], judged)
        qids |= set(topics)
        described[lang] = {"docs": len(records), "queries": len(topics), "judged_queries": len(judged),
                           "empty_docs": sum(is_empty(text) for _, text in records)}
    given = root / "folds.json"
    fold_doc = (read_folds(given) if given.is_file() else
                _every_query_a_test_query(str(root), qids, "every query a test query (no folds.json given)"))
    write_folds(folds, fold_doc)
    write_json(info, {"dataset": str(root), "languages": languages, "per_language": described,
                      "query_text": settings.get("query_text", "title")})


def _query_text(columns: str, query_text: str, path: Path, qid: str) -> str:
    """A query as ``query_text`` asks from its queries.tsv columns after the id: ``title`` the first, or
    ``title_description`` the title and the description joined, as the authors' CLEF loaders join them."""
    parts = columns.split("\t")
    if query_text == "title":
        return parts[0]
    if len(parts) != 2 or not parts[1].strip():
        found = "no description" if len(parts) < 2 or not parts[1].strip() else f"{len(parts)} columns after its id"
        raise ActionableError(f"{path}: query {qid} has {found}: modular_clir.collection.query_text = "
                              f"'title_description' reads id<TAB>title<TAB>description lines (a tab inside a title "
                              f"or description must be replaced by a space)")
    return " ".join(parts)


IR_DATASETS = "ir_datasets"


def _export_language(spec: Mapping[str, Any], docs: str, queries: str, qrels: str, scratch: Path) -> dict[str, Any]:
    """One language of an ir_datasets collection, by ``peftir.data.export`` (a licensed dataset's missing copy
    named by its ``licence``). Without ``doc_fields`` it is a query language only (NeuCLIR's English topics have
    no English documents): its queries, no documents and no qrels."""
    if "doc_fields" in spec:        # no list of the empty documents: the language's index info names them
        return export_dataset(spec, docs, scratch / "lookup.sqlite", None, queries, qrels, scratch / "info.json")
    topics, _ = queries_and_qrels(spec)
    _write_docs(docs, [])
    write_topics(queries, topics)
    write_qrels(qrels, {})
    return {"irds": spec["irds"], "query_field": spec["query_field"], "docs": 0, "queries": len(topics)}


def export_irds_collection(settings: Mapping[str, Any], languages: list[str], docs: dict[str, str],
                           queries: dict[str, str], qrels: dict[str, str], folds: str, info: str) -> None:
    """A public cross-lingual collection from ir_datasets (e.g. NeuCLIR 2022: English topics, their human
    translations, Russian documents), where CLEF-2003 is licensed: per language of ``settings["languages"]``,
    the queries of its dataset (``irds``, ``query_field``) and, with ``doc_fields``, its documents and the
    qrels of those queries on them. Topics keep their ids across languages, so a pair's queries are judged by
    the document language's qrels. Every query is a test query (the rankers learn from MS MARCO)."""
    specs = settings.get("languages") or {}
    missing = [lang for lang in languages if lang not in specs]
    if missing:
        raise ActionableError(f"{IR_DATASETS} collection: no modular_clir.collection.languages entry for {missing}")
    Path(info).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(info).parent) as scratch:    # export's lookups: not kept
        described = {lang: _export_language(specs[lang], docs[lang], queries[lang], qrels[lang],
                                            Path(scratch) / lang) for lang in languages}
    qids = set().union(*(read_topics(queries[lang]) for lang in languages))
    write_folds(folds, _every_query_a_test_query(IR_DATASETS, qids, "every query a test query"))
    write_json(info, {"dataset": IR_DATASETS, "languages": languages, "per_language": described})


def make_test_collection(settings: Mapping[str, Any], packages: dict[str, str], pins: Mapping[str, str],
                         languages: list[str], docs: dict[str, str], queries: dict[str, str], qrels: dict[str, str],
                         folds: str, info: str) -> None:
    """The ``clir_collection`` rule: the debian-reference collection built from its packages (each checked against
    its pin in ``pins``), a public one exported from ir_datasets, or local files (``files``: the licensed
    CLEF-2003, converted by the user)."""
    if settings["source"] == "debian-reference":
        check_pinned(packages.values(), pins)
        build_clir_collection(packages, languages, settings["query_field"], settings["test_queries"],
                              settings["valid_queries"], settings["seed"], docs, queries, qrels, folds, info)
    elif settings["source"] == IR_DATASETS:
        export_irds_collection(settings, languages, docs, queries, qrels, folds, info)
    else:
        copy_local_collection(settings, languages, docs, queries, qrels, folds, info)

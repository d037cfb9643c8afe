"""The user's machine translations of a language pair's test queries: the modular CLIR paper's NMT + BM25 row.

Litschko et al.'s Table 1 baseline translates each query into the document language (EasyNMT's m2m_100_418M)
and ranks the documents with BM25. No translation model installs here, so the translations come as a file per
pair (``modular_clir.translations``: ``qid<TAB>translated text``, one query a line). A translation that is
missing or malformed would silently lower the row's MAP (the query scores 0), so the file is checked before any
job: every line well formed, each query translated once, every test query of the pair translated (a missing one
named by the line of the queries file that holds it).
"""
from __future__ import annotations

import os
from typing import Collection, Mapping

from ..data.trec import MalformedFileError, check_id

Translations = dict[str, tuple[str, int]]      # query id → (translated text, its line)


def read_translations(path: str | os.PathLike) -> Translations:
    """Each query id's translation and its line; a line that is not UTF-8 ``qid<TAB>text`` or a query translated
    twice is a MalformedFileError naming file and line."""
    found: Translations = {}
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}, line {number}"
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise MalformedFileError(f"{where}: not UTF-8 text") from None
            if not line.strip():
                continue
            qid, tab, text = line.partition("\t")
            if not tab or not text.strip():
                raise MalformedFileError(f"{where}: expected query id<TAB>translated text: {line!r}")
            check_id("query", qid, where)
            if qid in found:
                raise MalformedFileError(f"{where}: query {qid!r} is translated twice (first on line {found[qid][1]})")
            found[qid] = (text.strip(), number)
    return found


def query_lines(path: str | os.PathLike) -> dict[str, int]:
    """Each query id of a ``qid<TAB>text`` queries file and its line (what a missing translation is named by)."""
    with open(path, encoding="utf-8") as handle:
        return {line.split("\t", 1)[0]: number for number, line in enumerate(handle, start=1) if line.strip()}


def untranslated(translations: Mapping[str, tuple[str, int]], path: str | os.PathLike, queries: str | os.PathLike,
                 test: Collection[str]) -> str | None:
    """Why the translations read from ``path`` leave test queries of the pair out (the ``test`` ids that the query
    language's ``queries`` file holds), naming the first three by file and line; None when every one is there."""
    lines = query_lines(queries)
    tested = [qid for qid in test if qid in lines]
    missing = sorted((qid for qid in tested if qid not in translations), key=lines.__getitem__)
    if not missing:
        return None
    named = ", ".join(f"{qid!r} ({queries}, line {lines[qid]})" for qid in missing[:3])
    return (f"{path}: no translation of test query {named}{' ...' if len(missing) > 3 else ''} "
            f"({len(missing)} of the pair's {len(tested)} test queries untranslated)")

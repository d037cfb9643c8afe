"""NMT + BM25 (the modular CLIR paper's Table 1 baseline): BM25 of the queries translated into the documents'
language, from the user's translations (``peftir.clir.translations``; no translation model installs here).

The authors' ``bm25_eval.py`` translates with EasyNMT and searches with pyserini's BM25 and the document
language's analyzer; here Anserini (pyserini's jar) searches the index the BM25 pre-ranker reads
(``peftir.retrieval.anserini``), with its k1, b and depth, so the row differs from the BM25 pre-ranker's
(Tables 2-3) only in the query text.
"""
from __future__ import annotations

from ..data import trec
from .translations import read_translations, untranslated
from ..errors import ActionableError
from .contract import TRANSLATIONS
from ..provenance.records import sha256

TAG = "nmt-bm25"


def nmt_bm25_clir(settings: dict, pair: str, translations: str, queries: str, folds: str, index: str, threads: int,
                  run: str, metadata: str) -> None:
    """The ``nmt_bm25_clir`` rule: the pair's test queries, as the user translated them, ranked by BM25 on the
    document language's index (``settings``: k1, b, depth, analyzer) into a TREC run, with its ir_metadata naming
    the translations file and its sha256. A test query without a translation stops the job before any search."""
    from ..data.folds import read_folds, rotation
    from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
    from .contract import CLIR_FOLD
    from ..retrieval.anserini import search

    test = rotation(read_folds(folds), CLIR_FOLD)["test"]
    found = read_translations(translations)
    problem = untranslated(found, translations, queries, test)
    if problem:
        raise ActionableError(f"{problem}; translate them into the documents' language ({TRANSLATIONS}.{pair})")
    topics = {qid: found[qid][0] for qid in trec.read_topics(queries, set(test))}
    search(index, topics, run, k1=settings["k1"], b=settings["b"], hits=settings["depth"], threads=threads,
           language=settings["analyzer"])
    method = {"retrieval": "BM25 (Anserini, the documents' analyzer) of the user's query translations", **settings,
              "translations": {"file": str(translations), "sha256": sha256(translations)}}
    write_ir_metadata(metadata, ir_metadata(TAG, method, {"name": f"modular-clir/{pair}"}))

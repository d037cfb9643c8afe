"""A composed CLIR reranker's run re-derived from its modules for ``peftir audit --rescore N``: N of the pair's
test queries (a sample fixed by the run's path) reranked again by the same composition of the stored ranking and
language modules with the job's own code (``reranker.composed_scores``); every document and score must be the run
file's."""
from __future__ import annotations

from pathlib import Path

from ..retrieval.rescored import Rescored, precision_of, precision_ran, sample_queries
from ..data import trec
from .contract import composed_languages, pair_languages
from .reranker import composed_scores


def rescore_clir_run(run_path: str, record: dict, queries: int) -> Rescored:
    """The run ``run_path`` (made by ``record``, a ``rerank_clir`` job's) re-derived on ``queries`` of its test
    queries: ``searched`` holds each sampled query's reranked documents."""
    inputs = {name: list(files) for name, files in record["inputs"].items()}
    params, wildcards = record["params"], record["wildcards"]
    system, settings = params["clir_system"], params["clir_rerank"]
    query, doc = pair_languages(wildcards["pair"])
    by_language = {Path(path).name: path for path in inputs.get("language_modules", [])}   # records keep no list order
    languages = composed_languages(system["language"], doc if settings.get("translated_query") else query, doc)
    stored = trec.read_run(run_path)
    topics = trec.read_topics(inputs["queries"][0])
    scores, execution = composed_scores(
        inputs["backbone"][0] if "backbone" in inputs else params["clir_backbone_name"], system,
        inputs["ranking_module"][0], [by_language[language] for language in languages], wildcards["pair"],
        inputs["queries"][0], inputs["docs"][0], inputs["prerank"][0], inputs["folds"][0], settings,
        params["execution"], 1, sample=lambda test: sample_queries(run_path, stored, {q: topics[q] for q in test
                                                                                      if q in topics}, queries))
    return Rescored(scores, ran=precision_ran(record), used=precision_of(execution))

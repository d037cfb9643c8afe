"""The Semi-Siamese sections' relations (experiment, datasets, ranker, methods, training, rerank): what a ranker's
lengths, depths, batches and folds must fit in. Checked before any job (``peftir.pipeline.relations``)."""
from __future__ import annotations

from typing import Iterator

from ..contract.relations import (FROM_BM25, QUERIES, Derived, Layer, Relation, Scope, Section, cutoffs, depth,
                                  queries, room, summed)

ROOM, DEPTH = room("backbone.name"), depth("backbone.name")
VALID_QUERIES = Derived("queries(dataset.splits.valid)", queries("dataset.splits.valid"))


def _datasets(config: dict) -> Iterator[Scope]:
    """Each dataset's own ``training`` over the section's."""
    for name, spec in config["datasets"].items():
        yield Scope(config, (Layer("training", f"datasets.{name}.training", spec.get("training", {})),
                             Layer("dataset", f"datasets.{name}", spec)))


SECTION = Section("experiment", "experiment, datasets, ranker, methods, training, rerank (Semi-Siamese; a dataset's "
                  "`training` overrides)", (
    Relation("ranker.max_query_len", "ranker.max_seq_len", "[CLS], two [SEP] and one document token", slack=4),
    Relation("ranker.max_seq_len", ROOM, "the backbone's position embeddings"),
    Relation(Derived("methods.prompt.length + ranker.max_query_len",
                         summed("methods.prompt.length", "ranker.max_query_len")), "ranker.max_seq_len",
             "prompts take their positions from the sequence; the query, [CLS], two [SEP] and a document token "
             "need the rest", slack=4),
    Relation("methods.ss_prefix.common_length", "methods.prefix.length",
             "the concat variant keeps the rest of the positions role-specific", strict=True),
    Relation("backbone.layers", DEPTH, "more would add untrained layers"),
    Relation("rerank.depth", "bm25.depth", "the candidates it reranks"),
    Relation("training.train_depth", "bm25.depth", FROM_BM25),
    Relation("training.micro_batch", "training.batch_size", "micro-batches split a batch"),
    Relation("training.batch_size", "training.pairs_per_epoch", "an epoch holds at least one batch"),
    Relation(Derived("cutoffs(experiment.metrics)", cutoffs("experiment.metrics")), "bm25.depth",
             "a ranking ends at the BM25 candidates"),
    Relation("dataset.folds.n", QUERIES, "each fold tests at least one query"),
    Relation("dataset.validation_sample.queries", VALID_QUERIES, "a sample of the validation queries"),
), _datasets)

"""First-stage retrieval: Anserini indexes and BM25 runs (with its language analyzers), and the cross-lingual
dense pre-ranker (``multilingual_dense``)."""

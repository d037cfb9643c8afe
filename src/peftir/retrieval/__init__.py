"""First-stage retrieval: Anserini indexes and BM25 runs."""

"""Neural rankers: the backbone, monoBERT / TwinBERT / ColBERT, their inputs, and reranking with them; the modular
CLIR system's cross-encoder composed from language and ranking modules (``modular_reranker``)."""

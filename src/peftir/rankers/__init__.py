"""Neural rankers: the backbone, monoBERT / TwinBERT / ColBERT, their inputs, and reranking with them."""

"""Modular cross-lingual rerankers (Litschko et al.): the embedded corpora and test collection built from Debian
packages, language modules (adapters, sparse fine-tuning masks), ranking modules, the composed reranker, the
pre-rankers (multilingual dense, BM25 of translations) and the system's tables and figure."""

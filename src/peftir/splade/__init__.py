"""Learned sparse retrieval (Adapters-SPLADE, Pal et al. 2023): the SPLADE encoder and its fine-tuning methods,
its losses and regularisers, training (``train``), impact search with Anserini (``search``, ``impact``), the
MarginMSE teacher and Table 7's cross-encoder rerankers."""

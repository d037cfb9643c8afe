"""Learned sparse retrieval (Adapters-SPLADE, Pal et al. 2023): the SPLADE encoder and its fine-tuning methods,
its losses and regularisers, and impact search with Anserini."""

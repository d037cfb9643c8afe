"""Semi-Siamese rankers (Jung et al.): monoBERT / TwinBERT / ColBERT (``rankers``) with their PEFT methods
(``methods``: prefix, LoRA, their Semi-Siamese forms and hybrids), CEDR's training loop (``loop``,
``train_ranker``), reranking BM25's candidates (``rerank``) and the untrained backbone's reference row
(``zero_shot``)."""

"""Training: the paper's loop (loss, triples, epochs), checkpoints to resume, and the `train` rule's job; for the
modular CLIR system, fixed-step training (``steps``), MLM data (``mlm``) and ranking modules (``ranking_module``)."""

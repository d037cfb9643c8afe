"""Training: the paper's loop (loss, triples, epochs), checkpoints to resume, and the `train` rule's job."""

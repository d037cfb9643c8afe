"""Semi-Siamese fine-tuning methods: one builder module per kind (full, prompt, prefix, lora, ss_prefix, ss_lora),
composed by ``peftir.semi_siamese.configured.apply`` as the configured method says."""

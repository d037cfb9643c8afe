"""Fine-tuning methods: one builder module per kind (full, prompt, prefix, lora, ss_prefix, ss_lora),
composed by ``attach.apply`` as ``peftir.layout.resolve_method`` says; ``learned``: what a run saves.
The modular CLIR system's modules: AdapterHub language and ranking adapters (``modular``) and sparse
fine-tuning masks (``sparse_fine_tuning``)."""

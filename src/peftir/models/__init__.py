"""Models every system builds on: backbones by name (``backbone``, ``pretrained``: a hub name, an embedded
model or ``pretrained:<run>``), the inputs a model reads (``inputs``), the multilingual encoder the modular CLIR
system expands from its 4-bit weights (``multilingual_e5``) and what a trained run saves (``learned``)."""

"""Pretraining runs (Condenser, coCondenser, RIP, deep-prompt pretraining): backbones any stage can name as
``pretrained:<run>``."""

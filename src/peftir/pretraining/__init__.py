"""Pretraining: backbones and language modules built before any ranker is trained."""

"""Evaluation: metrics with ir_measures and the paper's significance test."""

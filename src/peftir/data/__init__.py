"""Data: collections exported from ir_datasets, query folds, and the TREC file formats stages exchange."""

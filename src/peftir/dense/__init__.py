"""Dense retrieval (DPTDR, Tang et al.; Condenser and coCondenser, Gao & Callan): pretraining runs, retrievers
fine-tuned or deep-prompt-tuned, mined negatives, faiss search, representation geometry and attention entropy."""

"""BM25 with RM3 query expansion (Abdul-Jaleel et al., TREC 2004; Anserini's ``-rm3``) against BM25 on one
collection: a system of PEFT-IR Repro that ships in its own package (``tests/toy_system``), registered through the
``peftir.systems`` entry point, so that adding a system is shown to need no edit of the workflow's checkout."""
from pathlib import Path

HERE = Path(__file__).resolve().parent         # its rules file, schema fragment, scripts and reported numbers

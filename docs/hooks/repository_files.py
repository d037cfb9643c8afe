"""MkDocs hook: repository files that a page shows but that live outside ``docs/`` (one copy, in the repository),
added to the site under ``assets/`` when it is built."""
from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[2]
FILES = {"assets/learning_curve.png": "benchmarks/learning_curve.png",   # site path: repository path
         "assets/report_page.png": "benchmarks/report_page.png"}


def on_files(files, config):   # MkDocs' hook signature
    for uri, source in FILES.items():
        files.append(File.generated(config, uri, abs_src_path=str(REPO / source)))
    return files

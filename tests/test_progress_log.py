"""How far a long job is, in its log (peftir.progress_log): lines with the rate and the time left, at the interval
asked; statements left out of the code version, so adding them to a job's code reruns nothing."""
import ast
import datetime
import re
from pathlib import Path

import pytest

from peftir import progress_log
from peftir.provenance.code_version import digest

SRC = Path(__file__).resolve().parents[1] / "src" / "peftir"


def test_a_line_says_the_rate_the_time_left_and_when_the_stage_ends():
    now = datetime.datetime(2026, 11, 29, 11, 0, tzinfo=datetime.timezone.utc)
    line = progress_log.line("training steps", 1200, 34400, 520.0, "steps", now)
    assert line.startswith("[progress] training steps: 1200/34400 steps (3 %), 2.31 steps/s, 08:40 elapsed, ")
    left = 520.0 * (34400 - 1200) / 1200
    assert f"{datetime.timedelta(seconds=int(left))} left" in line
    assert line.endswith(f"ends about {now + datetime.timedelta(seconds=left):%Y-%m-%d %H:%M} UTC")
    unknown = progress_log.line("exporting the documents", 5000, None, 10.0, "documents")
    assert unknown == "[progress] exporting the documents: 5000 documents, 500.00 documents/s, 00:10 elapsed"


def _lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("[progress]")]


def test_lines_come_at_the_interval_asked_with_one_at_the_start_and_the_end(monkeypatch, capsys):
    monkeypatch.setenv(progress_log.INTERVAL_ENV, "3600")
    progress_log.start("scoring", 1000, "candidates")
    for _ in range(1000):
        progress_log.advance("scoring")
    progress_log.finish("scoring")
    lines = _lines(capsys)
    assert len(lines) == 2 and "0/1000 candidates" in lines[0] and "1000/1000 candidates (100 %)" in lines[1]

    monkeypatch.setenv(progress_log.INTERVAL_ENV, "0")
    progress_log.start("scoring", 3, "candidates")
    for _ in range(3):
        progress_log.advance("scoring")
    assert [re.search(r"(\d)/3", line).group(1) for line in _lines(capsys)] == ["0", "1", "2", "3"]
    progress_log.finish("scoring")


def test_a_total_that_cannot_be_had_leaves_the_stage_without_one(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv(progress_log.INTERVAL_ENV, "0")

    def unknown() -> int:
        raise FileNotFoundError("no metadata")

    monkeypatch.setenv(progress_log.INTERVAL_ENV, "every minute")       # not a number: the default, no failure
    progress_log.start("exporting", unknown, "documents")
    progress_log.advance("exporting", 2)
    progress_log.finish("exporting")
    assert all("left" not in line for line in _lines(capsys))
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"id": "1"}\n{"id": "2"}\n{"id": "3"}\n')
    progress_log.start("encoding", progress_log.lines_of(corpus), "documents")
    assert "0/3 documents" in _lines(capsys)[0]
    progress_log.finish("encoding")


def _users() -> list[Path]:
    """The package's modules that import peftir.progress_log (a statement at the start of a line)."""
    return sorted(path for path in SRC.rglob("*.py")
                  if re.search(r"^from \.\. import progress_log$", path.read_text(), re.M))


def test_the_long_jobs_report_progress():
    """Training, export, encoding and search, reranking, mining, answer judgments, the CLIR language corpus and the
    pretraining text all say how far they are."""
    names = {str(path.relative_to(SRC)) for path in _users()}
    assert names >= {"training/steps.py", "semi_siamese/loop.py", "semi_siamese/rerank.py", "data/export.py",
                     "dense/search.py", "splade/search.py", "evaluation/answers.py", "clir/reranker.py",
                     "clir/multilingual_text.py", "dense/negative_mining.py", "retrieval/faiss_index.py",
                     "data/pretraining_text.py"}


@pytest.mark.parametrize("module", _users(), ids=lambda path: str(path.relative_to(SRC)))
def test_progress_statements_leave_the_code_version_as_it_was(module, tmp_path):
    """Each module's digest equals that of the same module with its progress_log lines removed: adding them
    reran no job, and changing them reruns none."""
    source = module.read_text()
    stripped = "\n".join(line for line in source.splitlines() if "progress_log" not in line)
    ast.parse(stripped)
    (tmp_path / "with.py").write_text(source)
    (tmp_path / "without.py").write_text(stripped)
    assert source != stripped
    assert digest(tmp_path / "with.py") == digest(tmp_path / "without.py")


def test_only_statements_that_log_are_left_out(tmp_path):
    """A progress call whose value the code keeps, or the module imported under another name, counts."""
    base = "from .. import progress_log\nx = 1\n"
    for kept in ("y = progress_log.start('a', 1)\n", "from .. import progress_log as shown\n",
                 "progress_log.start('a', 1)\nz = 2\n"):
        (tmp_path / "base.py").write_text(base)
        (tmp_path / "kept.py").write_text(base + kept)
        assert digest(tmp_path / "base.py") != digest(tmp_path / "kept.py"), kept
    (tmp_path / "logged.py").write_text(base + "progress_log.advance('a', len([1, 2]))\n")
    assert digest(tmp_path / "base.py") == digest(tmp_path / "logged.py")

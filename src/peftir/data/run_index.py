"""A run file read one query at a time, on demand: where each query's lines are, not what they hold.

Training jobs draw their negatives and candidates from runs of every training query (MS MARCO: 503 k queries ×
depth 1,000, 500 M lines, 25 GB), which no dict of dicts holds. One pass records, for the queries a job wants,
where their lines start in the file and how many bytes they take (runs are written a query at a time:
Anserini's, and every run this pipeline writes); ``top`` then reads one query's lines back. The pass also
lets the caller look at each query's documents as it goes (``visit``), so a job that needs a fact of every
query (does it have a negative?) reads the file once.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Collection

from .trec import MalformedFileError, parse_run_line, ranked

Ranked = list[tuple[str, float]]          # a query's documents, best first


class RunIndex:
    """The byte span of each wanted query's lines in a run file grouped by query."""

    def __init__(self, path: str | Path, qids: Collection[str] | None = None,
                 visit: Callable[[str, Ranked], None] | None = None) -> None:
        """Index the queries ``qids`` (all when None) of ``path``; ``visit(qid, ranked documents)`` once for each."""
        self.path = Path(path)
        self.spans: dict[str, tuple[int, int]] = {}
        wanted = None if qids is None else set(qids)
        seen: set[str] = set()
        current, start, lines = None, 0, []
        offset = 0

        def close(end: int) -> None:
            if current is not None and (wanted is None or current in wanted):
                self.spans[current] = (start, end - start)
                if visit is not None:
                    visit(current, ranked(dict(lines)))

        with open(self.path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if raw.strip():
                    qid, docid, score = parse_run_line(raw.decode("utf-8"), f"{self.path}, line {number}")
                    if qid != current:
                        close(offset)
                        if qid in seen:
                            raise MalformedFileError(f"{self.path}: the lines of query {qid} are not together")
                        seen.add(qid)
                        current, start, lines = qid, offset, []
                    if wanted is None or qid in wanted:
                        lines.append((docid, score))
                offset += len(raw)
        close(offset)

    def __contains__(self, qid: str) -> bool:
        return qid in self.spans

    def top(self, qid: str, depth: int | None = None) -> Ranked:
        """The query's documents, best first (ties as trec_eval breaks them: ``trec.ranked``), its top ``depth``
        when given; none for a query not in the run."""
        if qid not in self.spans:
            return []
        start, size = self.spans[qid]
        with open(self.path, "rb") as handle:
            handle.seek(start)
            text = handle.read(size).decode("utf-8")
        documents = ranked({docid: score for _, docid, score in
                            (parse_run_line(line, f"{self.path}, query {qid}") for line in text.splitlines()
                             if line.strip())})
        return documents if depth is None else documents[:depth]

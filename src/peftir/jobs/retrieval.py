"""Jobs of the `index` and `bm25` rules: Anserini indexing and BM25 retrieval."""
from __future__ import annotations

import sys
from pathlib import Path

from .. import bm25, provenance
from ..runner import Job


def index(job: Job) -> None:
    bm25.build_index(Path(job.input["docs"]).parent, job.output["index"], threads=job.threads, log=sys.stderr)


def search(job: Job) -> None:
    settings = job.params["bm25"]
    header = provenance.ir_metadata("bm25", {"retrieval": "BM25 (Anserini, Lucene analyzer)", **settings},
                                    {"name": job.wildcards["dataset"]}, job.source)
    bm25.search(job.input["index"], job.input["queries"], job.output["run"], k1=settings["k1"], b=settings["b"],
                hits=settings["depth"], threads=job.threads, log=sys.stderr, header=header)

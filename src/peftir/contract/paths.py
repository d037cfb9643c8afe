"""Where the artefacts every system shares live: a dataset's exported files, its BM25 index and run, the
crates, the logs; and how a backbone names a pretraining run (``pretrained:<run>``), which any system's backbone may.

Each system's own artefacts are in its ``contract`` module (``peftir.<system>.contract``); the application joins
them (``peftir.pipeline.contract``)."""
from __future__ import annotations

from dataclasses import dataclass

RESULTS = "results"
PRETRAINED = "pretrained:"              # the backbone ``pretrained:<run>``: a pretraining run's checkpoint
PRETRAINED_DIR = "results/pretrained"   # where those checkpoints are (PATHS.pretrained)
MLM_HEAD_RUN = "base/mlm-head"          # ``pretrained:base/mlm-head``: the pretraining backbone, its MLM head fitted


def pretrained_run(name: str) -> str | None:
    """The pretraining run a backbone name names (``pretrained:condenser`` → ``condenser``), else None."""
    return name[len(PRETRAINED):] if name.startswith(PRETRAINED) else None


@dataclass(frozen=True)
class CorePaths:
    """Path patterns of the artefacts the systems share (Snakemake wildcards in braces)."""

    docs: str = "results/data/{dataset}/corpus/docs.jsonl"
    # beside corpus/, not in it (Anserini reads every file there): each id's line of docs.jsonl, and the ids of the
    # documents with no text (``peftir.data.empty_documents``)
    docs_lookup: str = "results/data/{dataset}/docs.lookup.sqlite"
    empty_docs: str = "results/data/{dataset}/empty-docs.txt"
    queries: str = "results/data/{dataset}/queries.tsv"
    qrels: str = "results/data/{dataset}/qrels.txt"
    export_info: str = "results/data/{dataset}/info.json"
    answers: str = "results/data/{dataset}/answers.jsonl"    # each question's answers (datasets.<name>.answers)
    folds: str = "results/data/{dataset}/folds.json"
    triples: str = "results/data/{dataset}/triples.tsv"       # fixed training triples (MS MARCO), if any
    index: str = "results/index/{dataset}"
    bm25_run: str = "results/runs/{dataset}/bm25.run"
    bm25_run_metadata: str = "results/runs/{dataset}/bm25.ir_metadata.yaml"
    # the backbone ``pretrained:<run>`` any system may name (made by the dense system's pretraining rules)
    pretrained: str = f"{PRETRAINED_DIR}/{{pretrained}}"     # the backbone ``pretrained:<run>``
    pretrained_summary: str = f"{PRETRAINED_DIR}/{{pretrained}}.json"
    crate: str = "results/crates/{report}.crate.zip"     # a table's or figure's Workflow Run RO-Crate
    # a table's companions: its scorecard against what the paper printed, its significance as the field asks for it
    scorecard_tex: str = "results/tables/{report}.repro.tex"
    scorecard_json: str = "results/tables/{report}.repro.json"
    scorecard_csv: str = "results/tables/{report}.repro.csv"
    scorecard_pdf: str = "results/figures/{report}.repro.pdf"
    scorecard_png: str = "results/figures/{report}.repro.png"
    significance_tex: str = "results/tables/{report}.significance.tex"
    significance_json: str = "results/tables/{report}.significance.json"
    significance_csv: str = "results/tables/{report}.significance.csv"
    report_page: str = "results/report/index.html"      # every table with its companions, and the figures


CORE = CorePaths()


def log(rule: str, key: str) -> str:
    """A rule's log: ``results/logs/<rule>/<key>.log`` (key: the output's wildcards, e.g. ``RUN``)."""
    return f"{RESULTS}/logs/{rule}/{key}.log"

"""The paper configuration at full scale, planned without data: job counts per table, licensed inputs.

The licensed collections are stood in for by files in their real layout (where ir_datasets looks for
them, named as on the distributed disks), so the same checks that a user's copy meets run here.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAPER = ("--configfile", str(REPO / "config.yaml"), str(REPO / "config/paper.yaml"))
FOLDS_AND_SEEDS = (5 + 5 + 1) * 3          # Robust04, ClueWeb09b: 5 folds; MS MARCO: its split; 3 seeds
# Training jobs per target (README, "The paper configuration"): rankers × rows' methods × folds × seeds.
PLANNED = {
    "results/tables/table3.tex": 1 * 7 * FOLDS_AND_SEEDS,                 # monoBERT: full FT + 6 LFT
    "results/tables/table4.tex": 2 * 7 * FOLDS_AND_SEEDS,                 # TwinBERT, ColBERT
    "results/tables/table5.tex": 2 * (7 + 4) * FOLDS_AND_SEEDS,           # Table 4's 7 (LFT best) + 4 SS = 726
    "results/tables/table6.tex": 2 * 5 * FOLDS_AND_SEEDS,                 # full, prefix, 3 SS prefix variants
    "results/tables/table7.tex": 2 * 5 * FOLDS_AND_SEEDS,                 # full, LoRA, 3 SS LoRA variants
    "results/figures/figure4.pdf": 3 * 4 * FOLDS_AND_SEEDS,               # prefix, LoRA, concurrent, prefix→LoRA
    "all_tables": (3 * 7 + 2 * (4 + 2 + 2) + 3 * 1) * FOLDS_AND_SEEDS,   # every distinct run: 1,320
}
TREC_DOC = "<DOC>\n<DOCNO> {docno} </DOCNO>\n<TEXT>\nText of {docno}.\n</TEXT>\n</DOC>\n"
# TREC disks 4 & 5 as distributed (the CR collection is not part of Robust04): one file per collection here
DISKS45 = {"FBIS/FB396001": "FBIS3-1", "FR94/01/FR940104.0": "FR940104-0-00001", "FT/FT911/FT911_1": "FT911-1",
           "LATIMES/LA010189": "LA010189-0001"}


@pytest.fixture(scope="module")
def licensed_home(tmp_path_factory):
    """An ir_datasets home holding disks 4 & 5 and ClueWeb09 stand-ins in their real layout."""
    home = tmp_path_factory.mktemp("irds-licensed")
    for name, docno in DISKS45.items():
        path = home / "disks45" / "corpus" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(TREC_DOC.format(docno=docno))
    warc = home / "clueweb09" / "corpus" / "ClueWeb09_English_1" / "en0000" / "00.warc.gz"
    warc.parent.mkdir(parents=True)
    warc.write_bytes(b"")
    return home


def _env(home: Path) -> dict:
    return {**os.environ, "IR_DATASETS_HOME": str(home)}


def dry_run(workdir: Path, target: str, home: Path) -> tuple[dict[str, int], float]:
    """Jobs per rule that ``snakemake -n`` plans for ``target`` on the paper configuration, and its wall time."""
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile",
                             str(REPO / "Snakefile"), "--directory", str(workdir), *PAPER, "--", target],
                            capture_output=True, text=True, env=_env(home))
    took = time.monotonic() - start
    assert result.returncode == 0, result.stderr[-3000:]
    counts = {line.split()[0]: int(line.split()[1]) for line in result.stdout.splitlines()
              if len(line.split()) == 2 and line.split()[1].isdigit()}
    return counts, took


@pytest.mark.parametrize("target", PLANNED)
def test_the_paper_configuration_plans_the_documented_jobs(target, licensed_home, tmp_path):
    counts, took = dry_run(tmp_path, target, licensed_home)
    print(f"{target}: {counts['train']} training jobs planned in {took:.1f} s")
    assert counts["train"] == counts["rerank"] == counts["evaluate"] == PLANNED[target]
    assert counts["download"] == counts["folds"] == counts["index"] == counts["bm25"] == 3
    assert counts["triples"] == 1                     # MS MARCO's training triples, made once
    assert "train_first_stage" not in counts          # m = epochs: the hybrids reuse the standalone runs


def test_the_licensed_copies_are_found_where_ir_datasets_reads_them(licensed_home):
    code = ("import json, sys; from peftir.data.export import check_available; "
            "print(json.dumps([check_available(spec) for spec in json.loads(sys.argv[1])]))")
    specs = [{"irds": "disks45/nocr/trec-robust-2004", "licence": "TREC disks 4 and 5"},
             {"irds": "clueweb09/catb", "licence": "ClueWeb09"}]
    done = subprocess.run([sys.executable, "-c", code, json.dumps(specs)], capture_output=True, text=True,
                          env=_env(licensed_home), check=True, timeout=60)
    assert json.loads(done.stdout) == [None, None]
    empty = subprocess.run([sys.executable, "-c", code, json.dumps(specs)], capture_output=True, text=True,
                           env=_env(licensed_home / "elsewhere"), check=True, timeout=60)
    messages = json.loads(empty.stdout)
    assert "disks45/corpus" in messages[0] and "clueweb09/corpus" in messages[1]


def test_a_partial_copy_of_a_licensed_collection_is_named_without_a_traceback(licensed_home, tmp_path):
    """ir_datasets reads the copy (its own TREC parser) and finds 4 of the 2,295 files of disks 4 & 5."""
    code = ("import sys; from pathlib import Path; from peftir.data.export import export_dataset; "
            "out = Path(sys.argv[1]); "
            "export_dataset({'irds': 'disks45/nocr/trec-robust-2004', 'query_field': 'title', "
            "'doc_fields': ['title', 'body'], 'licence': 'TREC disks 4 and 5'}, out / 'docs.jsonl', "
            "out / 'lookup.sqlite', out / 'empty-docs.txt', out / 'queries.tsv', out / 'qrels.txt', "
            "out / 'info.json')")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], capture_output=True, text=True,
                          env=_env(licensed_home), timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("peftir.data.export.MissingDataError: disks45/nocr/trec-robust-2004: the copy of "
                           "TREC disks 4 and 5 at ")
    assert "found 4 files of the expected 2295" in last
    assert not (tmp_path / "out" / "docs.jsonl").exists() and not (tmp_path / "out" / "lookup.sqlite").exists()

"""What bf16 autocast does to a table's numbers: one paper configuration's scale model built in fp32 and in bf16.

    .venv/bin/python benchmarks/bf16_effect.py                 # config/paper.yaml (Semi-Siamese), about 25 min
    .venv/bin/python benchmarks/bf16_effect.py --paper splade-adapters

The Semi-Siamese paper trained in fp32; its configuration here runs bf16 autocast on GPUs (`execution.precision`), a
named choice for speed. Without a GPU, ``PEFTIR_CPU_BF16=1`` gives the same autocast on the CPU (the encoder in bf16,
heads, scores and losses in fp32). The script builds the paper's scale model (``tests/scale_model.py``: every table,
tiny models, one seed, three folds) twice from the same clone, fp32 then bf16, and compares every metric cell of
every table's JSON twin (the "Improvement (%)" cells left out): how many differ, the largest and the median absolute
difference, and how many cells' significance stars moved. Results go to ``results/benchmarks/bf16_effect.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = Path("results/benchmarks/bf16_effect.json")


def cells(table: Path) -> list[dict] | None:
    """A result table's cells (its JSON twin: one dict per cell with its value, printed text and stars); None for
    what is not one (a scorecard, a significance companion)."""
    found = json.loads(table.read_text()) if table.exists() else None
    if isinstance(found, list) and found and all(isinstance(cell, dict) and "value" in cell for cell in found):
        return found
    return None


def build(paper: str, workdir: Path, bf16: bool) -> list[Path]:
    sys.path.insert(0, str(REPO / "tests"))
    from test_scale_models import built_tables, clone, run_scale_model

    if bf16:
        os.environ["PEFTIR_CPU_BF16"] = "1"
    else:
        os.environ.pop("PEFTIR_CPU_BF16", None)
    workdir.mkdir(parents=True, exist_ok=True)
    root = clone(workdir)
    _, _, result, seconds = run_scale_model(paper, root, shaped=False)     # every cell of every table
    if result.returncode:
        raise SystemExit(result.stderr[-4000:])
    print(f"{'bf16' if bf16 else 'fp32'}: {seconds:.0f} s", flush=True)
    return [table.with_suffix(".json") for table in built_tables(root)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paper", default="semi-siamese", help="a scale model of tests/test_scale_models.py")
    parser.add_argument("--workdir", type=Path, default=Path("results/benchmarks/bf16_effect"))
    args = parser.parse_args()
    fp32 = build(args.paper, args.workdir.resolve() / "fp32", False)
    bf16 = build(args.paper, args.workdir.resolve() / "bf16", True)
    report = {"paper": args.paper, "tables": []}
    for before, after in zip(fp32, bf16):
        old, new = cells(before), cells(after)
        if old is None or new is None:
            continue
        pairs = [(a, b) for a, b in zip(old, new) if isinstance(a["value"], (int, float))
                 and isinstance(b["value"], (int, float)) and not str(a["printed"]).endswith("%")]
        differences = [abs(a["value"] - b["value"]) for a, b in pairs]
        changed = [d for d in differences if d > 0]
        row = {"table": f"{before.parent.name}/{before.stem}", "metric_cells": len(pairs), "changed": len(changed),
               "printed_changed": sum(a["printed"] != b["printed"] for a, b in pairs),
               "max_abs_difference": max(differences, default=0.0),
               "median_abs_difference_of_changed": statistics.median(changed) if changed else 0.0,
               "mean_fp32": statistics.fmean(a["value"] for a, _ in pairs) if pairs else 0.0,
               "stars_changed": sum(a.get("stars") != b.get("stars") for a, b in zip(old, new))}
        report["tables"].append(row)
        print(json.dumps(row), flush=True)
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

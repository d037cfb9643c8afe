"""The ``peftir`` command: ``peftir audit results/tables/table5.tex [--cell ID ...]``."""
from __future__ import annotations

import argparse
import os
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="peftir", description="PEFT-IR Repro utilities")
    commands = parser.add_subparsers(dest="command", required=True)
    audit = commands.add_parser(
        "audit", help="walk every cell of a table back to its runs and re-check it",
        description="Re-hash every file behind a table's cells, recompute each metric with ir_measures and "
                    "each t-test with scipy, check printed values, stars, improvements, and the params and "
                    "code versions against the config files and the checkout, and print the chain commit → "
                    "config → weights → run → metric → cell. Exits 0 only if everything matches; otherwise "
                    "1, naming the first cell and file that does not (2: bad arguments).")
    audit.add_argument("table", help="a table's .tex, e.g. results/tables/table5.tex")
    audit.add_argument("--cell", action="append", metavar="ID",
                       help="only this cell, as ranker:method:dataset:metric (e.g. colbert:lft_best:vaswani:P@20) "
                            "or bm25:dataset:metric; repeatable")
    audit.add_argument("--directory", "-d", default=".", help="the workflow's working directory (holds results/)")
    audit.add_argument("--rescore", type=int, default=0, metavar="N",
                       help="also re-run every run's stored weights on N of its test queries (a fixed sample) and "
                            "compare the scores with the run file: catches a run not computed from its weights "
                            "even when every hash was recomputed (CPU; seconds per run)")
    audit.add_argument("--skip-config", action="store_true",
                       help="do not check the recorded params and code versions against the config and checkout")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .provenance.audit import audit   # ir_measures, pandas and scipy only when auditing

    os.chdir(args.directory)
    if args.rescore < 0:
        _parser().error("--rescore N needs N >= 0")
    return audit(args.table, args.cell, check_config=not args.skip_config, rescored=args.rescore)


if __name__ == "__main__":
    sys.exit(main())

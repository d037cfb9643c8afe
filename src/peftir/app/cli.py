"""The ``peftir`` command: ``peftir audit results/tables/table5.tex``, ``peftir audit --crate table5.crate.zip``,
``peftir crate results/tables/table5.tex -o results/crates/table5.crate.zip``, ``peftir plan config/paper.yaml
all_tables``."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from ..systems import RegistryError


def _parser() -> argparse.ArgumentParser:
    from .crate import Limits          # the crates read the systems' registry: inside main's handling of its errors

    parser = argparse.ArgumentParser(prog="peftir", description="PEFT-IR Repro utilities")
    commands = parser.add_subparsers(dest="command", required=True)
    audit = commands.add_parser(
        "audit", help="walk every cell of a table back to its runs and re-check it",
        description="Re-hash every file behind a table's cells, recompute each metric with ir_measures and "
                    "each t-test with scipy, check printed values, stars, improvements, and the params and "
                    "code versions against the config files and the checkout, and print the chain commit → "
                    "config → weights → run → metric → cell. With --crate, do the same from a crate made by "
                    "`peftir crate`, in a checkout at the crate's commit, its workflow files and records "
                    "compared with the commit's and its config's differences printed. Exits 0 only if everything "
                    "matches; otherwise 1, naming the first cell and file that does not (2: bad arguments or a crate "
                    "that needs another commit; 3: everything matched, but a requested check could not cover "
                    "every item, named: --rescore on runs it cannot rescore).")
    audit.add_argument("table", nargs="?", help="a table's .tex, e.g. results/tables/table5.tex")
    audit.add_argument("--crate", metavar="ZIP", help="audit the table in this crate instead (peftir crate)")
    audit.add_argument("--cell", action="append", metavar="ID",
                       help="only this cell, as ranker:method:dataset:metric (e.g. colbert:lft_best:vaswani:P@20) "
                            "or bm25:dataset:metric; repeatable")
    audit.add_argument("--directory", "-d", default=".", help="the workflow's working directory (holds results/)")
    audit.add_argument("--checkout", type=Path,
                       help="the workflow checkout to check against (default: the one peftir is installed from)")
    audit.add_argument("--rescore", type=int, default=0, metavar="N",
                       help="also re-derive every run a system can rescore (a reranking, a first stage's search) from "
                            "its stored weights on N of its queries (a fixed sample) and compare the scores with the "
                            "run file: catches a run not computed from its weights even when every hash was "
                            "recomputed (CPU; seconds per run); other runs made from trained weights are named as "
                            "not rescored (exit 3)")
    audit.add_argument("--expect", metavar="SHA256",
                       help="with --crate: the crate's sha256 as published (Zenodo, WorkflowHub); refused if it "
                            "differs")
    audit.add_argument("--unpublished", action="store_true",
                       help="with --crate: audit a crate made from a checkout with uncommitted changes (its workflow "
                            "files differ from its commit's), said as not from a published commit")
    audit.add_argument("--scratch", type=Path, metavar="DIR",
                       help="with --crate: unpack it under DIR (default: the system's temporary folder)")
    audit.add_argument("--max-entries", type=int, default=Limits.entries, metavar="N",
                       help=f"with --crate: refuse a crate of more entries (default {Limits.entries:,})")
    audit.add_argument("--max-bytes", type=int, default=Limits.bytes, metavar="N",
                       help=f"with --crate: refuse a crate that unpacks to more bytes (default {Limits.bytes:,}: a "
                            f"paper's crate with its weights)")
    audit.add_argument("--skip-config", action="store_true",
                       help="do not check the recorded params and code versions against the config and checkout")
    crate = commands.add_parser(
        "crate", help="write a Workflow Run RO-Crate (Provenance Run Crate) of a table or figure",
        description="Package a table or figure with every job, file, record, config and code version behind it "
                    "as a Provenance Run Crate (RO-Crate 1.1), for WorkflowHub or Zenodo; a reviewer checks it "
                    "with `peftir audit --crate`. Model weights are referenced by hash unless --with-weights; "
                    "licensed collections are never copied.")
    crate.add_argument("report", help="a table's .tex or a figure's .pdf, e.g. results/tables/table5.tex")
    crate.add_argument("-o", "--output", required=True, help="the crate's zip, e.g. results/crates/table5.crate.zip")
    crate.add_argument("--with-weights", action="store_true", help="include the model weights")
    crate.add_argument("--no-collections", action="store_true",
                       help="leave out exported documents and indexes of public collections too (large)")
    crate.add_argument("--licence", default="https://spdx.org/licenses/CC-BY-4.0",
                       help="the licence of the crate's content (default CC-BY-4.0)")
    crate.add_argument("--author", action="append", default=[], metavar="'NAME [<URL>]'",
                       help="an author, the agent of the run: 'Ada Lovelace <https://orcid.org/0000-0000-0000-0000>' "
                            "(repeat for several)")
    crate.add_argument("--directory", "-d", default=".", help="the workflow's working directory (holds results/)")
    crate.add_argument("--checkout", type=Path,
                       help="the workflow checkout (default: the one peftir is installed from)")
    cost = commands.add_parser(
        "plan", help="jobs, GPU-hours and memory a target will cost before it runs",
        description="Plan TARGET (a rule or a file) on the checkout's config.yaml with CONFIG overlays, as Snakemake "
                    "would (a dry run), and print per rule the jobs, the expected GPU-hours per job and in all, the "
                    "largest GPU memory a job needs (analytic) and the host memory the config asks for, with the "
                    "source of each rate (benchmarks/calibration.json: measured on a GPU, analytic, or a paper's "
                    "reported time); then the allocations (sbatch calls) a run under the checkout's slurm/ profile "
                    "submits, with groups as configured, their asks and the GPU-hours spent starting them up.")
    cost.add_argument("configs", nargs="*", type=Path, metavar="CONFIG", help="overlays, e.g. config/paper.yaml")
    cost.add_argument("target", help="a rule (all_tables) or a file (results/tables/table5.tex)")
    cost.add_argument("--checkout", type=Path, help="the workflow checkout (default: the one peftir is installed from)")
    cost.add_argument("--calibration", type=Path, help="a calibration table (default: benchmarks/calibration.json)")
    return parser


def _checkout(given: Path | None) -> Path:
    from ..provenance.records import installed_checkout

    return given.resolve() if given else installed_checkout()


def _audit_crate(args: argparse.Namespace, checkout: Path) -> int:
    from ..provenance.records import sha256
    from .audit import audit
    from .crate import CrateError, Limits, check_commit, unpack
    from .trust import against_commit

    try:
        digest = sha256(args.crate)
    except OSError as problem:
        print(f"AUDIT FAILED: crate {args.crate}: {problem.strerror or problem}")
        return 1
    print(f"crate {args.crate}: sha256 {digest}")
    if args.expect and args.expect.lower() != digest:
        print(f"AUDIT FAILED: crate {args.crate}: its sha256 is not the expected {args.expect}: not the published "
              f"crate")
        return 1
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="peftir-crate-audit-", dir=args.scratch) as scratch:
        try:
            unpacked = unpack(Path(args.crate).resolve(), Path(scratch), Limits(args.max_entries, args.max_bytes))
        except CrateError as problem:
            print(f"AUDIT FAILED: crate {args.crate}: {problem}")
            return 1
        try:
            check_commit(unpacked, checkout)
        except CrateError as problem:
            print(f"peftir audit --crate: {problem}")
            return 2
        try:
            for line in against_commit(unpacked, checkout, args.unpublished):
                print(line)
        except CrateError as problem:
            print(f"AUDIT FAILED: crate {args.crate}: {problem}")
            return 1
        os.chdir(scratch)      # the crate holds results/ and the workflow's files as they were
        return audit(unpacked.report, Path(scratch), args.cell, check_config=not args.skip_config,
                     rescored=args.rescore, left_out=unpacked.left_out)


def _plan(args: argparse.Namespace, checkout: Path) -> int:
    from ..pipeline import cost

    calibration = cost.Calibration.read(args.calibration or checkout / cost.CALIBRATION)
    overlays = [path.resolve() for path in args.configs if path.resolve() != (checkout / "config.yaml").resolve()]
    try:
        planned = cost.plan(checkout, overlays, [args.target], calibration)
    except (RuntimeError, ValueError) as problem:
        print(f"peftir plan: {problem}")
        return 1
    print(cost.render(planned, calibration))
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _command(argv)
    except RegistryError as problem:          # an install older than its registrations: what to do, no traceback
        print(f"peftir: {problem}", file=sys.stderr)
        return 1


def _command(argv: list[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    checkout = _checkout(args.checkout)
    if args.command == "plan":
        return _plan(args, checkout)
    if args.command == "crate":
        from .crate import CrateError, build_crate

        os.chdir(args.directory)
        try:
            summary = build_crate(args.report, args.output, checkout, with_weights=args.with_weights,
                                  collections=not args.no_collections, licence=args.licence,
                                  authors=args.author)
        except (CrateError, FileNotFoundError) as problem:
            print(f"peftir crate: {problem}")
            return 1
        print(f"{args.output}: {summary['jobs']} jobs, {summary['files']} files, {summary['left_out']} left out "
              f"(described by hash), {summary['bytes'] / 2**20:.1f} MB")
        return 0
    if args.rescore < 0:
        parser.error("--rescore N needs N >= 0")
    if args.max_entries < 1 or args.max_bytes < 1:
        parser.error("--max-entries and --max-bytes need a positive number")
    if not args.crate and (args.expect or args.scratch or args.unpublished):
        parser.error("--expect, --scratch and --unpublished go with --crate ZIP")
    if bool(args.crate) == bool(args.table):
        parser.error("give a table or --crate ZIP (one of them)")
    if args.crate:
        return _audit_crate(args, checkout)
    from .audit import audit   # ir_measures, pandas and scipy only when auditing

    os.chdir(args.directory)
    return audit(args.table, checkout, args.cell, check_config=not args.skip_config, rescored=args.rescore)


if __name__ == "__main__":
    sys.exit(main())

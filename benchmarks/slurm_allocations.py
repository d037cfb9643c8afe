"""What a SLURM cluster sees when the workflow runs under ``snakemake --profile slurm``: allocations per target.

    PYTHONPATH=src:tests .venv/bin/python benchmarks/slurm_allocations.py --out slurm.json     # this checkout
    PYTHONPATH=src:tests .venv/bin/python benchmarks/slurm_allocations.py --checkout OTHER --out other.json

Every job a cluster runs is an sbatch allocation: it waits in the queue, starts a Python process, imports torch and
is polled until it ends, so a workflow of many small jobs costs a cluster (and its user's fair share) far more than
its compute. This benchmark counts what the cluster sees, on the real single-node SLURM that ``tests/slurm_cluster``
starts (slurm-wlm and munge; needs root), for three small targets, each a scale model (``tests/scale_model``) of a
paper configuration narrowed by one more overlay (``TARGETS``' ``narrowed``) to one table that runs in minutes on two cores:

- ``semi-siamese``: ``config/paper.yaml``, Table 3 on Robust04 (three folds), monoBERT, full fine-tuning and LoRA:
  train → rerank → evaluate per fold and method;
- ``dense``: ``config/paper-condenser.yaml``, Table 5's full-data MS MARCO passage columns, BM25 and BERT fine-tuned:
  train_retriever → dense_index → dense_search → evaluate_dense;
- ``clir``: ``config/paper-modular-clir.yaml``, Table 3 (BM25 pre-ranker) on one pair, monoBERT and the ranking
  adapter alone (RA -LA -INV): ranking_adapter → rerank_clir → evaluate_clir.

Each target is planned (``snakemake -n``), then built twice in fresh working directories: locally (``--cores 2``)
and with ``--profile slurm`` typed from the checkout's root, as ``tests/test_slurm.py`` does. Per target it records
the SLURM allocations (distinct job ids in SLURM's job-completion log for that run, checked against the
``slurm_job_id`` of the provenance records), the jobs Snakemake ran (distinct rule and wildcards of the records; per
rule, how many ran on SLURM), the wall time of both runs and whether every table file (``results/tables/**/*.tex``
and ``.json``) is byte-identical between them. One scale-model change for the cluster: every rule asks for one
thread and at most ``MEM_MB`` of memory (a paper job's 16 threads or 32 GB fit no node of this machine).

The measuring instrument is this script's checkout (its ``tests/`` helpers make the scale models and start the
cluster); the workflow measured is ``--checkout``'s (its Snakefile, config files, ``slurm/`` profile and ``src/``,
which the jobs import). Results go to ``--out`` (default ``results/benchmarks/slurm_allocations.json``).
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))       # the scale models and the test cluster are test helpers

import yaml  # noqa: E402

import scale_model  # noqa: E402
from irds_fixtures import write_fixtures  # noqa: E402
from slurm_cluster import Cluster, install, run_bounded  # noqa: E402
from test_scale_models import local_files  # noqa: E402

OUTPUT = Path("results/benchmarks/slurm_allocations.json")
SHARED_IRDS = Path(os.environ.get("PEFTIR_IRDS_CACHE", ROOT.parent / "shared" / "irds"))
TIME_LIMIT = 600        # seconds a run may take: then SIGINT (Snakemake cancels its SLURM jobs), SIGKILL 60 s later
MEM_MB = 4000           # the most memory a job asks for: the test node has the machine's (a paper job asks 32-64 GB)
PARTITIONS = "partitions:\n  cpu: {max_gpu: 0}\n  gpu: {max_gpu: 2}\n"   # the test node's: GPU jobs to `gpu`

# Per target: the paper configuration, the one table built, the datasets it reads (their fixtures are written) and
# the overlay that narrows the scale model to that table. Lists replace lists in Snakemake's merge; dicts merge.
TARGETS = {
    "semi-siamese": {
        "files": ["config/paper.yaml"],
        "target": "results/tables/table3.tex",
        "datasets": ["robust04"],
        "narrowed": {
            "experiment": {"datasets": ["robust04"], "rankers": ["monobert"]},
            "tables": {"table3": {"rankers": ["monobert"], "methods": ["full", "lora"]}},
        },
    },
    "dense": {
        "files": ["config/paper-condenser.yaml"],
        "target": "results/tables/condenser/table5.tex",
        "datasets": ["msmarco-passage"],
        "narrowed": {"dense_retrieval": {"tables": {"condenser": {"table5": {
            "columns": [{"label": "Full MRR@10", "metric": "RR@10"}, {"label": "Full R@1000", "metric": "R@1000"}],
            "rows": [{"label": "BM25", "reference": "bm25"}, {"label": "BERT", "backbone": "bert"}],
        }}}}},
    },
    "clir": {
        "files": ["config/paper-modular-clir.yaml"],
        "target": "results/tables/modular-clir/table3.tex",
        "datasets": ["msmarco-passage"],
        # head_pooler off: the tiny mBERT has no trained pooler, so with the paper's head reading it every process
        # draws its own random pooler, and an adapter ranking module (whose saved weights leave the pooler out)
        # reranks differently in each run, local or SLURM alike (measured: three runs, three tables)
        "narrowed": {"modular_clir": {"backbone": {"head_pooler": False},
                                      "tables": {"table3": {"pairs": ["en-en"], "systems": ["monobert", "ra_nola"]}}}},
    },
}


# --- the working directories ------------------------------------------------------------------------------------

def irds_ids(config: dict, names: list[str]) -> list[str]:
    """The ir_datasets ids of the datasets ``names`` (collection, splits, topics, folds)."""
    found = set()
    for name in names:
        spec = config["datasets"][name]
        found |= {spec["irds"], *(spec.get("splits") or {}).values(), *spec.get("topics", [])}
        found |= set((spec.get("folds") or {}).get("irds", []))
    return sorted(found - {"vaswani"})


def capped(resources: dict) -> dict:
    """Each rule's resources asking for one thread and at most ``MEM_MB`` (only the keys it sets)."""
    out = {}
    for rule, spec in (resources or {}).items():
        if isinstance(spec, dict):
            small = {}
            if "threads" in spec:
                small["threads"] = 1
            if "mem_mb" in spec:
                small["mem_mb"] = min(int(spec["mem_mb"]), MEM_MB)
            if small:
                out[rule] = small
    return out


@contextlib.contextmanager
def quiet():
    """Standard output and error of this process (and of libraries writing to the descriptors) to /dev/null."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def narrowed_overlay(checkout: Path, spec: dict, scale: Path) -> tuple[list[Path], dict]:
    """The configuration files of the paper and the overlay that makes it the narrowed scale model."""
    files = [checkout / "config.yaml", *(checkout / name for name in spec["files"])]
    config = scale_model.merged(*files)
    with quiet():               # the tiny tokenizers' training prints its progress
        overlay = scale_model.overlay(config, scale)
    scale_model._update(overlay, copy.deepcopy(spec["narrowed"]))
    scale_model._update(overlay, {"resources": capped(config["resources"])})
    datasets = {name: {"resources": capped(entry["resources"])} for name, entry in config["datasets"].items()
                if capped(entry.get("resources"))}
    scale_model._update(overlay, {"datasets": datasets})
    return files, overlay


def prepare(workdir: Path, files: list[Path], overlay: dict, datasets: list[str]) -> dict:
    """A fresh working directory: its IR_DATASETS_HOME (vaswani copied, the fixtures written), the files the
    configuration names, the overlay as ``scale.yaml``; the environment its runs need."""
    workdir.mkdir(parents=True)
    config = scale_model.merged(*files)
    scale_model._update(config, copy.deepcopy(overlay))
    home = workdir / "irds"
    shutil.copytree(SHARED_IRDS / "vaswani", home / "vaswani")
    write_fixtures(home, irds_ids(config, datasets))
    extra = local_files(config, workdir, home)
    full = copy.deepcopy(overlay)
    scale_model._update(full, extra)
    (workdir / "scale.yaml").write_text(yaml.safe_dump(full, sort_keys=False))
    return {"IR_DATASETS_HOME": str(home)}


def snakemake(checkout: Path, target: str, workdir: Path, files: list[Path], *args: str) -> list[str]:
    """The command as test_slurm types it: the target first, the configuration files last."""
    return [sys.executable, "-m", "snakemake", target, *args, "--snakefile", str(checkout / "Snakefile"),
            "--directory", str(workdir), "--configfile", *map(str, files), str(workdir / "scale.yaml")]


# --- what a run did ---------------------------------------------------------------------------------------------

def planned(output: str) -> dict:
    """A dry run's job stats: rule → count, and the total."""
    rules, total = {}, None
    block = output.split("Job stats:", 1)[1] if "Job stats:" in output else ""
    for line in block.splitlines()[3:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        if parts[0] == "total":
            total = int(parts[1])
            break
        rules[parts[0]] = int(parts[1])
    return {"jobs": total, "by_rule": rules}


def steps_done(output: str) -> str | None:
    found = re.findall(r"(\d+) of (\d+) steps \(\d+%\) done", output)
    return f"{found[-1][0]} of {found[-1][1]}" if found else None


def records(workdir: Path) -> list[dict]:
    """The provenance records of a run, one per output file."""
    return [json.loads(p.read_text()) for p in sorted((workdir / "results" / "provenance").rglob("*.json"))]


def jobs_of(found: list[dict]) -> dict:
    """The jobs the records say ran: distinct rule + wildcards, per rule how many and how many on SLURM."""
    jobs = {}
    for record in found:
        key = (record["rule"], json.dumps(record["wildcards"], sort_keys=True))
        jobs.setdefault(key, set()).add(record.get("slurm_job_id"))
    by_rule: dict = {}
    for (rule, _), ids in sorted(jobs.items()):
        entry = by_rule.setdefault(rule, {"jobs": 0, "on_slurm": 0})
        entry["jobs"] += 1
        entry["on_slurm"] += any(ids)
    slurm_ids = sorted({i for ids in jobs.values() for i in ids if i}, key=int)
    return {"jobs": len(jobs), "on_slurm": sum(1 for ids in jobs.values() if any(ids)), "by_rule": by_rule,
            "slurm_job_ids": slurm_ids}


def _seconds(fields: dict, start: str, end: str) -> float | None:
    try:
        return (datetime.fromisoformat(fields[end]) - datetime.fromisoformat(fields[start])).total_seconds()
    except (KeyError, ValueError):
        return None


def allocations(completed: dict[str, dict], new: set[str]) -> dict:
    """SLURM's completion records of the allocations a run made: count, states, partitions, seconds held."""
    fields = [completed[i] for i in sorted(new, key=int)]
    held = [s for f in fields if (s := _seconds(f, "StartTime", "EndTime")) is not None]
    queued = [s for f in fields if (s := _seconds(f, "SubmitTime", "StartTime")) is not None]
    return {"count": len(fields), "states": dict(Counter(f.get("JobState") for f in fields)),
            "partitions": dict(Counter(f.get("Partition") for f in fields)),
            "workdirs": sorted({f.get("WorkDir", "?") for f in fields}),
            "seconds_held": round(sum(held), 1), "seconds_queued": round(sum(queued), 1)}


def tables(local: Path, remote: Path) -> dict:
    """Whether every table file (.tex, .json) of the two runs is byte-identical."""
    def found(workdir: Path) -> dict[str, Path]:
        base = workdir / "results" / "tables"
        return {p.relative_to(base).as_posix(): p for p in sorted(base.rglob("*")) if p.suffix in (".tex", ".json")}
    left, right = found(local), found(remote)
    differ = sorted(name for name in left.keys() & right.keys() if left[name].read_bytes() != right[name].read_bytes())
    missing = sorted(left.keys() ^ right.keys())
    return {"files": sorted(left.keys() | right.keys()), "differ": differ, "only_in_one": missing,
            "identical": bool(left) and not differ and not missing}


# --- one target -------------------------------------------------------------------------------------------------

def measure(name: str, spec: dict, checkout: Path, base: Path, cluster: Cluster | None, partitions: Path,
            timeout: float, log) -> dict:
    files, overlay = narrowed_overlay(checkout, spec, base / name / "scale")
    result: dict = {"config": spec["files"], "target": spec["target"], "narrowed": spec["narrowed"]}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(checkout / "src"),
                                                                     os.environ.get("PYTHONPATH")]))}
    local, remote = base / name / "local", base / name / "slurm"
    env_local = {**env, **prepare(local, files, overlay, spec["datasets"])}

    code, output, seconds, _ = run_bounded(snakemake(checkout, spec["target"], local, files, "-n"), checkout,
                                           env_local, 300)
    (base / name / "dry-run.log").write_text(output)
    result["dry_run"] = {"returncode": code, **planned(output)}
    log(f"{name}: dry run {'ok' if code == 0 else 'FAILED'}, {result['dry_run']['jobs']} jobs planned "
        f"({seconds:.0f} s)")
    if code != 0 or cluster is None:
        if code != 0:
            result["error"] = output[-3000:]
        return result

    code, output, seconds, timed_out = run_bounded(
        snakemake(checkout, spec["target"], local, files, "--cores", "2"), checkout, env_local, timeout)
    (base / name / "local.log").write_text(output)
    ran = jobs_of(records(local))
    result["local"] = {"returncode": code, "timed_out": timed_out, "wall_s": round(seconds, 1),
                       "steps": steps_done(output), "jobs": ran["jobs"], "by_rule": ran["by_rule"]}
    log(f"{name}: local run {'ok' if code == 0 else 'FAILED'} in {seconds:.0f} s, {ran['jobs']} jobs")
    if code != 0:
        result["local_error"] = output[-3000:]

    env_remote = {**env, **prepare(remote, files, overlay, spec["datasets"]), "SLURM_CONF": str(cluster.conf),
                  "SNAKEMAKE_SLURM_PARTITIONS": str(partitions)}
    before = set(cluster.completed_jobs())
    code, output, seconds, timed_out = run_bounded(
        snakemake(checkout, spec["target"], remote, files, "--profile", "slurm",
                  "--slurm-init-seconds-before-status-checks", "1"), checkout, env_remote, timeout)
    (base / name / "slurm.log").write_text(output)
    if code != 0:               # nothing of this run may stay queued for the next one
        subprocess.run(["scancel", "--full", "--user", "root"], env=cluster.env, capture_output=True, timeout=30)
    ran = jobs_of(records(remote))
    deadline = time.time() + 30          # a completion record is written as the job ends: give it a moment
    while not set(ran["slurm_job_ids"]) <= set(cluster.completed_jobs()) and time.time() < deadline:
        time.sleep(1)
    completed = cluster.completed_jobs()
    new = set(completed) - before
    made = allocations(completed, new)
    result["slurm"] = {"returncode": code, "timed_out": timed_out, "wall_s": round(seconds, 1),
                       "steps": steps_done(output), "allocations": made["count"],
                       "allocation_states": made["states"], "allocation_partitions": made["partitions"],
                       "allocation_seconds_held": made["seconds_held"],
                       "allocation_seconds_queued": made["seconds_queued"],
                       "allocations_in_workdir": made["workdirs"] == [str(remote)],
                       "provenance_slurm_job_ids": len(ran["slurm_job_ids"]),
                       "ids_agree": set(ran["slurm_job_ids"]) == new,
                       "jobs": ran["jobs"], "jobs_on_slurm": ran["on_slurm"], "by_rule": ran["by_rule"]}
    log(f"{name}: SLURM run {'ok' if code == 0 else 'FAILED'} in {seconds:.0f} s, {made['count']} allocations, "
        f"{ran['jobs']} jobs ({ran['on_slurm']} on SLURM)")
    if code != 0:
        result["slurm_error"] = output[-3000:]
    result["tables"] = tables(local, remote)
    return result


def table(results: dict) -> str:
    """The printed summary: one line per target."""
    head = (f"{'target':<13} {'planned':>7} {'ran':>4} {'on SLURM':>8} {'allocs':>6} {'prov ids':>8} "
            f"{'SLURM s':>8} {'local s':>8} {'held s':>7}  tables identical")
    lines = [head, "-" * len(head)]
    for name, r in results.items():
        slurm, local = r.get("slurm", {}), r.get("local", {})
        same = r.get("tables", {})
        if same and not same["files"]:
            verdict = "no tables built"
        elif same:
            verdict = ("yes" if same["identical"] else f"NO ({', '.join(same['differ'] + same['only_in_one'])})") \
                + f" ({len(same['files'])} files)"
        else:
            verdict = "-"
        failed = any(r.get(key) for key in ("error", "local_error", "slurm_error"))
        lines.append(f"{name:<13} {str(r.get('dry_run', {}).get('jobs', '-')):>7} {str(slurm.get('jobs', '-')):>4} "
                     f"{str(slurm.get('jobs_on_slurm', '-')):>8} {str(slurm.get('allocations', '-')):>6} "
                     f"{str(slurm.get('provenance_slurm_job_ids', '-')):>8} {str(slurm.get('wall_s', '-')):>8} "
                     f"{str(local.get('wall_s', '-')):>8} {str(slurm.get('allocation_seconds_held', '-')):>7}  "
                     f"{verdict}{'  FAILED' if failed else ''}")
    lines += ["planned: jobs of snakemake -n; ran: jobs of the SLURM run's provenance records (rule + wildcards);",
              "allocs: its sbatch allocations (completion log); prov ids: distinct slurm_job_id in its records;",
              "SLURM s, local s: wall time of each run; held s: seconds its allocations ran, summed"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=ROOT,
                        help="the repository whose Snakefile, config files, slurm/ profile and src/ run")
    parser.add_argument("--out", type=Path, default=OUTPUT)
    parser.add_argument("--only", nargs="+", choices=list(TARGETS), help="targets to run (default: all)")
    parser.add_argument("--dry-run", action="store_true", help="plan each target (snakemake -n) and stop")
    parser.add_argument("--timeout", type=float, default=TIME_LIMIT, help="seconds per run (default: %(default)s)")
    parser.add_argument("--keep", type=Path, help="build in this new directory and keep it (default: a temporary "
                                                  "one, kept only when a run fails)")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    if not (SHARED_IRDS / "vaswani").is_dir():
        sys.exit(f"cached ir_datasets files not found at {SHARED_IRDS}; set PEFTIR_IRDS_CACHE")
    if not args.dry_run and os.geteuid() != 0:
        sys.exit("needs root: it installs slurm-wlm and munge and starts slurmctld, slurmd and munged")
    base = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="slurm-allocations-"))
    base.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True).stdout)
    status = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain"], capture_output=True,
                            text=True).stdout

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    cluster = None
    results: dict = {}
    started = time.monotonic()
    try:
        if not args.dry_run:
            install()
            cluster = Cluster(base / "cluster").start()
            log(f"SLURM started: node {cluster.hostname}, {cluster.node_state().splitlines()[0]}")
        partitions = base / "partitions.yaml"
        partitions.write_text(PARTITIONS)
        for name in args.only or TARGETS:
            try:
                results[name] = measure(name, TARGETS[name], checkout, base, cluster, partitions, args.timeout, log)
            except Exception:           # a target that cannot be set up: recorded, the others still measured
                results[name] = {"target": TARGETS[name]["target"], "error": traceback.format_exc()[-3000:]}
                log(f"{name}: FAILED before its runs:\n{results[name]['error']}")
    finally:
        if cluster is not None:
            cluster.stop()
    left = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain"], capture_output=True,
                          text=True).stdout
    if left != status:
        print(f"the runs changed the checkout's files:\n{left}")
    failed = any(r.get(key) for r in results.values() for key in ("error", "local_error", "slurm_error"))
    summary = table(results)
    print(summary)
    report = {"checkout": str(checkout), "commit": commit, "uncommitted_changes": dirty,
              "checkout_changed_by_runs": left != status, "host_cpus": os.cpu_count(),
              "mem_mb_cap": MEM_MB, "total_s": round(time.monotonic() - started, 1), "targets": results,
              "table": summary}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written: {args.out}")
    if args.keep or failed:
        print(f"working directories kept: {base}")
    else:
        shutil.rmtree(base, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

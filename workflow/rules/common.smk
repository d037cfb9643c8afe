# Validation of the configuration and helpers shared by all rules.
import atexit
import os
import subprocess
import sys
import tempfile

from peftir.folds import fold_ids
from peftir.config import ConfigError, settings_for, validate
from peftir.runner import WORKER_ENV

try:
    validate(config, workflow.source_path("../schemas/config.schema.yaml"))
except ConfigError as problem:
    raise WorkflowError(f"Invalid configuration: {problem}")


EXPERIMENT = config["experiment"]
DATASETS = EXPERIMENT["datasets"]
RANKERS = EXPERIMENT["rankers"]
METHODS = EXPERIMENT["methods"]
SEEDS = EXPERIMENT["seeds"]
TABLES = [
    name
    for name, spec in config["tables"].items()
    if any(r in RANKERS for r in spec["rankers"])
]


wildcard_constraints:
    dataset="|".join(map(re.escape, DATASETS)),
    ranker="|".join(RANKERS),
    method="|".join(map(re.escape, METHODS)),
    fold=r"\d+",
    seed=r"\d+",


def folds_of(dataset):
    """Fold ids of a dataset, known from the config alone (DAG planning needs no data)."""
    return fold_ids(config["datasets"][dataset])


# What the export and the folds depend on: a label or training override must not re-export a collection.
EXPORT_KEYS = ("irds", "query_field", "doc_fields", "splits", "licence")
FOLD_KEYS = ("folds", "splits")


def dataset_subset(dataset, keys):
    spec = config["datasets"][dataset]
    return {key: spec[key] for key in keys if key in spec}


def run_key(ranker, method, fold, seed):
    return f"{ranker}/{method}/fold{fold}-seed{seed}"


def resources_of(rule_name):
    """threads/mem_mb/runtime of a rule from config.resources."""
    return config["resources"][rule_name]


def training_settings(wildcards):
    """config.training with the dataset's own overrides (e.g. MS MARCO's 10 epochs)."""
    overrides = config["datasets"][wildcards.dataset].get("training", {})
    return {**config["training"], **overrides}


def dataset_settings(wildcards):
    spec = config["datasets"][wildcards.dataset]
    return {"validation_metric": spec["validation_metric"]}


def method_settings(wildcards):
    return settings_for(wildcards.method, config["methods"])


def dataset_files(wildcards):
    base = f"results/data/{wildcards.dataset}"
    return {
        "queries": f"{base}/queries.tsv",
        "qrels": f"{base}/qrels.txt",
        "docs": f"{base}/corpus/docs.jsonl",
        "folds": f"{base}/folds.json",
    }


def table_runs(wildcards, kind):
    """Metrics or training summaries of every run a table summarises, in one fixed order."""
    pattern = {
        "metrics": "results/metrics/{dataset}/{key}.json",
        "summaries": "results/models/{dataset}/{key}.json",
    }[kind]
    rankers = [r for r in config["tables"][wildcards.table]["rankers"] if r in RANKERS]
    return [
        pattern.format(dataset=dataset, key=run_key(ranker, method, fold, seed))
        for dataset in DATASETS
        for ranker in rankers
        for method in METHODS
        for fold in folds_of(dataset)
        for seed in SEEDS
    ]


def table_spec(wildcards):
    spec = config["tables"][wildcards.table]
    labels = config["labels"]
    return {
        "name": wildcards.table,
        "caption": spec["caption"],
        "datasets": [[d, config["datasets"][d]["label"]] for d in DATASETS],
        "metrics": EXPERIMENT["metrics"],
        "groups": [
            {
                "label": labels["rankers"][ranker],
                "ranker": ranker,
                "methods": [[m, labels["methods"][m]] for m in METHODS],
            }
            for ranker in spec["rankers"]
            if ranker in RANKERS
        ],
    }


# The warm worker (peftir.worker) serves local runs only: on a cluster each job
# runs in its own process on its own node.
def start_warm_worker():
    if not (config["execution"]["warm_worker"] and workflow.local_exec and not workflow.remote_exec):
        return
    if workflow.deployment_settings.deployment_method:  # jobs must run in their conda env / container
        return
    address = os.path.join(tempfile.mkdtemp(prefix="peftir-"), "worker.sock")
    process = subprocess.Popen(
        [sys.executable, "-m", "peftir.worker", address, str(os.getpid())],
        stdin=subprocess.DEVNULL,
    )
    atexit.register(process.kill)
    os.environ[WORKER_ENV] = address


onstart:
    start_warm_worker()

"""Checks of the ``sparse_retrieval`` section that the schema cannot express: what it names exists (datasets,
folds, backbones, methods, table rows), adapter settings only on adapter methods, every table cell a metric the
evaluation computes (depths and schedules that must fit: ``peftir.pipeline.relations``). Called by
``peftir.pipeline.config.validate``."""
from __future__ import annotations

from ..contract.measures import R_FLOPS
from .contract import SPLADE_OVERRIDES
from ..contract.checks import (ConfigError, check_backbone_name, check_dataset_and_folds, check_metrics, check_table,
                              known, needs)

ADAPTER_SETTINGS = ("reduction_factor", "leave_out")


def _check_method(config: dict, name: str, spec: dict) -> None:
    sparse, key = config["sparse_retrieval"], f"sparse_retrieval.methods.{name}"
    if spec["kind"] == "none":
        trains = [setting for setting in ("lr", *ADAPTER_SETTINGS, "negatives", "init", "distil", *SPLADE_OVERRIDES)
                  if setting in spec]
        if trains:
            raise ConfigError(f"config key {key}: {', '.join(trains)}: training settings, but kind none "
                                   f"trains nothing")
        return
    if "lr" not in spec:
        raise ConfigError(f"config key {key}: missing key lr")
    if spec["kind"] == "ft":
        given = [setting for setting in ADAPTER_SETTINGS if setting in spec]
        if given:
            raise ConfigError(f"config key {key}: {', '.join(given)}: adapter settings, but this method is "
                                   f"full fine-tuning")
    elif "reduction_factor" not in spec:
        raise ConfigError(f"config key {key}: an adapter method needs reduction_factor (the paper: 16)")
    if spec.get("negatives", "bm25") != "bm25":
        known(spec["negatives"], [m for m in sparse["methods"] if m != name], f"{key}.negatives",
              "bm25 or another key of sparse_retrieval.methods")
    if spec.get("init"):
        same = [m for m, other in sparse["methods"].items() if m != name and other["kind"] == spec["kind"]]
        known(spec["init"], same, f"{key}.init", f"the other {spec['kind']} methods: a round starts from its kind")
    if spec.get("distil") and not sparse["teacher"]:
        raise ConfigError(f"config key {key}.distil: needs sparse_retrieval.teacher (the scores to distil)")


def _check_rounds(methods: dict) -> None:
    """A method's negatives and start come from methods trained before it: no chain leads back to itself."""
    def visit(path: list[str]) -> None:
        spec = methods[path[-1]]
        for before in (spec.get("init"), spec.get("negatives")):
            if before and before != "bm25":
                if before in path:
                    raise ConfigError(f"config key sparse_retrieval.methods.{path[0]}: its negatives and init "
                                           f"lead back to it ({' -> '.join([*path, before])})")
                visit([*path, before])

    for name in methods:
        visit([name])


def _check_table(config: dict, name: str, spec: dict) -> None:
    from .plan import splade_cells

    sparse, key = config["sparse_retrieval"], f"sparse_retrieval.tables.{name}"
    computed = [*sparse["metrics"], R_FLOPS]

    def check_cell(cell: dict, where: str) -> None:
        known(cell["metric"], computed, f"{key} ({where}) metric", "sparse_retrieval.metrics and R-FLOPS")
        for setting in ("dataset", "target"):
            if setting in cell:
                known(cell[setting], config["datasets"], f"{key} ({where}) {setting}", "the keys of `datasets`")
        if cell.get("reference"):
            return
        if "reranker" in cell:
            known(cell["reranker"], (sparse["rerankers"] or {}).get("models", {}), f"{key} ({where}) reranker",
                  "sparse_retrieval.rerankers.models")
            return
        needs(cell, ("backbone", "splade"), key, where)
        known(cell["backbone"], sparse["backbones"], f"{key} ({where}) backbone", "sparse_retrieval.backbones")
        known(cell["splade"], sparse["methods"], f"{key} ({where}) splade", "sparse_retrieval.methods")
        splits = config["datasets"][cell["dataset"]].get("splits")
        if splits is not None and not {"train", "valid"} <= set(splits):
            raise ConfigError(f"config key {key} ({where}) dataset = {cell['dataset']!r}: a retriever trains "
                                   f"there, which needs its splits train and valid")

    check_table(key, spec, splade_cells(config, name), check_cell)


def check_sparse_retrieval(config: dict) -> None:
    sparse = config["sparse_retrieval"]
    check_dataset_and_folds(config, "sparse_retrieval")
    for target, documents in sparse["same_documents"].items():
        key = f"sparse_retrieval.same_documents.{target}"
        known(target, config["datasets"], key, "the keys of `datasets`")
        known(documents, [d for d in config["datasets"] if d not in sparse["same_documents"]], f"{key} value",
              "a dataset of `datasets` with documents of its own")
    for name, backbone in sparse["backbones"].items():
        check_backbone_name(config, backbone["name"], f"sparse_retrieval.backbones.{name}.name")
    for name, spec in sparse["methods"].items():
        _check_method(config, name, spec)
    _check_rounds(sparse["methods"])
    check_metrics(sparse["metrics"], "sparse_retrieval.metrics", f" ({R_FLOPS} is always added)")
    if sparse["rerankers"]:
        _check_rerankers(config)
    for name, spec in (sparse["tables"] or {}).items():
        _check_table(config, name, spec)


def _check_rerankers(config: dict) -> None:
    """Table 7's first stage is a configured SPLADE retriever; an adapter reranker has its reduction factor."""
    sparse = config["sparse_retrieval"]
    rerankers = sparse["rerankers"]
    first = rerankers["first_stage"]
    known(first["backbone"], sparse["backbones"], "sparse_retrieval.rerankers.first_stage.backbone",
          "sparse_retrieval.backbones")
    known(first["splade"], sparse["methods"], "sparse_retrieval.rerankers.first_stage.splade", "sparse_retrieval.methods")
    for name, spec in rerankers["models"].items():
        key = f"sparse_retrieval.rerankers.models.{name}"
        check_backbone_name(config, spec["backbone"], f"{key}.backbone")
        if (spec["kind"] == "adapter") != ("reduction_factor" in spec):
            raise ConfigError(f"config key {key}: reduction_factor goes with kind adapter, and only with it")

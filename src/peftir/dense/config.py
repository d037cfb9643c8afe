"""Checks of the pretraining and dense retrieval sections that the schema cannot express: what they name exists
(datasets, runs, backbones, methods, rows), a coCondenser starts from a Condenser, a table's cells are complete
(sizes and depths that must fit in one another: ``peftir.pipeline.relations``). Called by
``peftir.pipeline.config.validate`` before any job runs."""
from __future__ import annotations

from ..contract.checks import (ConfigError, check_backbone_name, check_dataset_and_folds, check_metric, check_metrics,
                              check_table, known, needs)
from ..contract.measures import GEOMETRY_METRICS
from ..contract.paths import MLM_HEAD_RUN, PRETRAINED, pretrained_run
from .contract import PRETRAINING_UNITS, prompts_run


def check_pretraining(config: dict) -> None:
    pretraining = config["pretraining"]
    check_backbone_name(config, pretraining["backbone"]["name"], "pretraining.backbone.name")
    head = pretraining["backbone"]["mlm_head"]
    if head is not None:
        known(head["corpus"], config["datasets"], "pretraining.backbone.mlm_head.corpus", "the keys of `datasets`")
    for name, spec in pretraining["runs"].items():
        key = f"pretraining.runs.{name}"
        if name == MLM_HEAD_RUN.split("/")[0]:
            raise ConfigError(f"config key {key}: {name!r} is taken (results/pretrained/{MLM_HEAD_RUN} is the "
                                   f"backbone with its MLM head fitted); name the run otherwise")
        known(spec["corpus"], config["datasets"], f"{key}.corpus", "the keys of `datasets`")
        _check_run_start(config, key, spec)
        warm = spec.get("warm_start")
        if (spec["objective"] == "cocondenser") != (warm is not None):
            raise ConfigError(f"config key {key}: a cocondenser run names the Condenser run it starts from "
                                   f"(warm_start), and only a cocondenser run does")
        if warm is not None:
            condensers = [run for run, other in pretraining["runs"].items() if other["objective"] == "condenser"]
            known(warm, condensers, f"{key}.warm_start", "the condenser runs of pretraining.runs")
        if "units" in spec:
            known(spec["units"], PRETRAINING_UNITS[spec["objective"]], f"{key}.units",
                  f"what objective {spec['objective']} trains on")


def _check_run_start(config: dict, key: str, spec: dict) -> None:
    """A run's own backbone exists and is not also a warm start; deep prompts pretrain with RIP only."""
    if "backbone" in spec:
        if spec.get("warm_start") is not None:
            raise ConfigError(f"config key {key}.backbone: a coCondenser starts from its warm_start run, not "
                                   f"a backbone of its own")
        check_backbone_name(config, spec["backbone"], f"{key}.backbone")
    if "prompts" in spec and spec["objective"] != "rip":
        raise ConfigError(f"config key {key}.prompts: deep prompts pretrain with objective rip (DPTDR Table 6), "
                               f"not {spec['objective']}")


def prompt_run(config: dict, method: dict) -> tuple[str, dict] | None:
    """The prompt-pretraining run a dense method starts from (``prompts: pretrained:<run>``) and its spec, or None."""
    run = prompts_run(method)
    return (run, config["pretraining"]["runs"][run]) if run else None


def _check_prompts(config: dict, name: str, spec: dict) -> None:
    """A method's pretrained prompts name a run that saved prompts, of its length and without reparametrisation."""
    if "prompts" not in spec:
        return
    key = f"dense_retrieval.methods.{name}.prompts"
    runs = (config.get("pretraining") or {}).get("runs", {})
    if spec["kind"] != "dpt":
        raise ConfigError(f"config key {key}: pretrained prompts start a dpt method, not {spec['kind']}")
    known(pretrained_run(spec["prompts"]), [run for run, other in runs.items() if "prompts" in other], key,
          "pretrained:<run> of a pretraining run with prompts")
    saved = runs[pretrained_run(spec["prompts"])]["prompts"]
    if saved["length"] != spec["length"] or spec["reparametrise"]:
        raise ConfigError(f"config key {key} = {spec['prompts']!r}: its prompts are {saved['length']} "
                               f"embeddings; the method has length {spec['length']}"
                               f"{' and reparametrises' if spec['reparametrise'] else ''}")


def check_prompted_backbone(config: dict, retriever: str, backbone: str, key: str) -> None:
    """A retriever on pretrained prompts runs on the backbone they were pretrained on (the pretraining section's,
    its MLM head fitted or not, or the run's own)."""
    found = prompt_run(config, config["dense_retrieval"]["methods"][retriever])
    if found is None:
        return
    run, spec = found
    name = config["dense_retrieval"]["backbones"][backbone]
    section = config["pretraining"]["backbone"]["name"]
    allowed = [spec["backbone"]] if "backbone" in spec else [section, f"{PRETRAINED}{MLM_HEAD_RUN}"]
    if name not in allowed:
        raise ConfigError(f"config key {key}: backbone {backbone} = {name!r} under retriever {retriever}, whose "
                               f"prompts run {run!r} pretrained on {allowed[0]!r}")


def _check_method(name: str, spec: dict) -> None:
    key = f"dense_retrieval.methods.{name}"
    dpt = ("length", "reparametrise", "mlp_hidden", "dropout")
    if spec["kind"] == "dpt":
        missing = [setting for setting in dpt if setting not in spec]
        if missing:
            raise ConfigError(f"config key {key}: deep prompt tuning needs {', '.join(missing)}")
    elif any(setting in spec for setting in dpt):
        raise ConfigError(f"config key {key}: {', '.join(s for s in dpt if s in spec)} are dpt settings; "
                               f"this method is full fine-tuning")


def _check_dense_table(config: dict, paper: str, name: str, spec: dict) -> None:
    from .plan import dense_cells

    dense, key = config["dense_retrieval"], f"dense_retrieval.tables.{paper}.{name}"

    def check_cell(cell: dict, where: str) -> None:
        check_metric(cell["metric"], key, where)
        known(cell["dataset"], config["datasets"], f"{key} ({where}) dataset", "the keys of `datasets`")
        if cell["metric"] in GEOMETRY_METRICS and (cell.get("reference") == "bm25"
                                                  or cell.get("target", cell["dataset"]) != cell["dataset"]):
            raise ConfigError(f"config key {key}: {where}: {cell['metric']} is of a dense encoder's vectors on "
                                   f"its own dataset's queries: not BM25's, nor with a target")
        needed = {"untrained": ("backbone",), "bm25": ()}.get(cell.get("reference"),
                                                              ("backbone", "retriever", "negatives"))
        needs(cell, needed, key, where)
        target = cell.get("target", cell["dataset"])
        if target != cell["dataset"]:
            same = [name for name, documents in dense.get("same_documents", {}).items()
                    if documents == cell["dataset"]]
            known(target, same, f"{key} ({where}) target", f"the datasets of dense_retrieval.same_documents "
                                                             f"whose documents are {cell['dataset']}'s")
            if cell.get("reference") == "untrained":
                raise ConfigError(f"config key {key}: {where}: an untrained backbone's row searches its own "
                                       f"dataset only, not target {target!r}")
        if "backbone" in needed:
            known(cell["backbone"], dense["backbones"], f"{key} ({where}) backbone", "dense_retrieval.backbones")
        if "retriever" in needed:
            known(cell["retriever"], dense["methods"], f"{key} ({where}) retriever", "dense_retrieval.methods")
            check_prompted_backbone(config, cell["retriever"], cell["backbone"], f"{key} ({where})")

    check_table(key, spec, dense_cells(config, paper, name), check_cell)


def _check_dense_figure(config: dict, paper: str, name: str, spec: dict) -> None:
    """A figure of [CLS] attention entropy: its panels name distinct backbones of the section under distinct labels,
    its fine-tuned line a full fine-tuning method (deep prompts add keys to every attention row, so their entropy
    would not compare with the backbone's), and its name is not one of the paper's tables (they share crate names)."""
    dense, key = config["dense_retrieval"], f"dense_retrieval.figures.{paper}.{name}"
    if name in (dense["tables"].get(paper) or {}):
        raise ConfigError(f"config key {key}: dense_retrieval.tables.{paper} has a table {name!r}; name the "
                               f"figure otherwise")
    known(spec["retriever"], dense["methods"], f"{key}.retriever", "the keys of dense_retrieval.methods")
    kind = dense["methods"][spec["retriever"]]["kind"]
    if kind != "ft":
        raise ConfigError(f"config key {key}.retriever = {spec['retriever']!r}: a {kind} method; the figure's "
                               f"fine-tuned line needs full fine-tuning (ft: deep prompts change the attended keys)")
    for what in ("label", "backbone"):
        named = [panel[what] for panel in spec["panels"]]
        if len(set(named)) != len(named):
            raise ConfigError(f"config key {key}.panels: each panel names its own {what}")
    for index, panel in enumerate(spec["panels"]):
        known(panel["backbone"], dense["backbones"], f"{key}.panels[{index}].backbone",
              "the keys of dense_retrieval.backbones")


def check_dense_retrieval(config: dict) -> None:
    from ..data.folds import fold_ids

    dense = config["dense_retrieval"]
    check_dataset_and_folds(config, "dense_retrieval")
    for target, documents in dense.get("same_documents", {}).items():
        key = f"dense_retrieval.same_documents.{target}"
        known(target, [d for d in config["datasets"] if d != dense["dataset"]], key, "the keys of `datasets`")
        known(documents, [dense["dataset"]], f"{key} value", "dense_retrieval.dataset, the documents every "
                                                             "retriever's index holds")
        for index, fold in enumerate(dense["folds"]):
            known(str(fold), fold_ids(config["datasets"][target]), f"dense_retrieval.folds[{index}]",
                  f"the folds of {target} (same_documents: its BM25 row is evaluated per fold)")
    for name, backbone in dense["backbones"].items():
        check_backbone_name(config, backbone, f"dense_retrieval.backbones.{name}")
    for name, spec in dense["methods"].items():
        _check_method(name, spec)
        _check_prompts(config, name, spec)
    check_metrics(dense["metrics"], "dense_retrieval.metrics")
    shared = dense["mining"].get("first_round")
    if shared:
        known(shared["backbone"], dense["backbones"], "dense_retrieval.mining.first_round.backbone",
              "the keys of dense_retrieval.backbones")
        known(shared["retriever"], dense["methods"], "dense_retrieval.mining.first_round.retriever",
              "the keys of dense_retrieval.methods")
        check_prompted_backbone(config, shared["retriever"], shared["backbone"], "dense_retrieval.mining.first_round")
    for paper, tables in dense["tables"].items():
        for name, spec in (tables or {}).items():
            _check_dense_table(config, paper, name, spec)
    for paper, figures in (dense.get("figures") or {}).items():
        for name, spec in (figures or {}).items():
            _check_dense_figure(config, paper, name, spec)

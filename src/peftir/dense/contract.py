"""The dense retrieval system's contract with the workflow (pretraining runs, DPTDR and Condenser): its artefacts
(pretrained backbones, retrievers, mined negatives, indexes, runs, metrics, geometry, attention, tables and figures)
and what each of its jobs gets from the config (``PARAMS``)."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from ..contract.measures import GEOMETRY_METRICS, measure
from ..contract.params import Config, ParamFunction, Wildcards, job_execution, is_beir
from ..contract.paths import MLM_HEAD_RUN, PRETRAINED_DIR, pretrained_run
from ..contract.retrieval import retrieval_layout
from ..contract.paths import CorePaths
from ..contract.wildcards import KEY, WILDCARDS as CORE_WILDCARDS, Artefacts
from ..semi_siamese.contract import PATHS as SEMI_SIAMESE_PATHS
from ..semi_siamese.contract import WILDCARDS as SEMI_SIAMESE_WILDCARDS
from ..semi_siamese.contract import ranker_settings, resolve_method, training_settings

DENSE = "results/dense"                                       # dense retrievers (Condenser, DPTDR papers)
RETRIEVER = "{dataset}/{backbone}/{retriever}/{negatives}/fold{fold}-seed{seed}"   # one trained retriever
UNTRAINED = "{dataset}/untrained/{backbone}"                  # a backbone's [CLS] used as it comes


@dataclass(frozen=True)
class DensePaths:
    """Path patterns of the dense retrieval system's artefacts."""

    pretraining_mlm_backbone: str = f"{PRETRAINED_DIR}/{MLM_HEAD_RUN}"    # a backbone without one, its MLM head fitted
    pretraining_mlm_summary: str = f"{PRETRAINED_DIR}/{MLM_HEAD_RUN}.json"
    retriever_model: str = f"{DENSE}/models/{RETRIEVER}"
    retriever_summary: str = f"{DENSE}/models/{RETRIEVER}.json"
    mined_negatives: str = f"{DENSE}/negatives/{RETRIEVER}.run"     # UNM's pool for a second-round retriever
    mined_negatives_summary: str = f"{DENSE}/negatives/{RETRIEVER}.json"
    dense_index: str = f"{DENSE}/index/{RETRIEVER}"
    dense_run: str = f"{DENSE}/runs/{RETRIEVER}.run"
    dense_run_metadata: str = f"{DENSE}/runs/{RETRIEVER}.ir_metadata.yaml"
    dense_metrics: str = f"{DENSE}/metrics/{RETRIEVER}.json"
    untrained_index: str = f"{DENSE}/index/{UNTRAINED}"
    untrained_run: str = f"{DENSE}/runs/{UNTRAINED}.run"
    untrained_run_metadata: str = f"{DENSE}/runs/{UNTRAINED}.ir_metadata.yaml"
    untrained_metrics: str = f"{DENSE}/metrics/{UNTRAINED}/fold{{fold}}.json"
    dense_geometry: str = f"{DENSE}/geometry/{RETRIEVER}.json"
    untrained_geometry: str = f"{DENSE}/geometry/{UNTRAINED}/fold{{fold}}.json"
    dense_bm25_metrics: str = f"{DENSE}/metrics/{{dataset}}/bm25/fold{{fold}}.json"
    # a run's passages judged by answer matching (datasets.<name>.answers), the qrels its evaluation reads
    dense_judgments: str = f"{DENSE}/judgments/{RETRIEVER}.qrels"
    untrained_judgments: str = f"{DENSE}/judgments/{UNTRAINED}.qrels"
    bm25_judgments: str = f"{DENSE}/judgments/{{dataset}}/bm25.qrels"
    dense_target_run: str = f"{DENSE}/runs/{{target}}/{RETRIEVER}.run"
    dense_target_run_metadata: str = f"{DENSE}/runs/{{target}}/{RETRIEVER}.ir_metadata.yaml"
    dense_target_metrics: str = f"{DENSE}/metrics/{{target}}/{RETRIEVER}.json"
    dense_table_tex: str = "results/tables/{paper}/{table}.tex"
    dense_table_json: str = "results/tables/{paper}/{table}.json"
    dense_table_csv: str = "results/tables/{paper}/{table}.csv"
    attention_pretrained: str = f"{DENSE}/attention/{{paper}}/{{figure}}/{UNTRAINED}.json"
    attention_finetuned: str = f"{DENSE}/attention/{{paper}}/{{figure}}/{RETRIEVER}.json"
    dense_figure_pdf: str = "results/figures/{paper}/{figure}.pdf"
    dense_figure_png: str = "results/figures/{paper}/{figure}.png"
    dense_figure_json: str = "results/figures/{paper}/{figure}.json"
    dense_figure_csv: str = "results/figures/{paper}/{figure}.csv"


PATHS = DensePaths()


DENSE_PAPERS = ("dptdr", "condenser")                 # their tables' folders under results/tables/
# A retriever's negatives (UNM, Tang et al. §3.3): BM25's top documents; those plus hard negatives sampled from
# the top of BM25 and of the first-round retriever (trained on ``bm25``); those plus the ones a reranker
# judges non-relevant ("denoised"). Second-round retrievers train from the backbone again.
NEGATIVES = ("bm25", "mined", "denoised")


# what each objective's texts are cut into: its default first (``peftir.data.pretraining_text``)
PRETRAINING_UNITS = {"condenser": ("blocks",), "cocondenser": ("spans", "sentences"), "rip": ("sentences",),
                     "ict": ("sentences",)}          # ICT: a passage's sentences, one the query, the rest its context


def _pretraining(config: Config, wildcards: Wildcards) -> dict:
    """One pretraining run's objective, corpus, seed, start and settings (the common ones, then its own); a run with
    its own ``backbone`` starts from that masked LM (no head fitted), a run with ``prompts`` trains deep prompts
    only (DPTDR Table 6)."""
    spec = config["pretraining"]["runs"][wildcards["pretrained"]]
    backbone = config["pretraining"]["backbone"]
    prompts = {"prompts": spec["prompts"]} if "prompts" in spec else {}    # other runs' params stay as they were
    return {"objective": spec["objective"], "corpus": spec["corpus"],
            "backbone": spec.get("backbone", backbone["name"]),
            "fitted_head": "backbone" not in spec and backbone["mlm_head"] is not None, **prompts,
            "warm_start": spec.get("warm_start"),
            "units": spec.get("units", PRETRAINING_UNITS[spec["objective"]][0]),
            **config["pretraining"]["settings"], **spec.get("settings", {}), "seed": spec["seed"],
            "execution": job_execution(config)}


def _dense(config: Config) -> dict:
    return config["dense_retrieval"]


def judged_depth(metrics: list[str]) -> int | None:
    """How deep a run's passages are judged by answer matching: the largest cutoff of the dense tables' metrics
    (Top-100 needs the top 100), or the whole run where a metric has no cutoff."""
    cutoffs = [measure(name).params.get("cutoff") for name in metrics if name not in GEOMETRY_METRICS]
    return None if None in cutoffs or not cutoffs else max(cutoffs)


# a method's own training settings (DPR's open-QA recipe beside Tevatron's MS MARCO one: Condenser's Table 3)
DENSE_OVERRIDES = ("steps", "passages", "batch_size", "positive_grade", "judged_negatives", "p_max_len")


def _retriever(config: Config, wildcards: Wildcards) -> dict:
    """A retriever's backbone, method (its kind and settings) and training settings; an untrained backbone's
    (no ``retriever`` wildcard) backbone only."""
    dense = _dense(config)
    if "retriever" not in wildcards:
        return {"backbone": dense["backbones"][wildcards["backbone"]], "layers": dense["layers"],
                "execution": job_execution(config)}
    method = dense["methods"][wildcards["retriever"]]
    return {"backbone": dense["backbones"][wildcards["backbone"]], "layers": dense["layers"],
            "method": {"name": method["kind"],
                       **{key: value for key, value in method.items() if key not in ("kind", *DENSE_OVERRIDES)}},
            "train": {**dense["train"], **{key: method[key] for key in DENSE_OVERRIDES if key in method},
                      "negatives": wildcards["negatives"]},
            "execution": job_execution(config)}


def _mining(config: Config, wildcards: Wildcards) -> dict:
    """UNM's sampling and, for ``denoised``, the reranker that judges the candidates: its kind, method, backbone
    and lengths as it was trained (the ``train`` job's params), so that its weights load as they were saved."""
    mining = dict(_dense(config)["mining"])
    reranker = mining.pop("reranker")
    if wildcards["negatives"] == "denoised":
        trained = {"dataset": wildcards["dataset"], "ranker": reranker["ranker"], "method": reranker["method"]}
        mining["reranker"] = {**reranker, "backbone": config["backbone"], "settings": ranker_settings(config, trained),
                              "resolved": resolve_method(reranker["method"], config["methods"]),
                              "training": training_settings(config, trained), "rerank": config["rerank"],
                              "execution": job_execution(config)}
    return {**mining, "negatives": wildcards["negatives"]}


def _dense_search(config: Config, wildcards: Wildcards) -> dict:
    """Search settings with the lengths the retriever trained with (a method's own ``p_max_len``: DPR's 256 for
    NQ), so its passages are encoded for the index as they were in training."""
    dense = _dense(config)
    method = dense["methods"].get(wildcards.get("retriever"), {})
    return {**dense["search"], "q_max_len": dense["train"]["q_max_len"],
            "p_max_len": method.get("p_max_len", dense["train"]["p_max_len"])}


def dense_report_layout(config: Config, paper: str, name: str) -> dict:
    """What a dense table job needs to lay itself out: columns, rows with what each cell reads, the baseline."""
    return retrieval_layout(_dense(config), _dense(config)["tables"][paper][name], f"{paper}/{name}",
                             lambda dataset: [str(fold) for fold in _dense(config)["folds"]])


def dense_figure_names(config: Config) -> list[str]:
    """Every dense figure as ``<paper>/<figure>`` (``condenser/figure2``); none without ``dense_retrieval.figures``."""
    figures = (config.get("dense_retrieval") or {}).get("figures") or {}
    return [f"{paper}/{name}" for paper, named in figures.items() for name in named or {}]


def dense_figure_layout(config: Config, paper: str, name: str) -> dict:
    """What a figure of [CLS] attention entropy (Condenser Figure 2) needs: its sample (the section's dataset,
    ``passages``, ``seed``), its panels (a backbone each, as it comes and fine-tuned) and the fine-tuned retriever
    each panel reads (the figure's method and negatives, the section's first fold and seed)."""
    dense = _dense(config)
    spec = dense["figures"][paper][name]
    return {"name": f"{paper}/{name}", "caption": spec["caption"], "dataset": dense["dataset"],
            "passages": spec["passages"], "seed": spec["seed"],
            "fine_tuned": {"retriever": spec["retriever"], "negatives": spec["negatives"],
                           "fold": str(dense["folds"][0]), "seed": str(dense["seeds"][0])},
            "panels": [{"label": panel["label"], "backbone": panel["backbone"]} for panel in spec["panels"]]}


def _attention(config: Config, wildcards: Wildcards) -> dict:
    """An attention entropy job's backbone (as the retrievers load it), its figure's sample and the passage length
    the figure's retriever reads (its method's ``p_max_len`` or ``train.p_max_len``: both lines of a panel cut the
    passages alike), and where it runs."""
    dense = _dense(config)
    figure = dense_figure_layout(config, wildcards["paper"], wildcards["figure"])
    method = dense["methods"][figure["fine_tuned"]["retriever"]]
    return {"backbone": dense["backbones"][wildcards["backbone"]], "layers": dense["layers"],
            "p_max_len": method.get("p_max_len", dense["train"]["p_max_len"]), "passages": figure["passages"],
            "seed": figure["seed"], "execution": job_execution(config)}


def prompts_run(method: Mapping) -> str | None:
    """The prompt-pretraining run a DPT method starts from (``prompts: pretrained:<run>``, DPTDR Table 6), or None:
    fresh prompts."""
    return pretrained_run(method.get("prompts", ""))


WILDCARDS = {"retriever": KEY, "negatives": "|".join(NEGATIVES),
             "paper": "|".join(DENSE_PAPERS)}
# the artefacts this system's jobs read and write, matched back from their paths
ARTEFACTS = Artefacts([CorePaths(), SEMI_SIAMESE_PATHS, PATHS],
                      {**CORE_WILDCARDS, **SEMI_SIAMESE_WILDCARDS, **WILDCARDS})

PARAMS: Mapping[str, ParamFunction] = MappingProxyType({
    "pretraining_mlm_head": lambda config, wc: {"backbone": config["pretraining"]["backbone"]["name"],
                                                **config["pretraining"]["backbone"]["mlm_head"]},
    "pretraining": _pretraining,
    "retriever": _retriever,
    "mining": _mining,
    "dense_search": _dense_search,
    "dense_metrics": lambda config, wc: list(_dense(config)["metrics"]),
    "answer_judgments": lambda config, wc: {"answers": config["datasets"][wc["dataset"]]["answers"],
                                            "depth": judged_depth(_dense(config)["metrics"])},
    "dense_evaluation": lambda config, wc: {"metrics": list(_dense(config)["metrics"]), "scope": "all",
                                            "drop_self_hits": is_beir(config, wc["target"])},
    "dense_table": lambda config, wc: dense_report_layout(config, wc["paper"], wc["table"]),
    "attention": _attention,
    "dense_figure": lambda config, wc: dense_figure_layout(config, wc["paper"], wc["figure"]),
})

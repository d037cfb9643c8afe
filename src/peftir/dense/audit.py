"""How the audit checks the dense retrieval papers' reports (``peftir.reports.auditor``): a table as every
first-stage retrieval table is checked (``retrieval_table_check``), its alignment and uniformity cells (DPTDR
Table 8) from their geometry files, recomputed from the index's passage vectors and the stored query-passage
distances; a figure of [CLS] attention entropy (Condenser Figure 2) point by point against its attention files, whose
entropies are checked against their passages but not recomputed from the models (that is a model run). A report
holds the files its config asks for (folds, seeds, the table's or figure's layout)."""
from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean
from typing import Any, Mapping

from ..contract.measures import ALIGNMENT, GEOMETRY_METRICS, UNIFORMITY
from ..reports.auditor import (Auditor, Audits, ReportCheck, Say, chosen, close, compare_cells,
                               retrieval_table_check)
from .plan import attention_files, dense_figure_inputs, dense_report_runs

GEOMETRY_RECOMPUTED = "geometry files recomputed"        # what the audit's summary counts


def recompute_geometry(auditor: Auditor, path: str) -> dict:
    """A geometry file's values (DPTDR Table 8), checked against its pairs, the index's passage vectors and its own
    pair distances (``representation_geometry.recomputed``; the queries are not re-encoded). A crate without
    weights leaves the index out: then only the alignments are recomputed, from the pair distances."""
    from . import representation_geometry   # here, not above: it loads torch and transformers

    record = auditor.verify(path)
    stored = json.loads(Path(path).read_text())
    inputs = {name: next(iter(files)) for name, files in record["inputs"].items() if files}
    try:
        made = representation_geometry.summary(stored["distances"], stored["mean"][UNIFORMITY]) \
            if auditor.absent(inputs["index"], f"input of {path} is missing") else \
            representation_geometry.recomputed(stored, inputs["index"], inputs["qrels"], inputs["folds"],
                                               record["wildcards"]["fold"])
    except ValueError as problem:
        auditor.fail(path, str(problem))
    for metric in GEOMETRY_METRICS:
        if not close(made["mean"][metric], stored["mean"][metric]):
            auditor.fail(path, f"{metric} is {stored['mean'][metric]!r}, but {inputs['index']}'s vectors and its "
                            f"pair distances give {made['mean'][metric]!r}")
    if set(made["per_query"]) != set(stored["per_query"]) or any(
            not close(value[ALIGNMENT], stored["per_query"][q][ALIGNMENT])
            for q, value in made["per_query"].items()):
        auditor.fail(path, "per-query alignments are not the means of its pair distances")
    auditor.did(GEOMETRY_RECOMPUTED, path)
    return stored


def check_geometry_cell(auditor: Auditor, cell: dict, table: str, table_inputs: dict[str, str]) -> None:
    """An alignment or uniformity cell: each geometry file one recorded for the table, its chain re-hashed and its
    values recomputed; the cell their mean, printed × 100 to one decimal."""
    values = []
    for entry in cell["runs"]:
        path = entry["metrics_file"]
        if path not in table_inputs:
            auditor.fail(path, f"is not among the inputs recorded for {table}")
        auditor.check_input(path, table_inputs[path], table)
        stored = recompute_geometry(auditor, path)
        value = stored["mean"][cell["metric"]]
        if not close(value, entry["value"]):
            auditor.fail(path, f"the table took {entry['value']!r}, the file holds {value!r}")
        per_query = {q: v[ALIGNMENT] for q, v in stored["per_query"].items()} \
            if cell["metric"] == ALIGNMENT else None
        if entry["per_query"] != per_query:
            auditor.fail(path, "the table's per-query values differ from the file's")
        values.append(value)
    mean = fmean(values)
    if not close(mean, cell["value"]) or cell["printed"] != f"{100 * mean:.1f}":
        auditor.fail(table, f"value {cell['value']!r} printed {cell['printed']!r}: the mean of its {len(values)} "
                         f"files is {mean!r}, printed {100 * mean:.1f}")


def attention_file_entropy(auditor: Auditor, point: dict) -> None:
    """A point is its layer's mean over the passages of its attention file, as the file's own mean, and the file's
    sample is the one its ids make."""
    from .attention_entropy import sample_digest   # here, not above: it loads torch and transformers

    found = json.loads(Path(point["attention_file"]).read_text())
    column = [row[point["layer"] - 1] for row in found["per_passage"]]
    mean = fmean(column)
    if not (close(mean, found["entropy"][point["layer"] - 1]) and close(mean, point["value"])):
        auditor.fail(point["attention_file"], f"layer {point['layer']}: the figure has {point['value']!r}, the file "
                                              f"{found['entropy'][point['layer'] - 1]!r}, the mean of its "
                                              f"{len(column)} passages {mean!r}")
    ids = found["sample"]["ids"]
    if len(ids) != len(column) or not sample_digest(ids) == found["sample"]["sha256"] == point["sample_sha256"]:
        auditor.fail(point["attention_file"], "its sample of passages is not the one its ids and the figure name")


def figure_points(auditor: Auditor, pdf_path: str, record: dict, cells: list[str] | None,
                  say: Say) -> list[dict] | None:
    """Check every point of a figure of [CLS] attention entropy (Condenser Figure 2; or the ``cells`` asked for): the
    PDF is the drawing of its JSON twin (drawn again, byte for byte) and the CSV its points; each point's attention
    file is the one recorded, its chain re-hashed back to the checkpoint and the documents, and the point its
    layer's mean over the file's passages; each point, and the whole figure, what the recorded inputs and layout
    give. The entropies themselves are not recomputed from the checkpoint (that is a model run)."""
    from . import attention_figure as attention   # here, not above: it loads torch and transformers

    json_path, csv_path = (next(iter(record["outputs"][name])) for name in ("json", "csv"))
    figure = json.loads(Path(json_path).read_text())
    if attention.drawn(figure)[0] != Path(pdf_path).read_bytes():
        auditor.fail(pdf_path, f"is not the drawing of {json_path}")
    if attention.figure_csv(figure) != Path(csv_path).read_text():
        auditor.fail(csv_path, f"is not the points of {json_path}")
    numbers = chosen(attention.figure_points(figure), cells, pdf_path, say)
    if numbers is None:
        return None
    inputs = {p: h for files in record["inputs"].values() for p, h in files.items()}
    for point in numbers:
        auditor.cell = point["cell"]
        if point["attention_file"] not in inputs:
            auditor.fail(point["attention_file"], f"is not among the inputs recorded for {pdf_path}")
        auditor.check_input(point["attention_file"], inputs[point["attention_file"]], pdf_path)
        attention_file_entropy(auditor, point)
    auditor.cell = "(figure)"
    files = attention_files(record["params"]["dense_figure"])
    if any(set(files[name]) != set(record["inputs"].get(name, {})) for name in files):
        auditor.fail(pdf_path, "its recorded attention files are not those its recorded layout names")
    try:
        made = attention.build_attention_figure(record["params"]["dense_figure"], files["pretrained"],
                                                files["fine_tuned"])
    except ValueError as problem:
        auditor.fail(pdf_path, f"its recorded inputs do not make its layout: {problem}")
    compare_cells(auditor, numbers, attention.figure_points(made), json_path, complete=not cells)
    if not cells and figure != made:
        auditor.cell = "(figure)"
        auditor.fail(json_path, "is not the figure its recorded inputs and layout give (panels, labels, sample)")
    return numbers


def attention_trace(auditor: Auditor, point: dict) -> list[str]:
    """A figure point's trace: its value, the passages it averages and the job and checkpoint behind it."""
    record = auditor.verified[point["attention_file"]]
    state = "dirty" if record["git"]["dirty"] else "clean"
    return [f"cell {point['cell']} ({point['panel']}, {point['model']}, layer {point['layer']}): {point['printed']} "
            f"= mean [CLS] attention entropy over {point['passages']} passages of {point['attention_file']}",
            f"  {record['rule']} at commit {record['git']['commit']} ({state}): checkpoint {point['checkpoint']}; "
            f"sample {point['sample_sha256'][:12]} of {point['docs']} (seed {point['seed']})"]


def planned_table(record: dict, config: Mapping[str, Any], report: str) -> tuple[dict[str, list[str]], str]:
    """The metrics and summaries files the config asks of a table, and the settings they follow."""
    paper, name = record["wildcards"]["paper"], record["wildcards"]["table"]
    return dense_report_runs(config, paper, name), f"dense_retrieval.folds, seeds, tables.{paper}.{name}"


def planned_figure(record: dict, config: Mapping[str, Any], report: str) -> tuple[dict[str, list[str]], str]:
    """The attention files the config asks of a figure, and the settings they follow."""
    paper, name = record["wildcards"]["paper"], record["wildcards"]["figure"]
    return dense_figure_inputs(config, paper, name), f"dense_retrieval.folds, seeds, figures.{paper}.{name}"


VECTORS = "recomputed from the index's vectors"
AUDITS = Audits(
    reports={"dense_table_tex": ReportCheck("cell", retrieval_table_check("dense_table"), planned_table, table=True),
             "dense_figure_pdf": ReportCheck("point", figure_points, planned_figure, trace=attention_trace)},
    made_from={"dense_metrics": ("dense_run",), "dense_run": ("dense_index",), "dense_index": ("retriever_model",),
               "untrained_metrics": ("untrained_run",), "untrained_run": ("untrained_index",),
               "dense_geometry": ("dense_index",), "untrained_geometry": ("untrained_index",),
               "dense_bm25_metrics": ("bm25_run",), "dense_target_metrics": ("dense_target_run",),
               "dense_target_run": ("dense_index",), "retriever_model": ("pretrained", "mined_negatives"),
               "mined_negatives": ("dense_run",)},
    trained={"retriever_model": ()},
    measured={"dense_geometry": VECTORS, "untrained_geometry": VECTORS},
    metrics={metric: check_geometry_cell for metric in GEOMETRY_METRICS})

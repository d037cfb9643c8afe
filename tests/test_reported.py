"""What each paper printed, as data (config/reported/<paper>.yaml): every reported cell is a cell its paper
configuration builds, every table that configuration builds is accounted for, and a malformed file is named with
the key at fault."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from peftir.pipeline import plan
from peftir.pipeline.config import load_config
from peftir.reports.reported import ReportedError, check_cells, load_reported

REPO = Path(__file__).resolve().parents[1]
REPORTED = sorted((REPO / "config" / "reported").glob("*.yaml"))
PAPERS = {"semi-siamese": "", "splade-adapters": "splade-adapters/", "modular-clir": "modular-clir/",
          "dptdr": "dptdr/", "condenser": "condenser/"}


def test_every_paper_has_a_reported_file():
    assert {path.stem for path in REPORTED} == set(PAPERS)


@pytest.fixture(scope="module", params=REPORTED, ids=lambda path: path.stem)
def paper(request, irds_home):
    reported = load_reported(request.param)
    config = load_config(REPO, [str(REPO / "config.yaml"), str(REPO / reported.configuration)])
    prefix = PAPERS[reported.paper]
    built = {name[len(prefix):]: ids for name, ids in plan.report_cells(config).items()
             if name.startswith(prefix) and "/" not in name[len(prefix):]}
    return reported, built


def test_every_reported_cell_is_a_cell_the_paper_configuration_builds(paper):
    reported, built = paper
    check_cells(reported, built)
    assert sum(len(table.cells) for table in reported.tables.values()) > 0 or reported.paper == "modular-clir"


def test_every_table_the_paper_configuration_builds_is_accounted_for(paper):
    """Nothing left out silently: each built table is in the file, with its numbers or the reasons it has none."""
    reported, built = paper
    assert set(built) == set(reported.tables), f"{reported.path}: tables {sorted(set(built) ^ set(reported.tables))}"
    for name, table in reported.tables.items():
        assert table.cells or table.without_counterpart, f"{reported.path}: {name} reports nothing and says no why"
        assert all(entry.get("why") for entry in table.without_counterpart)


def test_a_baseline_is_a_row_of_its_table(paper):
    reported, built = paper
    for name, table in reported.tables.items():
        if table.baseline is None:
            continue
        rows = {cell.split(" | ")[0] if " | " in cell else ":".join(cell.split(":")[:-2]) for cell in built[name]}
        assert table.baseline in rows, f"{reported.path}: {name}'s baseline {table.baseline!r} is not a row"


def test_values_are_the_printed_numbers_in_the_pipelines_units():
    """Semi-Siamese prints fractions as they are; DPTDR prints percentages, stored as fractions."""
    semi = load_reported(REPO / "config" / "reported" / "semi-siamese.yaml").tables["table3"].cells[0]
    assert semi.cell == "monobert:full:robust04:P@20" and semi.printed == "0.3966" and semi.value == 0.3966
    dptdr = {c.cell: c for c in load_reported(REPO / "config" / "reported" / "dptdr.yaml").tables["table4"].cells}
    assert all(c.value == pytest.approx(float(c.printed) / 100) for c in dptdr.values())


def _write(tmp_path: Path, document: dict) -> Path:
    path = tmp_path / "paper.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


GOOD = {"paper": "x", "source": "s", "configuration": "config/x.yaml", "tables": {"table1": {
    "place": "Table 1", "baseline": "FT", "test": {"status": "none printed", "source": "no marks (line 9)"},
    "cells": [{"cell": "FT | MRR@10", "printed": "38.7", "value": 0.387, "row": "FT", "column": "MRR@10"},
              {"cell": "DPT | MRR@10", "printed": "38.4", "value": 0.384, "row": "DPT", "column": "MRR@10"}]}}}
PRINTED = {"status": "printed", "test": "Student's t-test", "samples": "seeds", "paired": False, "tails": 1,
           "marks": {"*": 0.05, "**": 0.01}, "correction": "none", "source": "'*p<=0.05 (1-tailed)' (line 158)"}


@pytest.mark.parametrize("change, message", [
    (lambda d: d["tables"]["table1"].update(colour="red"), "tables.table1: unknown key(s) colour"),
    (lambda d: d.pop("source"), "missing key(s) source"),
    (lambda d: d["tables"]["table1"]["cells"].append(dict(d["tables"]["table1"]["cells"][0])),
     "cell 'FT | MRR@10' given twice"),
    (lambda d: d["tables"]["table1"]["cells"][0].update(value="38.7"), "a finite number"),
    (lambda d: d["tables"]["table1"]["cells"][0].update(value=None), "null only where the paper prints '-'"),
    (lambda d: d["tables"]["table1"].update(without_counterpart=[{"row": "r", "column": "c"}]), "needs its `why`"),
    # what the paper tested is said, not inferred from its marks
    (lambda d: d["tables"]["table1"].pop("test"), "tables.table1.test: missing; say what the paper tested"),
    (lambda d: d["tables"]["table1"]["test"].update(status="maybe"), "test.status = 'maybe': allowed: printed"),
    (lambda d: d["tables"]["table1"].update(test={**PRINTED, "tails": 3}), "tails 1 or 2"),
    (lambda d: d["tables"]["table1"].update(test={k: v for k, v in PRINTED.items() if k != "marks"}),
     "test: missing key(s) marks"),
    (lambda d: d["tables"]["table1"].update(test={**PRINTED, "source": " "}), "test.source: quote where"),
    # a row compared with another than the baseline cites the paper's sentence
    (lambda d: d["tables"]["table1"].update(row_baselines={"DPT": "FT"}), "row_baselines.DPT: a mapping with "
                                                                          "`against`"),
    (lambda d: d["tables"]["table1"].update(row_baselines={"DPT": {"against": "X", "cites": "c"}}),
     "'DPT' -> 'X': both must be rows"),
    # an equivalence claim has a margin, its reason and the paper's words
    (lambda d: d["tables"]["table1"].update(equivalence=[{"rows": ["DPT"], "against": "FT", "margin": 0,
                                                          "reason": "r", "claim": "c"}]), "margin = 0: a positive"),
    (lambda d: d["tables"]["table1"].update(equivalence=[{"rows": ["DPT"], "against": "FT", "margin": 0.01,
                                                          "reason": " ", "claim": "c"}]), "say why this margin"),
    (lambda d: d["tables"]["table1"].update(equivalence=[{"rows": ["XX"], "against": "FT", "margin": 0.01,
                                                          "reason": "r", "claim": "c"}]), "rows ['XX'] are not rows"),
])
def test_a_malformed_file_is_named_with_the_key_at_fault(tmp_path, change, message):
    document = yaml.safe_load(yaml.safe_dump(GOOD))
    change(document)
    path = _write(tmp_path, document)
    with pytest.raises(ReportedError, match="paper.yaml") as error:
        load_reported(path)
    assert message in str(error.value)


def test_a_cell_the_build_lacks_or_a_table_it_does_not_build_is_named(tmp_path):
    reported = load_reported(_write(tmp_path, GOOD))
    check_cells(reported, {"table1": ["FT | MRR@10", "DPT | MRR@10", "FT | R@1000"]})
    with pytest.raises(ReportedError, match="cell 'FT | MRR@10' .* is not a cell of the built table"):
        check_cells(reported, {"table1": ["DPT | MRR@10"]})
    with pytest.raises(ReportedError, match="tables.table1: not a table config/x.yaml builds"):
        check_cells(reported, {"table2": []})


def test_every_reported_table_says_what_the_paper_tested_and_where():
    """The companion reads what a paper tested from its file, not from its marks: Semi-Siamese Tables 3-5 print a
    one-tailed test of seeds, SPLADE's letters a test of queries, DPTDR and Condenser none, modular CLIR's marks are
    not transcribed."""
    tests = {path.stem: {name: table.test for name, table in load_reported(path).tables.items()} for path in REPORTED}
    semi = tests["semi-siamese"]
    assert {name: test.status for name, test in semi.items()} == {
        "table3": "printed", "table4": "printed", "table5": "printed", "table6": "none printed",
        "table7": "none printed"}
    assert (semi["table3"].samples, semi["table3"].paired, semi["table3"].tails, dict(semi["table3"].marks)) == \
        ("seeds", False, 1, {"*": 0.05, "**": 0.01})
    assert all(test.letters for name, test in tests["splade-adapters"].items() if test.status == "printed")
    assert {test.status for test in tests["dptdr"].values()} | {test.status for test in tests["condenser"].values()} \
        == {"none printed"}
    assert {test.status for test in tests["modular-clir"].values()} == {"not transcribed"}
    assert all(test.source.strip() for tables in tests.values() for test in tables.values())


def test_a_retrieval_tables_collections_are_those_its_paper_configuration_searches(paper):
    """What collection the paper's numbers score (``collection``) is the one the paper configuration's cells search,
    column by column: what tells a like-for-like cell from a substituted one."""
    from peftir.contract.cells import split_cell_id
    from peftir.contract.retrieval import retrieval_cell, searched_collection
    from peftir.dense.contract import dense_report_layout
    from peftir.splade.contract import splade_report_layout

    reported, _ = paper
    if reported.paper not in ("dptdr", "condenser", "splade-adapters"):
        return
    config = load_config(REPO, [str(REPO / "config.yaml"), str(REPO / reported.configuration)])
    for name, table in reported.tables.items():
        layout = (splade_report_layout(config, name) if reported.paper == "splade-adapters" else
                  dense_report_layout(config, reported.paper, name))
        searched = {f"{row['label']} | {column['label']}": searched_collection(retrieval_cell(row, column))
                    for row in layout["rows"] for column in layout["columns"] if not column.get("mean_of")}
        for cell in table.cells:
            if cell.cell in searched:
                assert table.collection_of(split_cell_id(cell.cell)[1]) == searched[cell.cell], (name, cell.cell)

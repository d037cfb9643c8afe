"""The report page: every printed number of every table is on it as printed, one click (an anchor) from its
provenance (its runs' metrics files, their records, the audit command); the scorecards' and significance
companions' numbers are theirs; it needs no script and no server."""
from __future__ import annotations

import json
from html.parser import HTMLParser

from peftir.reports.page import anchor, build_page, make_page, shown
from peftir.reports.reported import PaperTest, ReportedCell, ReportedTable
from peftir.reports.scorecard import build_scorecard
from peftir.reports.significance_tables import companion

RUNS = [{"fold": "1", "seed": 1, "metrics_file": "results/metrics/d/r/full/fold1-seed1.json", "value": 0.3,
         "per_query": {"q1": 0.2, "q2": 0.4}},
        {"fold": "2", "seed": 1, "metrics_file": "results/metrics/d/r/full/fold2-seed1.json", "value": 0.2,
         "per_query": {"q3": 0.1, "q4": 0.3}}]


def cell(row: str, value: float, stars: str = "", against: str | None = None) -> dict:
    made = {"cell": f"twinbert:{row}:vaswani:P@20", "group": "TwinBERT", "label": row, "dataset_label": "Vaswani",
            "metric": "P@20", "value": value, "printed": f"{value:.4f}", "stars": stars, "row_kind": "method",
            "rounding": "4 decimal places", "printed_parameters": "0.1M", "p_value": 0.04 if stars else None,
            "runs": [{**run, "per_query": {q: v + value - 0.25 for q, v in run["per_query"].items()}} for run in RUNS]}
    return made | ({"ttest": {"test": "one-tailed t-test", "against": against}} if against else {})


CELLS = [cell("full", 0.25), cell("prefix", 0.2712, "*", "twinbert:full:vaswani:P@20"),
         cell("lora", 0.2401, "", "twinbert:full:vaswani:P@20")]
TABLE = ReportedTable("table5", "Table 5", "", "twinbert:full", (
    ReportedCell("twinbert:full:robust04:P@20", "0.3059", 0.3059, "", "TwinBERT Full FT", "Robust04 P@20"),
    ReportedCell("twinbert:prefix:robust04:P@20", "0.3117", 0.3117, "**", "TwinBERT Prefix", "Robust04 P@20")),
    {}, (), test=PaperTest("printed", "Student's t-test", "seeds", False, 1, {"*": 0.05, "**": 0.01}, "none", "notes"))
SETTINGS = {"test": "t", "correction": "holm", "alpha": 0.05, "permutations": 200, "seed": 1}


class Page(HTMLParser):
    """The page's links (href → text), element ids (id → text inside) and scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.ids: dict[str, str] = {}
        self.scripts = 0
        self._open: list[tuple[str, str | None, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.scripts += tag == "script"
        if tag in ("a", "div"):
            self._open.append((tag, attrs.get("href") or attrs.get("id"), []))

    def handle_data(self, data):
        for _, _, text in self._open:
            text.append(data)

    def handle_endtag(self, tag):
        if tag in ("a", "div") and self._open and self._open[-1][0] == tag:
            _, key, text = self._open.pop()
            if tag == "a":
                self.links.append((key, "".join(text)))
            elif key:
                self.ids[key] = "".join(text)


def page(tmp_path) -> tuple[str, Page]:
    card = build_scorecard(CELLS, TABLE, {"tolerance": 0.05, "stand_ins": {"robust04": "vaswani"},
                                          "budget": "embedded"}, "table5", "the paper")
    tables = [{"report": "table5", "paper": "semi-siamese", "cells": CELLS, "scorecard": card,
               "scorecard_figure": "results/figures/table5.repro.png",
               "significance": companion(CELLS, SETTINGS, "table5", TABLE, {"robust04": "vaswani"})}]
    figures = [{"report": "figure4", "paper": "semi-siamese", "png": "results/figures/figure4.png",
                "pdf": "results/figures/figure4.pdf"}]
    text = build_page({"semi-siamese": "Jung et al."}, tables, figures,
                      {"commit": "abc", "configfiles": ["config.yaml"], "note": "embedded"}, "results/report")
    parsed = Page()
    parsed.feed(text)
    return text, parsed


def test_every_printed_number_links_to_its_provenance(tmp_path):
    text, parsed = page(tmp_path)
    targets: dict[str, list[str]] = {}
    for href, label in parsed.links:
        targets.setdefault(href[1:], []).append(label)
    for made in CELLS:
        key = anchor("table5", made["cell"])
        assert targets[key][0] == shown(made)                        # the table's link: the number as printed
        provenance = parsed.ids[key]
        assert made["cell"] in provenance and f"peftir audit results/tables/table5.tex --cell {made['cell']}" \
            in provenance
        for run in made["runs"]:
            assert run["metrics_file"].removeprefix("results/") in text       # linked relative to results/report
    assert "../provenance/metrics/d/r/full/fold1-seed1.json.json" in text     # the run's record
    assert parsed.scripts == 0


def test_the_companions_numbers_are_theirs(tmp_path):
    text, parsed = page(tmp_path)
    assert ("#" + anchor("table5", "twinbert:prefix:vaswani:P@20"), "0.2712*") in parsed.links
    assert "0.3117" in text and "-0.0405" in text                     # reported and the difference
    # one seed: the paper's test of per-seed means cannot be run ("untestable"), the field's per-query one can
    assert "Significance: 1 significant in the paper; its way: 0 kept, 0 reversed, 0 lost, 0 gained; 2 significant " \
           "after holm" in text and "untestable" in text
    assert "** (sig. better)" in text and "table's own stars" in text
    assert "../figures/table5.repro.png" in text and "../figures/figure4.png" in text
    assert "peftir audit results/figures/figure4.pdf" in text


def test_make_page_reads_the_twins_and_writes_the_page(tmp_path):
    card = build_scorecard(CELLS, TABLE, {"tolerance": 0.05, "stand_ins": {}, "budget": "paper"}, "table5", "p")
    files = {}
    for name, document in (("json", CELLS), ("scorecard", card),
                           ("significance", companion(CELLS, SETTINGS, "table5", TABLE, {"robust04": "vaswani"}))):
        files[name] = str(tmp_path / f"{name}.json")
        (tmp_path / f"{name}.json").write_text(json.dumps(document))
    output = tmp_path / "report" / "index.html"
    output.parent.mkdir()
    make_page([{"report": "table5", "paper": "semi-siamese", "scorecard_png": "x.png", **files}], [],
              {"semi-siamese": "Jung et al."}, {"commit": "abc", "configfiles": ["config.yaml"], "note": ""},
              str(output))
    assert output.read_text().startswith("<!DOCTYPE html>") and "0.2712*" in output.read_text()

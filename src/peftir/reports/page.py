"""One page to read it all (``results/report/index.html``): every paper's tables as built, each with its scorecard
against the paper and its significance companion, and the figures; each printed number one click from its
provenance (the runs and metrics files behind it, their records, the audit command that re-checks it).

A static HTML file written from the tables' JSON twins and their companions, no script and no server: it opens from
the disk in any browser, and links to the files under ``results/`` it names. Its numbers are the twins' printed
values, character for character (tested).
"""
from __future__ import annotations

import hashlib
import html
import json
import os
from typing import Any, Iterable, Mapping

from ..files import atomic_write
from ..provenance.records import record_path
from .scorecard import caption as scorecard_caption, row_label, shown_difference
from .significance_tables import caption as significance_caption, paper_shown

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:84em;color:#222;line-height:1.35}
table{border-collapse:collapse;margin:.6em 0;font-size:.86em}th,td{border-bottom:1px solid #ddd;padding:.2em .5em}
th{background:#f4f4f4;text-align:center}td.n{text-align:right;font-variant-numeric:tabular-nums}
td a{color:inherit;text-decoration:none;border-bottom:1px dotted #888}td a:hover{background:#ffeab0}
.prov{display:none;border:1px solid #e0c060;background:#fffbe8;padding:.5em 1em;margin:.5em 0;font-size:.85em}
.prov:target{display:block}code{font-size:.95em}figure img{max-width:48em;border:1px solid #ddd}
.summary{color:#444;font-size:.9em}.note{background:#f0f4ff;padding:.4em .8em;border-left:3px solid #88a}
nav a{margin-right:1em}details{margin:.4em 0}summary{cursor:pointer;font-weight:600}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def anchor(report: str, cell: str) -> str:
    """A cell's provenance anchor: stable, and safe in a URL whatever the cell id holds."""
    return "p-" + hashlib.sha256(f"{report}\0{cell}".encode()).hexdigest()[:16]


def _link(path: str, page_dir: str) -> str:
    """A file under results/ as a link relative to the page."""
    return _e(os.path.relpath(path, page_dir))


def shown(cell: Mapping[str, Any]) -> str:
    """A cell as the table prints it: its printed value and its stars."""
    return f"{cell['printed']}{cell.get('stars') or ''}"


def table_html(report: str, cells: list[dict], page_dir: str) -> str:
    """A table as built: rows (group, label) × columns (dataset, metric), each number a link to its provenance."""
    rows = list(dict.fromkeys((c["group"], c["label"]) for c in cells))
    columns = list(dict.fromkeys((c["dataset_label"], c["metric"]) for c in cells))
    at = {((c["group"], c["label"]), (c["dataset_label"], c["metric"])): c for c in cells}
    head = "".join(f"<th>{_e(d)}<br>{_e(m)}</th>" for d, m in columns)
    body = []
    for row in rows:
        tds = []
        for column in columns:
            cell = at.get((row, column))
            tds.append("<td></td>" if cell is None else
                       f'<td class="n"><a href="#{anchor(report, cell["cell"])}" title="{_e(cell["cell"])}">'
                       f"{_e(shown(cell))}</a></td>")
        label = f"{_e(row[0])} / {_e(row[1])}" if row[0] else _e(row[1])
        body.append(f"<tr><th style='text-align:left'>{label}</th>{''.join(tds)}</tr>")
    provenance = "".join(cell_provenance(report, cell, page_dir) for cell in cells)
    return (f"<table class='results'><tr><th></th>{head}</tr>{''.join(body)}</table>"
            f"<div class='provenances'>{provenance}</div>")


def cell_provenance(report: str, cell: Mapping[str, Any], page_dir: str) -> str:
    """What one click on a number shows: the value and how it was made, its runs with their metrics files and
    records, and the command that audits it."""
    runs = cell.get("runs") or []
    items = "".join(
        f"<li>fold {_e(run.get('fold', '-'))}, seed {_e(run.get('seed', '-'))}: {run['value']:.4f} — "
        f"<a href='{_link(run['metrics_file'], page_dir)}'>{_e(run['metrics_file'])}</a> "
        f"(<a href='{_link(str(record_path(run['metrics_file'])), page_dir)}'>record</a>)</li>" for run in runs)
    made = (f"mean {cell['value']!r} of {len(runs)} runs ({_e(cell.get('rounding') or '')})" if runs else
            _e(cell.get("note") or cell.get("rounding") or "no runs: nothing to trace"))
    test = cell.get("ttest")
    tested = f"<br>{_e(test['test'])}: p = {_e(cell.get('p_value'))} against <code>{_e(test['against'])}</code>" \
        if test and "against" in test else ""
    table = _e(f"results/tables/{report}.tex")
    return (f"<div class='prov' id='{anchor(report, cell['cell'])}'><b><code>{_e(cell['cell'])}</code></b> "
            f"printed {_e(shown(cell))}: {made}{tested}<ul>{items}</ul>"
            f"audit: <code>peftir audit {table} --cell {_e(cell['cell'])}</code></div>")


def scorecard_html(card: Mapping[str, Any], figure: str, page_dir: str) -> str:
    """A scorecard's summary, cells and rows, its cells linked to the table cell they compare, and its figure."""
    s = card["summary"]
    rows = "".join(
        f"<tr><td>{_e(c['row'])}</td><td>{_e(c['column'])}"
        f"{''.join(f'<br><small>{_e(what)}</small>' for what in c.get('substitutions') or [])}</td>"
        f"<td class='n'>{_e(c['reported_printed'])}</td>"
        f"<td class='n'><a href='#{anchor(card['report'], c['cell'])}'>{_e(c['reproduced_printed'])}</a></td>"
        f"<td class='n'>{_e(shown_difference(c)[0])}</td>"
        f"<td class='n'>{'unst.' if c.get('effect') == 'unstable' else _number(c['ER'])}</td>"
        f"<td class='n'>{_number(c['DRI'])}</td>"
        f"<td>{'✓' if c['within_tolerance'] else ''}</td></tr>" for c in card["cells"])
    effects = "".join(f"<tr><td>{_e(row_label(r))}</td><td>{_e(r['baseline'])}</td><td>{_e(r['verdict'])}</td>"
                      f"<td class='n'>{_number(r['ER'])}</td><td class='n'>{_range(r['ER_range'])}</td>"
                      f"<td class='n'>{_number(r['DRI'])}</td>"
                      f"<td>{_e(_measures(r))}</td></tr>" for r in card["rows"])
    parameters = "".join(f"<tr><td>{_e(p['row'])}</td><td class='n'>{_e(p['reported'])}</td>"
                         f"<td class='n'>{_e(p['reproduced'] or '-')}</td><td>{'✓' if p['equal'] else ''}</td></tr>"
                         for p in card["parameters"])
    return (f"<details><summary>Scorecard: {s['within_tolerance']} of {s['compared']} rebuilt cells within "
            f"tolerance; reproduced (median per-measure ER in [{s['er_range'][0]}, {s['er_range'][1]}]): "
            f"{s['rows_like_for_like_reproduced']} of {s['rows_like_for_like']} like-for-like and "
            f"{s['rows_substituted_reproduced']} of {s['rows_substituted']} substituted row summaries — "
            f"{_e(card['place'])}</summary>"
            f"<p class='summary'>{_e(scorecard_caption(card))}</p>"
            f"<table><tr><th>Row</th><th>Column</th><th>Reported</th><th>Reproduced</th><th>Δ</th><th>ER</th>"
            f"<th>ΔRI</th><th>within</th></tr>{rows}</table>"
            + (f"<table><tr><th>Row</th><th>against</th><th>verdict</th><th>ER (median)</th><th>ER range</th>"
               f"<th>ΔRI (median)</th><th>measures</th></tr>{effects}</table>"
               if effects else "")
            + (f"<table><tr><th>Row</th><th>printed parameters</th><th>built</th><th>equal</th></tr>{parameters}"
               f"</table>" if parameters else "")
            + f"<figure><img src='{_link(figure, page_dir)}' alt='ER vs ΔRI of {_e(card['report'])}'>"
              f"</figure></details>")


def _measures(row: Mapping[str, Any]) -> str:
    """A scorecard row's measures side by side: each column's ER ("unst." where the paper's effect is within its
    printed precision), and the columns left out as not effectiveness."""
    shown = [f"{m['column']} {'unst.' if m['effect'] == 'unstable' else _number(m['ER'])}" for m in row["measures"]]
    return "; ".join(shown + [f"{column} (not effectiveness)" for column in row["left_out"]])


def _range(bounds: list[float] | None) -> str:
    return "-" if bounds is None else f"{bounds[0]:.2f} to {bounds[1]:.2f}"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.4f}"


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None else f"[{low:+.4f}, {high:+.4f}]"


def significance_html(table: Mapping[str, Any]) -> str:
    """A significance companion: its summary and one line per comparison."""
    s = table["summary"]
    rows = "".join(
        f"<tr><td><a href='#{anchor(table['report'], r['cell'])}'>{_e(r['cell'])}</a></td><td>{_e(r['against'])}</td>"
        f"<td>{'paired' if r['paired'] else _e('untested: ' + str(r.get('untested_reason')))}</td>"
        f"<td class='n'>{_signed(r['mean_difference'])}</td>"
        f"<td class='n'>{_interval(r['ci_low'], r['ci_high'])}</td>"
        f"<td class='n'>{_number(r['effect_size'])}</td><td class='n'>{_p(r['p_t'])}</td>"
        f"<td class='n'>{_p(r['p_permutation'])}</td><td class='n'>{_p(r['p_adjusted'])}"
        f"{' †' if r['significant'] else ''}</td><td>{_e(r['corrected'])}</td><td>{_e(paper_shown(r))}</td>"
        f"<td>{_e(r['against_paper'])}</td>"
        f"<td>{_e(r['table_stars'] or '-')}</td></tr>"
        for r in table["comparisons"])
    lost = s["lost"] + s["lost: inconclusive"] + s["lost: contradicted"] + s["lost: supported per query"]
    verdicts = (f"{s['paper_significant']} significant in the paper; its way: "
                f"{s['kept'] + s['kept at a weaker level']} kept, {s['reversed']} "
                f"reversed, {lost} lost, {s['gained']} gained; {s['significant_after_correction']} significant after "
                f"{_e(table['settings']['correction'])}" if s["paper_test"] == "printed" else
                f"the paper's marks: {_e(s['paper_test'])}; {s['significant_after_correction']} significant after "
                f"{_e(table['settings']['correction'])}")
    return (f"<details><summary>Significance: {verdicts}</summary>"
            f"<p class='summary'>{_e(significance_caption(table))}</p>"
            f"<table><tr><th>Cell</th><th>against</th><th>test</th><th>Δ</th><th>95% CI (unadjusted)</th><th>d</th>"
            f"<th>p (t)</th>"
            f"<th>p (perm.)</th><th>p (adj.)</th><th>corrected</th><th>paper</th><th>paper's way</th>"
            f"<th>table's own stars</th></tr>"
            f"{rows}</table></details>")


def _p(value: float | None) -> str:
    return "-" if value is None else (f"{value:.3f}" if value >= 0.001 else f"{value:.1e}")


def build_page(papers: Mapping[str, str], tables: list[Mapping[str, Any]], figures: list[Mapping[str, str]],
               about: Mapping[str, Any], page_dir: str) -> str:
    """The page: a section per paper (``papers``: name → its source, in order) with its tables (``tables``: report,
    paper, cells, scorecard, scorecard figure, significance) and figures (report, paper, png)."""
    sections = []
    for paper, source in papers.items():
        parts = []
        for table in (t for t in tables if t["paper"] == paper):
            parts.append(f"<article id='{_e(table['report'])}'><h3>{_e(table['report'])} "
                         f"<small>({_e(table['scorecard']['place'])})</small></h3>"
                         f"{table_html(table['report'], table['cells'], page_dir)}"
                         f"{scorecard_html(table['scorecard'], table['scorecard_figure'], page_dir)}"
                         f"{significance_html(table['significance'])}</article>")
        for figure in (f for f in figures if f["paper"] == paper):
            parts.append(f"<figure id='{_e(figure['report'])}'><img src='{_link(figure['png'], page_dir)}' "
                         f"alt='{_e(figure['report'])}'><figcaption>{_e(figure['report'])}: audit with "
                         f"<code>peftir audit {_e(figure['pdf'])}</code></figcaption></figure>")
        if parts:
            sections.append(f"<section id='paper-{_e(paper)}'><h2>{_e(paper)}</h2><p class='summary'>{_e(source)}</p>"
                            + "".join(parts) + "</section>")
    nav = "".join(f"<a href='#paper-{_e(paper)}'>{_e(paper)}</a>" for paper in papers)
    note = ("<p class='note'>" + _e(about["note"]) + "</p>") if about.get("note") else ""
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>PEFT-IR Repro: reproduced vs "
            f"reported</title><style>{STYLE}</style></head><body><h1>PEFT-IR Repro: reproduced vs reported</h1>"
            f"<p class='summary'>Commit {_e(about['commit'])}; config files {_e(', '.join(about['configfiles']))}. "
            "Click a number for the runs behind it and the command that audits it.</p>"
            f"{note}<nav>{nav}</nav>{''.join(sections)}</body></html>\n")


def _load(path: str) -> Any:
    with open(path) as handle:
        return json.load(handle)


def make_page(table_files: Iterable[Mapping[str, str]], figure_files: Iterable[Mapping[str, str]],
              papers: Mapping[str, str], about: Mapping[str, Any], output: str) -> None:
    """The ``report_page`` rule: ``table_files`` (per table: report, paper, json, scorecard, scorecard_png,
    significance) and ``figure_files`` (report, paper, pdf, png) into one page at ``output``."""
    page_dir = os.path.dirname(output)
    tables = [{"report": f["report"], "paper": f["paper"], "cells": _load(f["json"]),
               "scorecard": _load(f["scorecard"]), "scorecard_figure": f["scorecard_png"],
               "significance": _load(f["significance"])} for f in table_files]
    with atomic_write(output) as handle:
        handle.write(build_page(papers, tables, list(figure_files), about, page_dir))

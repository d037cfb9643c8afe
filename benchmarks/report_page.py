"""The report page in a real browser: headless Chromium renders ``results/report/index.html``, takes a screenshot and
dumps the DOM it built, and every printed number of every table's JSON twin must be a link of that DOM, as printed.

    python benchmarks/report_page.py [--results results] [--chromium /usr/bin/chromium] [--screenshot page.png]

Needs Chromium (Debian: ``apt-get install chromium``); it is started as the machine's probe starts it, offline
(no background networking, no first-run, a fresh profile). Prints the numbers checked, the time to render, the
screenshot's size; exits 1 when a number is missing from what the browser shows.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path

from peftir.reports.page import anchor

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


class Links(HTMLParser):
    """The text of the first link to each target of a DOM: a table's number is the first link to its cell's anchor."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: dict[str, str] = {}
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            target = dict(attrs).get("href") or ""
            self._open = None if target in self.texts else target
            if self._open is not None:
                self.texts[target] = ""

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self.texts[self._open] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._open = None


def chromium(binary: str, page: Path, *args: str) -> subprocess.CompletedProcess:
    """Chromium run headless on ``page`` with a fresh profile (``args``: what it is to do, e.g. --dump-dom)."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
                              capture_output=True, text=True, timeout=300, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--screenshot", type=Path, default=Path("results/report/index.png"))
    args = parser.parse_args()
    page = args.results / "report" / "index.html"
    started = time.perf_counter()
    dom = chromium(args.chromium, page, "--dump-dom").stdout
    rendered = time.perf_counter() - started
    chromium(args.chromium, page, "--window-size=1400,2400", f"--screenshot={args.screenshot.resolve()}")
    links = Links()
    links.feed(dom)
    checked, missing = 0, []
    twins = [twin for twin in sorted((args.results / "tables").rglob("*.json"))
             if not twin.name.endswith((".repro.json", ".significance.json"))]
    for twin in twins:
        report = twin.relative_to(args.results / "tables").as_posix().removesuffix(".json")
        for cell in json.loads(twin.read_text()):
            checked += 1
            printed = f"{cell['printed']}{cell.get('stars') or ''}"
            if links.texts.get(f"#{anchor(report, cell['cell'])}") != printed:
                missing.append(f"{twin}: {cell['cell']} {printed}")
    print(f"{checked} printed numbers of {len(twins)} tables' JSON twins checked "
          f"against the DOM Chromium built ({len(dom):,} characters, {rendered:.1f} s); screenshot "
          f"{args.screenshot} ({args.screenshot.stat().st_size:,} bytes)")
    if missing:
        print("missing from the page:\n" + "\n".join(missing[:20]))
        sys.exit(1)


if __name__ == "__main__":
    main()

"""Text of one language from Debian packages (or a local file), for training and evaluating language modules.

The modular CLIR system (paper 002) trains a language module per language by masked language modelling on
Wikipedia; offline, the freely licensed text Debian ships stands in: Bibles (SWORD modules: English WEB and
KJV, Spanish Reina-Valera 1909), the translated man pages (manpages-de, manpages-es) and the Debian Reference
(whose sections are the cross-lingual test collection, ``peftir.clir.collection``, and so must not be
language-module training text by default); where the user has extracted Wikipedia, a ``text`` part reads
that file instead, one article a unit, as the authors' ``adapter_mlm.py`` reads the Hugging Face ``wikipedia``
dataset (one example per article): so an article is de-duplicated, held out or trained on whole, and its text
runs on across the 256-token blocks ``peftir.training.mlm`` cuts, with one [CLS] … [SEP] per article. Each reader
yields *units* (a verse, a paragraph, a section, an article) that :func:`build_language_corpus` writes one per
line, shuffled and split into training and held-out text, streamed through bucket files on disk so that a
Wikipedia does not have to fit in memory.
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import html
import itertools
import json
import random
import re
import shutil
import subprocess
import tempfile
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..errors import ActionableError
from .. import progress_log
from ..files import atomic_write, write_json
from ..provenance.records import sha256
from .debian import check_pinned, extract, package_info, package_members
from ..data.empty_documents import is_empty
from ..data.export import normalise
from ..data.trec import MalformedFileError

# --- Bibles (SWORD modules read with pysword) ---------------------------------------------------------------

SWORD_ROOT = "usr/share/sword"
# Elements whose content is not verse text: footnotes (with their references and alternative readings),
# catchwords, index entries, figures.
OSIS_APPARATUS = re.compile(r"<(note|catchWord|rdg|rdgGroup|figure|index)\b[^>]*(?<!/)>.*?</\1>", re.S)
# Section headings are the editors', not the text's; canonical titles (the Psalms' superscriptions) are text.
OSIS_HEADING = re.compile(r'<title\b(?![^>]*canonical="true")[^>]*(?<!/)>.*?</title>', re.S)
# The end of a book: the WEB module appends its whole glossary to the last verse of Revelation after it.
OSIS_BOOK_END = re.compile(r'<div\b(?=[^>]*\beID=)(?=[^>]*\btype="book")[^>]*/>')
# Reina-Valera marks the translators' additions (<transChange>) directly against the next or previous word.
OSIS_GLUED = re.compile(r"</w>(?=<transChange\b)|</transChange>(?=<w\b)")
OSIS_EMPTY = re.compile(r"<[^>]*/>")           # milestones, line and paragraph markers: a word boundary
OSIS_TAG = re.compile(r"<[^>]*>")              # word and phrase markup: no boundary ("give</w>n")
USFM_LEFTOVER = re.compile(r"\\\+?[a-z]+\d*\*?")   # KJV: unconverted USFM markers such as "\nd " and "\+nd*"
SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,.;:!?])")
LETTERS = re.compile(r"[^\W\d_]+")
DROP_CAPITALS_SHARE = 0.5     # of chapters whose first verse holds a capitalised word: a printing convention


def clean_osis(raw: str) -> str:
    """A verse's OSIS markup reduced to its text: no footnotes or editorial headings, words kept apart where
    markup separated them, the pilcrows (KJV paragraph signs) and the WEB glossary removed."""
    book_end = OSIS_BOOK_END.search(raw)
    text = raw[:book_end.start()] if book_end else raw
    text = OSIS_APPARATUS.sub(" ", text)
    text = OSIS_HEADING.sub(" ", text)
    text = OSIS_GLUED.sub(lambda match: match.group(0) + " ", text)
    text = OSIS_TAG.sub("", OSIS_EMPTY.sub(" ", text))
    text = USFM_LEFTOVER.sub("", html.unescape(text)).replace("¶", " ")
    return SPACE_BEFORE_PUNCTUATION.sub(r"\1", normalise(text))


def _capitalised_run(text: str) -> tuple[int, int] | None:
    """Where the first run of all-capital words (two letters or more) of ``text`` lies."""
    words = list(LETTERS.finditer(text))
    for first, word in enumerate(words):
        if len(word[0]) > 1 and word[0].isupper():
            last = first
            while (last + 1 < len(words) and len(words[last + 1][0]) > 1 and words[last + 1][0].isupper()
                   and text[words[last].end():words[last + 1].start()].isspace()):
                last += 1
            return word.start(), words[last].end()
    return None


def undo_drop_capitals(text: str) -> str:
    """"EN el principio" -> "En el principio": a printed Bible's capitals at a chapter's start, which a
    language model would otherwise learn as ordinary spelling."""
    run = _capitalised_run(text)
    if run is None:
        return text
    start, end = run
    return text[:start] + text[start:end].lower().capitalize() + text[end:]


def _chapter_start(key: str) -> bool:
    return key.rsplit(".", 1)[1] == "1"


def _fix_drop_capitals(verses: dict[str, str]) -> dict[str, str]:
    """Undo drop capitals only in a module that prints them (most chapters open with one): elsewhere a
    capitalised word at a chapter's start is the text's own (KJV's "LORD")."""
    starts = [key for key in verses if _chapter_start(key)]
    marked = sum(1 for key in starts if _capitalised_run(verses[key]))
    if not starts or marked < DROP_CAPITALS_SHARE * len(starts):
        return verses
    return {key: undo_drop_capitals(text) if _chapter_start(key) else text for key, text in verses.items()}


def sword_modules(deb: str | Path) -> list[str]:
    """The SWORD module names a package installs (``usr/share/sword/mods.d/*.conf`` sections)."""
    names = []
    for _, content in package_members(deb, f"{SWORD_ROOT}/mods.d/*.conf"):
        names += re.findall(r"^\[([^\]]+)\]", content.decode("utf-8", "replace"), re.M)
    return sorted(names)


def _raw_verses(bible: Any, where: str) -> Iterator[tuple[str, str]]:
    """("Book.chapter.verse", OSIS text) of every verse the module's versification has, in canonical order."""
    for books in bible.get_structure().get_books().values():
        for book in books:
            for chapter, length in enumerate(book.chapter_lengths, start=1):
                texts = list(bible.get_iter(books=[book.osis_name], chapters=[chapter], clean=False))
                if len(texts) != length:
                    raise MalformedFileError(f"{where}: {book.osis_name} {chapter} has {len(texts)} verses, "
                                             f"its versification {length}")
                for verse, text in enumerate(texts, start=1):
                    yield f"{book.osis_name}.{chapter}.{verse}", text


def sword_verses(deb: str | Path, module: str) -> dict[str, str]:
    """Verse key (OSIS ``Gen.1.1``) -> cleaned text of the Bible ``module`` in the package; verses without
    text (omitted by the translation) are left out. Keys follow the module's versification (WEB: NRSVA with
    the Deuterocanon; KJV and RV1909: KJV), so equal keys are the same verse only where those agree."""
    from pysword.modules import SwordModules   # lazy: only the corpus jobs need it

    with tempfile.TemporaryDirectory() as directory:
        extract(deb, SWORD_ROOT, directory)
        library = SwordModules(directory)
        found = library.parse_modules()
        if module not in found:
            raise ActionableError(f"{deb}: no SWORD module {module!r}; the package holds {sorted(found)}")
        bible = library.get_bible_from_module(module)
        if hasattr(bible, "_decompressed_text"):
            # pysword 0.2.8 inflates a whole compressed book for every verse it reads; the book (BlockType=BOOK)
            # stays the same for thousands of verses in a row, so keeping the last blocks makes reading
            # a Bible take a second instead of minutes.
            bible._decompressed_text = functools.lru_cache(maxsize=2)(bible._decompressed_text)
        verses = {key: clean_osis(raw) for key, raw in _raw_verses(bible, f"{deb}: {module}")}
    return _fix_drop_capitals({key: text for key, text in verses.items() if text})


# --- Man pages (roff rendered by groff) -------------------------------------------------------------------

# One output line per paragraph (a line length no paragraph reaches), no page breaks, plain characters
# instead of overstriking or terminal escapes, tables laid out by tbl.
GROFF_OPTIONS = ["-T", "utf8", "-K", "utf8", "-t", "-man", "-rLL=1000n", "-rcR=1", "-P-cbou"]
TAG = re.compile(r"^\S+(?: \S+)? {2,}")        # a tagged paragraph's tag (an option, a bullet) before its text
WORD = re.compile(r"[(\[»«„“‚‘\"'¿¡]*[^\W\d_][^\W_]*(?:[-'’.][^\W_]+)*[)\]«»“”‘’\"'.,;:!?]*")
MIN_PARAGRAPH_WORDS = 6
MIN_PROSE_SHARE = 0.7     # of a paragraph's tokens that are words, not options, paths, numbers or code


def _groff() -> str:
    path = shutil.which("groff")
    if path is None:
        raise ActionableError("groff not found: man pages are rendered to text with GNU groff; install it "
                              "(Debian/Ubuntu: apt-get install groff-base; macOS: brew install groff)")
    return path


def groff_version() -> str:
    """The renderer's version, recorded with a corpus: another groff may hyphenate or map characters otherwise."""
    done = subprocess.run([_groff(), "--version"], capture_output=True, text=True, check=False)
    return done.stdout.splitlines()[0] if done.stdout else "unknown"


def render_manpage(source: bytes, where: str) -> str:
    """A man page's roff source as plain text, one line per paragraph."""
    done = subprocess.run([_groff(), *GROFF_OPTIONS], input=source, capture_output=True, check=False)
    if done.returncode != 0:
        raise MalformedFileError(f"{where}: groff failed: {done.stderr.decode(errors='replace').strip()[:500]}")
    return done.stdout.decode("utf-8", "replace")


def _prose(line: str) -> str | None:
    """The paragraph on a rendered line when it is prose: long enough, mostly words, not a table row."""
    text = TAG.sub("", line.strip(), count=1)
    tokens = text.split()
    if "   " in text or len(tokens) < MIN_PARAGRAPH_WORDS:
        return None
    words = sum(1 for token in tokens if WORD.fullmatch(token))
    return text if words >= MIN_PROSE_SHARE * len(tokens) else None


def rendered_paragraphs(text: str) -> Iterator[str]:
    """Prose paragraphs of a rendered man page. Unindented lines are the header, footer and section
    headings; several lines at one indent within a block are code, tables, lists or index entries."""
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip()]
        indents = [len(line) - len(line.lstrip(" ")) for line in lines]
        for line, indent in zip(lines, indents):
            if indent and indents.count(indent) == 1 and (paragraph := _prose(line)):
                yield paragraph


def manpage_paragraphs(deb: str | Path, section_glob: str = "man*") -> Iterator[str]:
    """Prose paragraphs of the package's man pages (``usr/share/man/<lang>/<section_glob>/*.gz``), page by
    page in archive order. Pages that only include another (``.so``) and aliases (links) are skipped."""
    for path, content in package_members(deb, f"usr/share/man/*/{section_glob}/*.gz"):
        where = f"{deb}: {path}"
        try:
            source = gzip.decompress(content)
        except (OSError, EOFError, zlib.error) as problem:
            raise MalformedFileError(f"{where}: not gzip ({problem})") from None
        if not source.lstrip().startswith(b".so "):
            yield from rendered_paragraphs(render_manpage(source, where))


# --- The Debian Reference (DocBook HTML) ------------------------------------------------------------------

SECTION_CLASSES = {"section", "chapter", "appendix", "preface"}
SKIPPED_CLASSES = {"navheader", "navfooter", "toc", "list-of-tables", "list-of-figures", "footnote", "footnotes"}
INLINE = {"a", "abbr", "acronym", "b", "cite", "code", "em", "i", "kbd", "q", "samp", "span", "strong", "sub",
          "sup", "tt", "var"}
VOID = {"br", "hr", "img", "meta", "link", "input", "col", "area", "base", "wbr"}
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
NUMBERING = re.compile(r"^(?:[^\W\d]+\s+)?(?:\d+|[A-Z])(?:\.\d+)*\.\s+")   # "3.1.1. ", "Chapter 3. ", "A. "


class _Section:
    """A section being read: its anchor and title (from its heading) and its own text (subsections apart)."""

    def __init__(self) -> None:
        self.anchor: str | None = None
        self.title: list[str] = []
        self.body: list[str] = []


class _ReferenceParser(HTMLParser):
    """Sections of DocBook HTML chapters. A section's text is its own paragraphs, lists, tables and code,
    without its subsections' (each is a unit of its own), its heading, or navigation."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, str]] = []       # (tag, role): role "section", "skip", "heading" or ""
        self.sections: list[_Section] = []           # the sections open now, innermost last
        self.found: list[_Section] = []              # every section, in document order

    def _role(self, tag: str, classes: set[str]) -> str:
        if tag == "div" and classes & SECTION_CLASSES:
            return "section"
        if classes & SKIPPED_CLASSES:
            return "skip"
        if tag in HEADINGS and "title" in classes and self.sections and self.sections[-1].anchor is None:
            return "heading"
        return ""

    def _roles(self) -> set[str]:
        return {role for _, role in self.open}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            self._text(" ")
            return
        attributes = dict(attrs)
        role = self._role(tag, set((attributes.get("class") or "").split()))
        if role == "section":
            self.sections.append(_Section())
            self.found.append(self.sections[-1])
        self.open.append((tag, role))
        self._anchor(tag, attributes)
        if tag not in INLINE:
            self._text(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._anchor(tag, dict(attrs))
        if tag not in INLINE:
            self._text(" ")

    def _anchor(self, tag: str, attributes: Mapping[str, str | None]) -> None:
        """The heading's first ``<a id>`` names the section (the same id in every translation)."""
        if tag == "a" and attributes.get("id") and "heading" in self._roles() and self.sections[-1].anchor is None:
            self.sections[-1].anchor = attributes["id"]

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or tag not in {open_tag for open_tag, _ in self.open}:
            return
        while self.open:
            open_tag, role = self.open.pop()
            if role == "section":
                self.sections.pop()
            if open_tag == tag:
                break
        if tag not in INLINE:
            self._text(" ")

    def handle_data(self, data: str) -> None:
        self._text(data)

    def _text(self, data: str) -> None:
        roles = self._roles()
        if not self.sections or "skip" in roles:
            return
        section = self.sections[-1]
        (section.title if "heading" in roles else section.body).append(data)


def reference_sections(pages: Iterable[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """Anchor -> (title, body) of the sections of HTML ``pages`` (name, text), in document order."""
    sections: dict[str, tuple[str, str]] = {}
    for name, page in pages:
        parser = _ReferenceParser()
        parser.feed(page)
        parser.close()
        for section in parser.found:
            if section.anchor is None:
                continue
            if section.anchor in sections:
                raise MalformedFileError(f"{name}: section id {section.anchor!r} appears twice")
            title = NUMBERING.sub("", normalise("".join(section.title)), count=1)
            sections[section.anchor] = (title, normalise("".join(section.body)))
    return sections


def debian_reference_sections(deb: str | Path) -> dict[str, tuple[str, str]]:
    """Section anchor -> (title without its number, body text) of a debian-reference-<lang> package's HTML
    chapters; the anchors are the same in every language, so they align the translations."""
    pages = sorted((path, content.decode("utf-8")) for path, content
                   in package_members(deb, "usr/share/debian-reference/*.html"))
    return reference_sections((f"{deb}: {path}", text) for path, text in pages)


# --- Language corpora -------------------------------------------------------------------------------------

def _sword_units(deb: str, part: Mapping[str, Any]) -> Iterable[str]:
    if "module" not in part:
        raise ActionableError(f"corpus part {dict(part)}: a sword part names its module; {deb} holds "
                              f"{sword_modules(deb)}")
    return sword_verses(deb, part["module"]).values()


def _manpage_units(deb: str, part: Mapping[str, Any]) -> Iterable[str]:
    return manpage_paragraphs(deb, part.get("sections", "man*"))


def _reference_units(deb: str, part: Mapping[str, Any]) -> Iterable[str]:
    return (f"{title} {body}" for title, body in debian_reference_sections(deb).values())


READERS: dict[str, Callable[[str, Mapping[str, Any]], Iterable[str]]] = {
    "sword": _sword_units, "manpages": _manpage_units, "debian_reference": _reference_units}
TEXT = "text"     # a local file of articles: the paper's Wikipedia, extracted by the user (no package)
WIKIEXTRACTOR_DOC = re.compile(r'<doc\b[^>]*>\s*$')     # wikiextractor's default output: an article's first line


def _text_units(path: Path) -> Iterator[str]:
    """The articles of a local text file, in one of the three forms a Wikipedia extraction takes, told by its first
    line: wikiextractor ``--json`` (one JSON object a line, the article in ``text``), wikiextractor's default
    ``<doc …>`` blocks (the title line after ``<doc>`` left out, as the ``wikipedia`` dataset's ``text`` has no
    title; the paragraphs joined), or plain text with one article a line. A plain file with ``<doc>`` lines in it
    is refused: that is a document's paragraphs a line each, not its articles."""
    with open(path, encoding="utf-8") as lines:
        numbered = ((f"{path}, line {number}", line) for number, line in enumerate(lines, start=1))
        first = next(((where, line) for where, line in numbered if line.strip()), None)
        if first is None:
            return
        reader = (_json_articles if first[1].lstrip().startswith("{") else
                  _doc_articles if WIKIEXTRACTOR_DOC.match(first[1].strip()) else _line_articles)
        yield from reader(itertools.chain([first], numbered))


def _json_articles(lines: Iterable[tuple[str, str]]) -> Iterator[str]:
    """wikiextractor ``--json``: each line an article, its text under ``text``."""
    for where, line in lines:
        if not line.strip():
            continue
        try:
            article = json.loads(line)["text"]
            if not isinstance(article, str):
                raise TypeError(f"text is {type(article).__name__}")
        except (ValueError, KeyError, TypeError) as problem:
            raise MalformedFileError(f"{where}: not a wikiextractor --json line with the article under \"text\" "
                                     f"({problem!r}): {line.rstrip()[:80]!r}") from None
        yield article


def _doc_articles(lines: Iterable[tuple[str, str]]) -> Iterator[str]:
    """wikiextractor's ``<doc id=… title=…>`` blocks: each block's lines after its title, joined."""
    body: list[str] | None = None
    opened = ""
    for where, line in lines:
        stripped = line.strip()
        if WIKIEXTRACTOR_DOC.match(stripped):
            if body is not None:
                raise MalformedFileError(f"{where}: a <doc> opens inside the one opened at {opened}")
            body, opened = [], where
        elif stripped == "</doc>":
            if body is None:
                raise MalformedFileError(f"{where}: </doc> without its <doc>")
            yield " ".join(body[1:])           # the first line is the title
            body = None
        elif body is not None:
            body.append(stripped)
        elif stripped:
            raise MalformedFileError(f"{where}: text outside a <doc> … </doc> block: {stripped[:80]!r}")
    if body is not None:
        raise MalformedFileError(f"{opened}: the <doc> opened here is not closed before the file ends")


def _line_articles(lines: Iterable[tuple[str, str]]) -> Iterator[str]:
    """Plain text: each line an article."""
    for where, line in lines:
        if WIKIEXTRACTOR_DOC.match(line.strip()) or line.strip() == "</doc>":
            raise MalformedFileError(f"{where}: a wikiextractor <doc> line in a file read as one article a line; "
                                     f"give the extraction as it is (its <doc> blocks, or --json), not part of it")
        yield line


def _part_units(part: Mapping[str, Any], packages: Mapping[str, str]) -> tuple[Iterable[str], dict]:
    """A part's units and the record of their source: a text file's sha256, or the package's name, version and
    sha256 (and groff's version for man pages, whose rendering it decides)."""
    if part.get("kind") == TEXT:
        path = Path(part.get("path") or "")
        if not path.is_file():
            raise ActionableError(f"corpus part {dict(part)}: no file {path} (a text part reads a local file of "
                                  f"articles: Wikipedia extracted from dumps.wikimedia.org with wikiextractor, as it "
                                  f"writes it, --json or <doc> blocks, or one article a line)")
        return _text_units(path), {"sha256": sha256(path)}
    if part.get("kind") not in READERS:
        raise ActionableError(f"corpus part {dict(part)}: kind must be one of {sorted([*READERS, TEXT])}")
    if part.get("package") not in packages:
        raise ActionableError(f"corpus part {dict(part)}: package {part.get('package')!r} is not among the "
                              f"fetched packages {sorted(packages)}")
    deb = packages[part["package"]]
    return READERS[part["kind"]](deb, part), {"deb": package_info(deb),
                                              **({"renderer": groff_version()} if part["kind"] == "manpages" else {})}


class Counts:
    """Units, words and characters of the text written somewhere, counted as it is written."""

    def __init__(self) -> None:
        self.units = self.words = self.characters = 0

    def add(self, unit: str) -> None:
        self.units += 1
        self.words += len(unit.split())
        self.characters += len(unit)

    def record(self) -> dict[str, int]:
        return {"units": self.units, "words": self.words, "characters": self.characters}


BUCKET_BYTES = 64 * 2**20     # of source text per bucket: what one bucket's dedup set and shuffle hold in memory
MAX_BUCKETS = 512             # files open at once while units are spread


def bucket_count(parts: list[Mapping[str, Any]], packages: Mapping[str, str]) -> int:
    """Buckets enough that each holds about ``BUCKET_BYTES`` of the parts' source (a package's unpacked text is a
    few times its size on disk, a Wikipedia extract its size), at most ``MAX_BUCKETS``."""
    size = 0
    for part in parts:
        source = Path(str(part.get("path") if part.get("kind") == TEXT else packages.get(part.get("package"), "")))
        if source.is_file():     # a missing one is named by the reader
            size += source.stat().st_size * (1 if part.get("kind") == TEXT else 4)
    return max(1, min(MAX_BUCKETS, -(-size // BUCKET_BYTES)))


def _bucket(unit: str, buckets: int, key: bytes) -> int:
    """A unit's bucket: a keyed hash, so equal units meet in one bucket and the buckets are random samples."""
    digest = hashlib.blake2b(unit.encode("utf-8"), digest_size=8, key=key).digest()
    return int.from_bytes(digest, "big") % buckets


def _spread(parts: list[Mapping[str, Any]], packages: Mapping[str, str], directory: Path, buckets: int,
            key: bytes) -> list[dict]:
    """Every non-empty unit of every part, as "part index<TAB>unit" lines in its bucket's file under
    ``directory``, in reading order; what each part is (its source record, and how many of its units held no text
    and were left out)."""
    described = []
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(open(directory / f"{number}.tsv", "w", encoding="utf-8"))
                 for number in range(buckets)]
        progress_log.start("reading the parts' text", None, "units")
        for index, part in enumerate(parts):
            texts, source = _part_units(part, packages)
            empty = 0
            for unit in map(normalise, texts):        # normalised: no tab or newline left in it
                if is_empty(unit):
                    empty += 1
                else:
                    files[_bucket(unit, buckets, key)].write(f"{index}\t{unit}\n")
                progress_log.advance("reading the parts' text")
            described.append({**dict(part), **source, "empty_units_dropped": empty})
        progress_log.finish("reading the parts' text")
    return described


def _shuffle_bucket(path: Path, seed: str, duplicates: list[int], available: Counts) -> None:
    """Rewrite a bucket file as its distinct units in a random order (``random.Random(seed)``). A unit is kept at
    its first reading and a later copy counted against its part in ``duplicates``, so no text is both trained on
    and held out; the kept units are counted in ``available``."""
    seen: set[str] = set()
    kept = []
    for index, unit in _bucket_lines(path):
        if unit in seen:
            duplicates[index] += 1
        else:
            seen.add(unit)
            kept.append((index, unit))     # the set's string, not a second copy of it
            available.add(unit)
    random.Random(seed).shuffle(kept)
    with open(path, "w", encoding="utf-8") as lines:
        lines.writelines(f"{index}\t{unit}\n" for index, unit in kept)


def _bucket_lines(path: Path) -> Iterator[tuple[int, str]]:
    """A bucket file's (part index, unit) lines, as ``_spread`` writes them."""
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            index, unit = line.rstrip("\n").split("\t", 1)
            yield int(index), unit


def _units_in_order(directory: Path, buckets: int) -> Iterator[tuple[int, str]]:
    for number in range(buckets):
        yield from _bucket_lines(directory / f"{number}.tsv")


def build_language_corpus(language: str, parts: list[dict], packages: dict[str, str], pins: Mapping[str, str],
                          output: str, heldout: str, info: str, heldout_fraction: float, max_words: int | None,
                          seed: int) -> None:
    """The ``language_corpus`` rule: the distinct units of ``parts`` (config entries: ``package``, ``kind`` one of
    sword, manpages, debian_reference; ``module`` for a Bible; optional ``sections``, a glob of man page
    directories such as ``man[1-8]``, for man pages; or ``kind`` text and ``path``, a local file's articles) in a
    seeded random order, a ``heldout_fraction`` of them held out (``heldout``, drawn before the cap, so it stays
    the same whatever ``max_words``), the rest up to ``max_words`` words the training text (``output``); one unit
    per line. ``info`` records the counts per part and in total and each source's sha256 (a package's also its
    version). Each package is checked against its pin in ``pins`` first.

    Streamed, so memory does not grow with the text (a Wikipedia): the units are spread over bucket files by a hash
    keyed with ``seed``, so each bucket is a random sample of them and holds every copy of its units; each bucket
    is de-duplicated and shuffled in memory on its own (``random.Random(f"{seed}:{bucket}")``), then the buckets
    are read in turn, the first units held out."""
    if not 0 <= heldout_fraction < 1:
        raise ActionableError(f"{language} corpus: heldout_fraction must be in [0, 1), got {heldout_fraction}")
    check_pinned({packages[part["package"]] for part in parts if part.get("kind") != TEXT
                  and part.get("package") in packages}, pins)        # text parts are local files, not packages
    buckets, key = bucket_count(parts, packages), hashlib.sha256(str(seed).encode()).digest()[:16]
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".buckets-", dir=Path(output).parent) as temporary:
        directory = Path(temporary)
        described = _spread(parts, packages, directory, buckets, key)
        duplicates, available = [0] * len(parts), Counts()
        progress_log.start("de-duplicating and shuffling", buckets, "buckets")
        for number in range(buckets):
            _shuffle_bucket(directory / f"{number}.tsv", f"{seed}:{number}", duplicates, available)
            progress_log.advance("de-duplicating and shuffling")
        progress_log.finish("de-duplicating and shuffling")
        if not available.units:
            raise ActionableError(f"{language} corpus: the parts {parts} hold no text")
        counts = {name: [Counts() for _ in parts] for name in ("train", "heldout")}
        cut, words = round(heldout_fraction * available.units), 0
        progress_log.start("writing the corpus", available.units, "units")
        with atomic_write(output) as training, atomic_write(heldout) as held:
            for position, (index, unit) in enumerate(_units_in_order(directory, buckets)):
                progress_log.advance("writing the corpus")
                if position < cut:
                    held.write(unit + "\n")
                    counts["heldout"][index].add(unit)
                    continue
                words += len(unit.split())
                if max_words is not None and words > max_words:
                    break
                training.write(unit + "\n")
                counts["train"][index].add(unit)
        progress_log.finish("writing the corpus")
    for index, part in enumerate(described):
        part.update(duplicates_dropped=duplicates[index], train=counts["train"][index].record(),
                    heldout=counts["heldout"][index].record())
    write_json(info, {"language": language, "seed": seed, "heldout_fraction": heldout_fraction,
                      "max_words": max_words, "buckets": buckets, "parts": described,
                      **{name: _total(counts[name]) for name in counts}, "available": available.record()})


def _total(counts: list[Counts]) -> dict[str, int]:
    """The counts of every part together."""
    return {field: sum(getattr(count, field) for count in counts) for field in ("units", "words", "characters")}

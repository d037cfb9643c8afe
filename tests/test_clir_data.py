"""Text from Debian packages for the modular CLIR system: fetching and reading .deb files, Bible verses, man page
paragraphs, Debian Reference sections, language corpora and the Debian Reference CLIR collection.

The unit tests build tiny .deb files (an ``ar`` archive of tar members, written here) holding a tiny SWORD
module, man pages and DocBook HTML; the integration test downloads the real packages and checks their counts."""
from __future__ import annotations

import gzip
import io
import json
import random
import shutil
import struct
import tarfile
import tracemalloc
import zlib
from pathlib import Path

import pytest

from peftir.clir import collection as clir_collection, debian, multilingual_text as text
from peftir.data import folds
from peftir.data.trec import MalformedFileError, read_qrels, read_topics
from peftir.errors import ActionableError
from peftir.provenance.records import sha256

needs_groff = pytest.mark.skipif(shutil.which("groff") is None, reason="man pages are rendered with groff")


# --- tiny Debian packages ---------------------------------------------------------------------------------

def _ar(members: list[tuple[str, bytes]]) -> bytes:
    """An ``ar`` archive as dpkg writes it: 60-byte headers, members padded to even length."""
    out = [b"!<arch>\n"]
    for name, data in members:
        out.append(f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode())
        out.append(data + (b"\n" if len(data) % 2 else b""))
    return b"".join(out)


def _tar(files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, data in files.items():
            member = tarfile.TarInfo(f"./{path}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
        for path, target in (links or {}).items():
            member = tarfile.TarInfo(f"./{path}")
            member.type, member.linkname = tarfile.SYMTYPE, target
            archive.addfile(member)
    return buffer.getvalue()


def make_deb(path: Path, files: dict[str, bytes], links: dict[str, str] | None = None, package: str = "tiny",
             version: str = "1.0-1") -> Path:
    control = f"Package: {package}\nVersion: {version}\nArchitecture: all\nDescription: test\n".encode()
    path.write_bytes(_ar([("debian-binary", b"2.0\n"), ("control.tar.gz", _tar({"control": control})),
                          ("data.tar.gz", _tar(files, links))]))
    return path


def sword_module(name: str, verses: dict[tuple[str, int, int], str]) -> dict[str, bytes]:
    """A zText SWORD module (KJV versification, Old Testament only) holding ``verses``: one compressed block,
    verse records up to the last verse given (pysword reads every later verse as empty)."""
    from pysword.books import BibleStructure

    structure = BibleStructure("kjv", ["ot"])
    block, records = b"", {}
    for (book, chapter, verse), raw in verses.items():
        index = structure.ref_to_indicies(books=[book], chapters=[chapter], verses=[verse])["ot"][0]
        records[index] = (0, len(block), len(raw.encode()))
        block += raw.encode()
    compressed = zlib.compress(block)
    directory = f"usr/share/sword/modules/texts/ztext/{name.lower()}"
    conf = (f"[{name}]\nDataPath=./modules/texts/ztext/{name.lower()}/\nModDrv=zText\nSourceType=OSIS\n"
            f"Encoding=UTF-8\nCompressType=ZIP\nBlockType=BOOK\nVersification=KJV\n")
    return {f"usr/share/sword/mods.d/{name.lower()}.conf": conf.encode(),
            f"{directory}/ot.bzv": b"".join(struct.pack("<IIH", *records.get(i, (0, 0, 0)))
                                            for i in range(max(records) + 1)),
            f"{directory}/ot.bzs": struct.pack("<III", 0, len(compressed), len(block)),
            f"{directory}/ot.bzz": compressed}


SPANISH = {("Gen", 1, 1): '<w lemma="strong:H7225">EN el principio</w> <w>crió</w> Dios los cielos y la tierra. ',
           ("Gen", 1, 2): "Y la tierra estaba desordenada y vacía. ",
           ("Gen", 1, 3): '<w>Y dijo</w><transChange type="added">Dios</transChange><w>: Sea la luz</w>. ',
           ("Gen", 2, 1): "Y FUERON acabados los cielos y la tierra. ",
           ("Gen", 2, 2): "Yo soy JEHOVÁ tu Dios. ",
           ("Gen", 3, 1): "EMPERO la serpiente era astuta. "}


@pytest.fixture
def bible(tmp_path):
    return make_deb(tmp_path / "sword-text-tiny.deb", sword_module("spaTiny", SPANISH), package="sword-text-tiny")


def test_package_members_read_a_deb_without_dpkg_skipping_links(tmp_path):
    deb = make_deb(tmp_path / "p.deb", {"usr/share/a.txt": b"A", "usr/share/b/c.txt": b"C"},
                   links={"usr/share/d.txt": "a.txt"}, package="p", version="2.0")
    assert list(debian.package_members(deb)) == [("usr/share/a.txt", b"A"), ("usr/share/b/c.txt", b"C")]
    assert list(debian.package_members(deb, "usr/share/b/*")) == [("usr/share/b/c.txt", b"C")]
    info = debian.package_info(deb)
    assert (info["package"], info["version"], info["sha256"]) == ("p", "2.0", sha256(deb))
    assert debian.extract(deb, "usr/share/b", tmp_path / "x") == [tmp_path / "x" / "c.txt"]


def test_a_file_that_is_not_a_deb_is_named(tmp_path):
    junk = tmp_path / "junk.deb"
    junk.write_bytes(b"<html>mirror error page</html>")
    with pytest.raises(MalformedFileError, match="junk.deb: not a Debian package"):
        list(debian.package_members(junk))


def test_fetch_package_verifies_the_pinned_sha256(tmp_path):
    source = make_deb(tmp_path / "sword-text-x_1.0_all.deb", {"usr/share/a": b"a"})
    url, output = source.as_uri(), tmp_path / "out" / "x.deb"
    debian.fetch_package(url, sha256(source), output)
    assert output.read_bytes() == source.read_bytes()
    output.unlink()
    with pytest.raises(debian.PackageFetchError, match=r"sha256 mismatch, expected 0{64}, got [0-9a-f]{64}"):
        debian.fetch_package(url, "0" * 64, output)
    assert not output.exists() and not list(output.parent.glob(".x.deb.*"))   # nothing that looks complete


def test_an_unreachable_mirror_says_what_to_do(tmp_path):
    output = tmp_path / "x.deb"
    with pytest.raises(debian.PackageFetchError) as caught:
        debian.fetch_package("http://127.0.0.1:9/debian/pool/main/s/sword-text-x/sword-text-x_1.0_all.deb", "0" * 64,
                             output)
    message = str(caught.value)
    assert "sword-text-x_1.0_all.deb" in message and str(output) in message
    assert "modular_clir.packages.sword-text-x.url" in message and not output.exists()


# --- Bibles -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, clean", [
    # WEB: a footnote between two words
    ('<w>God</w><note placement="foot"><reference type="annotateRef">1:1 </reference>The Hebrew word.</note>'
     '<w>created</w> <w>the</w> heavens. <div eID="gen25" type="x-p"/>', "God created the heavens."),
    # KJV: pilcrow, an unconverted USFM marker, translators' additions, divine name
    (' ¶ by my name \\nd <transChange type="added">was</transChange> <divineName><w>LORD</w></divineName>\\+nd* .',
     "by my name was LORD."),
    # RV1909: the translators' addition glued to the next word
    ('<w>Y FUÉ</w><transChange type="added">que</transChange><w>á los treinta</w> años',
     "Y FUÉ que á los treinta años"),
    # canonical psalm titles are text, editors' headings are not; line markers separate words
    ('<title type="main">Book One</title><title canonical="true" type="psalm">A Psalm.</title>'
     '<l level="1" sID="a"/>Yahweh, how<l eID="a"/><l sID="b"/>many', "A Psalm. Yahweh, how many"),
    # WEB: the glossary appended to the last verse, after the end of the book
    ('Amen. <chapter eID="Rev.22"/><div canonical="true" eID="g1" osisID="Rev" type="book"/> <title>Glossary'
     '</title>Abaddon is Hebrew for destruction.', "Amen."),
])
def test_clean_osis(raw, clean):
    assert text.clean_osis(raw) == clean


def test_drop_capitals_are_undone():
    assert text.undo_drop_capitals("DE SIETE años era Joas") == "De siete años era Joas"
    assert text.undo_drop_capitals("Y EZECHÎAS comenzó á reinar") == "Y Ezechîas comenzó á reinar"
    assert text.undo_drop_capitals("Salmo de David. JEHOVÁ es mi pastor") == "Salmo de David. Jehová es mi pastor"
    assert text.undo_drop_capitals("sin mayúsculas") == "sin mayúsculas"


def test_sword_verses_read_the_module_in_canonical_order(bible):
    assert text.sword_modules(bible) == ["spaTiny"]
    verses = text.sword_verses(bible, "spaTiny")
    assert list(verses) == ["Gen.1.1", "Gen.1.2", "Gen.1.3", "Gen.2.1", "Gen.2.2", "Gen.3.1"]   # no empty verse
    assert verses["Gen.1.1"] == "En el principio crió Dios los cielos y la tierra."   # drop capital undone
    assert verses["Gen.1.3"] == "Y dijo Dios: Sea la luz."
    assert verses["Gen.2.1"] == "Y Fueron acabados los cielos y la tierra."
    assert verses["Gen.2.2"] == "Yo soy JEHOVÁ tu Dios."           # not a chapter's first verse: kept
    with pytest.raises(ActionableError, match=r"no SWORD module 'WEB'; the package holds \['spaTiny'\]"):
        text.sword_verses(bible, "WEB")


def test_capitals_of_a_module_without_drop_capitals_stay(tmp_path):
    deb = make_deb(tmp_path / "kjv.deb", sword_module("engTiny", {
        ("Gen", 1, 1): "In the beginning.", ("Gen", 2, 1): "Thus the heavens.", ("Gen", 3, 1): "LORD, how long."}))
    assert text.sword_verses(deb, "engTiny")["Gen.3.1"] == "LORD, how long."


# --- man pages --------------------------------------------------------------------------------------------

BOILERPLATE = "Wenn Sie Fehler in der Übersetzung dieser Handbuchseite finden, schicken Sie bitte eine E-Mail."
FOO = rf""".\" -*- coding: UTF-8 -*-
.TH FOO 1 "2023" "foo 1.0" "Benutzerbefehle"
.SH BEZEICHNUNG
foo \- tut etwas
.SH BESCHREIBUNG
.PP
\fBfoo\fP liest die angegebenen Dateien und schreibt ihren Inhalt in umgekehrter
Reihenfolge auf die Standardausgabe, Zeile für Zeile.
.TP
\fB\-a\fP, \fB\-\-all\fP
Alle Einträge anzeigen, auch jene, die mit einem Punkt beginnen und versteckt sind.
.TP
\fB\-q\fP
Still sein.
.PP
Beispiel:
.PP
.nf
foo \-a /etc/passwd | sort \-r | uniq \-c | head \-n 10
foo \-q /tmp/x > /dev/null 2>&1 && echo fertig und gut
.fi
.SH ÜBERSETZUNG
{BOILERPLATE}
"""
BAR = rf""".TH BAR 8 "2023" "bar 1.0"
.SH BESCHREIBUNG
Das Programm bar verwaltet die Warteschlange der Aufträge und meldet ihren Zustand.
.SH ÜBERSETZUNG
{BOILERPLATE}
"""


@pytest.fixture
def manpages(tmp_path):
    pages = {"usr/share/man/de/man1/foo.1.gz": gzip.compress(FOO.encode()),
             "usr/share/man/de/man8/bar.8.gz": gzip.compress(BAR.encode()),
             "usr/share/man/de/man1/baz.1.gz": gzip.compress(b".so man1/foo.1\n")}
    return make_deb(tmp_path / "manpages-de.deb", pages, links={"usr/share/man/de/man1/qux.1.gz": "foo.1.gz"},
                    package="manpages-de")


@needs_groff
def test_manpage_paragraphs_keep_prose_only(manpages):
    assert list(text.manpage_paragraphs(manpages)) == [
        "foo liest die angegebenen Dateien und schreibt ihren Inhalt in umgekehrter Reihenfolge auf die "
        "Standardausgabe, Zeile für Zeile.",
        "Alle Einträge anzeigen, auch jene, die mit einem Punkt beginnen und versteckt sind.",
        BOILERPLATE,
        "Das Programm bar verwaltet die Warteschlange der Aufträge und meldet ihren Zustand.",
        BOILERPLATE]
    assert list(text.manpage_paragraphs(manpages, "man8")) == [
        "Das Programm bar verwaltet die Warteschlange der Aufträge und meldet ihren Zustand.", BOILERPLATE]


def test_missing_groff_is_named(manpages, monkeypatch):
    monkeypatch.setattr(text.shutil, "which", lambda name: None)
    with pytest.raises(ActionableError, match="groff not found"):
        list(text.manpage_paragraphs(manpages))


# --- the Debian Reference ---------------------------------------------------------------------------------

HEADINGS = {"en": "Chapter", "de": "Kapitel", "es": "Capítulo"}


def _body(lang: str, anchor: str, words: int = 25) -> str:
    return " ".join(f"{lang}{anchor.strip('_').replace(' ', '')}{i}" for i in range(words))


def _section(lang: str, number: str, anchor: str, title: str, body: str, children: str = "", level: int = 2) -> str:
    return (f'<div class="section"><div class="titlepage"><div><div><h{level} class="title"><a id="{anchor}"/>'
            f'{number}. {title}</h{level}></div></div></div><p>{body}</p>{children}</div>')


def reference_html(lang: str) -> str:
    """A chapter: a short lead-in, a section with code, a footnote marker and a subsection; an untranslated
    section (es); one missing in German; two German sections with one title; an anchor with a space."""
    sections = [_section(lang, "1.1", "_a", f"{lang} title a",
                         _body(lang, "_a") + '<a href="#ftn.x" class="footnote" id="x"><sup class="footnote">[1]'
                         '</sup></a></p><pre class="screen">$ ls -l</pre><p>',
                         _section(lang, "1.1.1", "_a_sub", f"{lang} title sub", _body(lang, "_a_sub"), level=3)),
                _section(lang, "1.2", "_b", f"{lang} title b", _body("en" if lang == "es" else lang, "_b"))]
    if lang != "de":
        sections.append(_section(lang, "1.3", "_c", f"{lang} title c", _body(lang, "_c")))
    for anchor in ("_d", "_e"):
        sections.append(_section(lang, "1.4", anchor, "Tipps" if lang == "de" else f"{lang} title {anchor}",
                                 _body(lang, anchor)))
    for anchor in ("_f g", "_k1", "_k2", "_k3", "_k4", "_k5"):
        sections.append(_section(lang, "1.5", anchor, f"{lang} title {anchor}", _body(lang, anchor)))
    return (f'<html><body><div class="navheader"><table><tr><th>{HEADINGS[lang]} 1. Tutorials</th></tr></table>'
            f'<a href="ch02.html">Next</a></div><div class="chapter"><div class="titlepage"><div><div>'
            f'<h1 class="title"><a id="_tutorials"/>{HEADINGS[lang]} 1. {lang} tutorials</h1></div></div></div>'
            f'<div class="toc"><p><strong>Table of Contents</strong></p></div><p>Short lead-in.</p>'
            f'{"".join(sections)}<div class="footnotes"><div class="footnote"><p>[1] The footnote.</p></div></div>'
            f'</div><div class="navfooter"><p>Prev Home Next</p></div></body></html>')


@pytest.fixture
def references(tmp_path):
    return {lang: str(make_deb(tmp_path / f"debian-reference-{lang}.deb",
                               {f"usr/share/debian-reference/ch01.{lang}.html": reference_html(lang).encode()},
                               package=f"debian-reference-{lang}", version="2.100"))
            for lang in ("en", "de", "es")}


def test_reference_sections_are_titles_and_own_text_without_navigation(references):
    sections = text.debian_reference_sections(references["en"])
    assert list(sections)[:4] == ["_tutorials", "_a", "_a_sub", "_b"]
    assert sections["_tutorials"] == ("en tutorials", "Short lead-in.")
    title, body = sections["_a"]
    assert title == "en title a"                                   # numbering removed
    assert body == _body("en", "_a") + " $ ls -l"                  # code kept; no marker, subsection or nav
    assert sections["_a_sub"] == ("en title sub", _body("en", "_a_sub"))
    assert "_c" not in text.debian_reference_sections(references["de"])


def test_clir_collection_is_aligned_known_item_search(references, tmp_path):
    languages = ["en", "de", "es"]
    docs = {lang: str(tmp_path / f"docs.{lang}.jsonl") for lang in languages}
    queries = {lang: str(tmp_path / f"queries.{lang}.tsv") for lang in languages}
    paths = dict(qrels={lang: str(tmp_path / f"qrels.{lang}") for lang in languages},
                 folds=str(tmp_path / "folds.json"), info=str(tmp_path / "info.json"))
    clir_collection.build_clir_collection(references, languages, "title", 2, 2, 7, docs, queries, **paths)
    kept = ["_a", "_a_sub", "_f_g", "_k1", "_k2", "_k3", "_k4", "_k5"]
    for lang in languages:
        records = [json.loads(line) for line in Path(docs[lang]).read_text().splitlines()]
        assert [record["id"] for record in records] == kept                  # same ids, same order
        assert records[0]["contents"] == f"{_body(lang, '_a')} $ ls -l"          # the heading is the query only
        assert read_topics(queries[lang]) == {"_a": f"{lang} title a", "_a_sub": f"{lang} title sub",
                                              "_f_g": f"{lang} title _f g",
                                              **{anchor: f"{lang} title {anchor}" for anchor in kept[3:]}}
    for lang in languages:
        assert read_qrels(paths["qrels"][lang]) == {anchor: {anchor: 1} for anchor in kept}
    info = json.loads(Path(paths["info"]).read_text())
    assert info["dropped"] == {"not_in_every_language": 1, "empty_title": 0, "short_body": 1, "untranslated": 1,
                               "ambiguous_title": 2}
    assert info["dropped_anchors"]["untranslated"] == ["_b"] and info["renamed_ids"] == {"_f g": "_f_g"}
    assert info["per_language"]["de"]["deb"]["version"] == "2.100"
    doc = folds.read_folds(paths["folds"])
    folds.validate(doc, kept)                                               # what the pipeline accepts
    split = folds.rotation(doc, "1")
    assert (len(split["test"]), len(split["valid"]), len(split["train"])) == (2, 2, 4)
    assert sorted(split["test"] + split["valid"] + split["train"]) == sorted(kept)
    first = Path(paths["folds"]).read_text()
    clir_collection.build_clir_collection(references, languages, "title", 2, 2, 7, docs, queries, **paths)
    assert Path(paths["folds"]).read_text() == first                        # seeded


def test_clir_collection_refuses_impossible_splits(references, tmp_path):
    languages = ["en", "de", "es"]
    paths = {name: str(tmp_path / name) for name in ("folds", "info")}
    files = {lang: str(tmp_path / lang) for lang in languages}
    paths["qrels"] = files
    with pytest.raises(ActionableError, match="8 usable queries cannot give 6 test and 2 validation"):
        clir_collection.build_clir_collection(references, languages, "title", 6, 2, 1, files, files, **paths)
    with pytest.raises(ActionableError, match="query_field"):
        clir_collection.build_clir_collection(references, languages, "body", 2, 2, 1, files, files, **paths)
    assert sorted(path.suffix for path in tmp_path.iterdir()) == [".deb"] * 3   # refused before writing


# --- language corpora -------------------------------------------------------------------------------------

def _corpus(tmp_path, parts, packages, heldout_fraction=0.25, max_words=None, seed=3, pins=None):
    paths = {name: tmp_path / f"corpus.{name}" for name in ("output", "heldout", "info")}
    pins = {Path(deb).stem: sha256(deb) for deb in packages.values()} if pins is None else pins
    text.build_language_corpus("es", parts, packages, pins, str(paths["output"]), str(paths["heldout"]),
                               str(paths["info"]), heldout_fraction, max_words, seed)
    return (paths["output"].read_text().splitlines(), paths["heldout"].read_text().splitlines(),
            json.loads(paths["info"].read_text()))


def test_language_corpus_shuffles_holds_out_and_caps(bible, references, tmp_path):
    parts = [{"package": "sword-text-tiny", "kind": "sword", "module": "spaTiny"},
             {"package": "debian-reference-es", "kind": "debian_reference"}]
    packages = {"sword-text-tiny": str(bible), "debian-reference-es": references["es"]}
    train, held, info = _corpus(tmp_path, parts, packages)
    units = list(text.sword_verses(bible, "spaTiny").values()) + [
        f"{title} {body}" for title, body in text.debian_reference_sections(references["es"]).values()]
    assert sorted(train + held) == sorted(units) and not set(train) & set(held)
    assert len(held) == round(0.25 * len(units)) and train != units[len(held):]          # shuffled
    assert info["available"]["units"] == len(units) == info["train"]["units"] + info["heldout"]["units"]
    assert info["parts"][0]["train"]["units"] + info["parts"][0]["heldout"]["units"] == len(SPANISH)
    assert info["parts"][0]["deb"]["package"] == "sword-text-tiny" and len(info["parts"][0]["deb"]["sha256"]) == 64
    assert _corpus(tmp_path, parts, packages)[:2] == (train, held)                          # seeded
    capped, capped_held, capped_info = _corpus(tmp_path, parts, packages, max_words=60)
    assert capped_held == held and capped == train[:len(capped)]        # held-out text does not follow the cap
    assert capped_info["train"]["words"] <= 60 < capped_info["train"]["words"] + len(train[len(capped)].split())


@needs_groff
def test_language_corpus_keeps_a_repeated_unit_once(manpages, tmp_path):
    train, held, info = _corpus(tmp_path, [{"package": "manpages-de", "kind": "manpages"}],
                                {"manpages-de": str(manpages)}, heldout_fraction=0)
    assert len(train) == 4 and train.count(BOILERPLATE) == 1 and held == []
    assert info["parts"][0]["duplicates_dropped"] == 1 and info["parts"][0]["renderer"].startswith("GNU groff")


def _text_parts(directory: Path, count: int) -> tuple[list[dict], list[str], int]:
    """Two text parts of ``count`` Wikipedia-like lines (the second repeats every seventh line of the first and
    adds one of its own), their lines, and the first's size in bytes."""
    rng = random.Random(count)
    lines = [" ".join(f"w{rng.randrange(5000)}" for _ in range(rng.randint(5, 40))) for _ in range(count)]
    directory.mkdir()
    first, second = directory / "first.txt", directory / "second.txt"
    first.write_text("".join(f"{line}\n" for line in lines))
    second.write_text("".join(f"{line}\n" for line in lines[::7]) + "only in the second part\n")
    return [{"kind": "text", "path": str(first)}, {"kind": "text", "path": str(second)}], lines, first.stat().st_size


def _build_peak(parts: list[dict], out: Path, bucket_bytes: int, monkeypatch) -> int:
    """The most memory Python held while the corpus of ``parts`` was built with buckets of ``bucket_bytes``."""
    monkeypatch.setattr(text, "BUCKET_BYTES", bucket_bytes)
    tracemalloc.start()
    try:
        text.build_language_corpus("en", parts, {}, {}, str(out / "train.txt"), str(out / "heldout.txt"),
                                   str(out / "info.json"), 0.1, None, 3)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_language_corpus_streams_through_buckets_on_disk(tmp_path, monkeypatch):
    """A Wikipedia-sized text part is de-duplicated and shuffled bucket by bucket: the memory Python holds does
    not grow with the text (with one bucket, as when the whole text was held, it grows as fast as the text), and
    the result is the same: the distinct units, a repeated one kept once at its first reading, the held-out share
    exact."""
    small, large = _text_parts(tmp_path / "small", 10000), _text_parts(tmp_path / "large", 40000)
    bucket = 256 * 2**10
    streamed = [_build_peak(parts, tmp_path / f"streamed-{n}", bucket, monkeypatch)
                for n, (parts, _, _) in enumerate((small, large))]
    whole = [_build_peak(parts, tmp_path / f"whole-{n}", 2**30, monkeypatch)
             for n, (parts, _, _) in enumerate((small, large))]
    grown = large[2] - small[2]
    assert streamed[1] - streamed[0] < 0.1 * grown < grown < whole[1] - whole[0]
    parts, lines, _ = large
    distinct = set(lines) | {"only in the second part"}
    for out in (tmp_path / "streamed-1", tmp_path / "whole-1"):
        train, held = ((out / name).read_text().splitlines() for name in ("train.txt", "heldout.txt"))
        info = json.loads((out / "info.json").read_text())
        assert sorted(train + held) == sorted(distinct) and len(held) == round(0.1 * len(distinct))
        assert [part["duplicates_dropped"] for part in info["parts"]] == [len(lines) - len(set(lines)),
                                                                          len(lines[::7])]
        assert info["parts"][1]["train"]["units"] + info["parts"][1]["heldout"]["units"] == 1
    assert json.loads((tmp_path / "streamed-1" / "info.json").read_text())["buckets"] > 16
    assert sorted(path.name for path in (tmp_path / "streamed-1").iterdir()) == ["heldout.txt", "info.json",
                                                                                "train.txt"]   # buckets removed


def test_language_corpus_names_bad_parts(bible, tmp_path):
    packages = {"sword-text-tiny": str(bible)}
    with pytest.raises(ActionableError, match="kind must be one of"):
        _corpus(tmp_path, [{"package": "sword-text-tiny", "kind": "wikipedia"}], packages)
    with pytest.raises(ActionableError, match="not among the fetched packages"):
        _corpus(tmp_path, [{"package": "sword-text-web", "kind": "sword", "module": "WEB"}], packages)
    with pytest.raises(ActionableError, match=r"names its module; .* holds \['spaTiny'\]"):
        _corpus(tmp_path, [{"package": "sword-text-tiny", "kind": "sword"}], packages)


# --- the real packages --------------------------------------------------------------------------------------

MIRROR = "http://deb.debian.org/debian/"
PACKAGES = {   # Debian 12 (bookworm), Architecture: all
    "sword-text-web": ("pool/main/s/sword-text-web/sword-text-web_426.0-1_all.deb",
                       "930b23670b352f0829a306501de4bebb5e654a2df02cde2cbe86b802177868e1"),
    "sword-text-kjv": ("pool/main/s/sword-text-kjv/sword-text-kjv_14.3-1_all.deb",
                       "9f463f28ce665f6f528fc723179722bced880a4c5485f7a41bf742838315de57"),
    "sword-text-sparv": ("pool/main/s/sword-text-sparv/sword-text-sparv_2.60-1_all.deb",
                         "5c87f9b2bc97457e8a872f5bae7ea7ce59cb3de1dcee73e4d4740451863694cf"),
    "manpages-es": ("pool/main/m/manpages-l10n/manpages-es_4.18.1-1_all.deb",
                    "d21e9f85e487f149ae45b5c525b2b1a70ae7fd38d4b05b47c8753042c66f4c2b"),
    "debian-reference-en": ("pool/main/d/debian-reference/debian-reference-en_2.100_all.deb",
                            "9f31d3a17df505de09689ca255512ea58c1fc47c59bb1b0c7bf1c23362e9743f"),
    "debian-reference-de": ("pool/main/d/debian-reference/debian-reference-de_2.100_all.deb",
                            "3b0ce65fd63e75ddf8eb07ca36293425135080e690a07e06a6ac8bc8040ef0aa"),
    "debian-reference-es": ("pool/main/d/debian-reference/debian-reference-es_2.100_all.deb",
                            "a59b68c96f83d3cf29a476c847aee38364764603ea62eee592791e0a843a269e"),
}


@pytest.mark.integration
@needs_groff
def test_the_real_packages(tmp_path):
    """Downloads about 15 MB from deb.debian.org (manpages-de, 14 s of rendering, is left out)."""
    packages = {}
    for name, (path, digest) in PACKAGES.items():
        packages[name] = str(tmp_path / f"{name}.deb")
        try:
            debian.fetch_package(MIRROR + path, digest, packages[name])
        except debian.PackageFetchError as problem:
            if "sha256" in str(problem):
                raise
            pytest.skip(f"no network: {problem}")
    counts = {module: len(text.sword_verses(packages[name], module)) for name, module in
              [("sword-text-web", "engWEB2015eb"), ("sword-text-kjv", "engKJV2006eb"),
               ("sword-text-sparv", "spaRV1909eb")]}
    assert counts == {"engWEB2015eb": 37_457, "engKJV2006eb": 31_102, "spaRV1909eb": 31_084}
    train, held, info = _corpus(tmp_path, [{"package": "manpages-es", "kind": "manpages"}], packages,
                                heldout_fraction=0.01, seed=42)
    assert info["available"]["units"] == 5_778 and info["available"]["words"] == 173_806
    languages = ["en", "de", "es"]
    docs = {lang: str(tmp_path / f"docs.{lang}") for lang in languages}
    queries = {lang: str(tmp_path / f"queries.{lang}") for lang in languages}
    paths = {name: str(tmp_path / f"clir.{name}") for name in ("folds", "info")}
    paths["qrels"] = {lang: str(tmp_path / f"qrels.{lang}") for lang in languages}
    clir_collection.build_clir_collection({lang: packages[f"debian-reference-{lang}"] for lang in languages},
                                          languages, "title", 100, 50, 42, docs, queries, **paths)
    clir = json.loads(Path(paths["info"]).read_text())
    assert clir["kept"] == 429 and clir["dropped"] == {"not_in_every_language": 0, "empty_title": 0,
                                                       "short_body": 22, "untranslated": 12, "ambiguous_title": 0}


def test_a_package_placed_by_hand_is_checked_against_its_pin(bible, references, tmp_path):
    """Snakemake never reruns ``debian_package`` for a file that is there: the jobs that read a package refuse one
    whose bytes are not its pin's, naming the key, before they write anything."""
    pins = {Path(deb).stem: sha256(deb) for deb in [bible, *references.values()]}
    debian.check_pinned([bible, *references.values()], pins)                   # the pinned files pass
    wrong = {**pins, "debian-reference-de": "0" * 64}
    out = tmp_path / "collection"
    paths = {lang: str(out / lang / "file") for lang in references}
    settings = {"source": "debian-reference", "query_field": "title", "test_queries": 2, "valid_queries": 2,
                "seed": 1}
    with pytest.raises(debian.PackageFetchError, match=r"debian-reference-de\.deb: sha256 [0-9a-f]{64}, not the "
                                                       r"pinned 0{64} \(modular_clir\.packages\.debian-reference-de"):
        clir_collection.make_test_collection(settings, references, wrong, list(references), paths, paths, paths,
                                             str(out / "folds.json"), str(out / "info.json"))
    with pytest.raises(ActionableError, match=r"no pin for the package 'sword-text-tiny'"):
        _corpus(tmp_path, [{"package": "sword-text-tiny", "kind": "sword", "module": "spaTiny"}],
                {"sword-text-tiny": str(bible)}, pins={})
    assert not out.exists() and not (tmp_path / "corpus.output").exists()
    text_part = tmp_path / "wiki" / "en.txt"                 # a local text part beside a package: never a pin's
    text_part.parent.mkdir()
    text_part.write_text("An article.\nAnother article.\n")
    train, held, _ = _corpus(tmp_path, [{"kind": "text", "path": str(text_part)},
                                        {"package": "sword-text-tiny", "kind": "sword", "module": "spaTiny"}],
                             {"text-0": str(text_part), "sword-text-tiny": str(bible)},
                             pins={"sword-text-tiny": sha256(bible)})
    assert "An article." in train + held

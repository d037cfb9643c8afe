"""Scale models of the paper's collections: tiny files in the real formats, where ir_datasets reads them.

``write_fixtures(home, ids)`` writes, under ``home`` used as ``IR_DATASETS_HOME``, the files that
ir_datasets 0.6.3 opens for each dataset id, so that with no network ``ir_datasets.load(id)`` yields
documents, queries and qrels (and docpairs / scoreddocs where the dataset has them) from them:

- the *source* files, named and laid out as a user's download or licensed copy is (TREC disks 4 & 5 as
  distributed, ClueWeb09's WARC files and record counts, the MS MARCO tarballs, the BEIR zips, DPR's
  TSV and JSON, the TripClick tarballs, NeuCLIR's JSON lines), at the ``cache_path`` ir_datasets gives
  each download (a ``Download`` whose file exists is used as it is: no md5 check, no size check);
- the *cached* output of a ``Cache`` only where its source is a download that has no cache path, which
  ir_datasets always fetches from the network and checks against an md5 (MS MARCO passage's top-1000
  runs and the TREC DL 2019 queries), and ClueWeb09's ``corpus.chk`` checkpoints (ir_datasets downloads
  them as a 3.6 GB tarball from its own mirror before reading any WARC file).

Everything else ir_datasets derives itself, offline, from these files on first use (``collection.tsv``
and the split queries extracted from MS MARCO's tarballs, the BEIR ``queries.json``/``*.qrels`` and
docstores, TripClick's extracted topics and runs, DPR's queries/qrels built from its JSON). When a
source file changes (another seed), the outputs ir_datasets derived from the old one are removed.

Collections hold 40-120 documents and each query split 4-12 queries, drawn from a seeded generator: a
query is three topic words; its 1-3 relevant documents hold all three (the most relevant twice), two
or three *distractor* documents hold one of them (judged non-relevant where the format has judged
non-relevant documents), so BM25 ranks the relevant ones first and non-relevant ones too in its top 20.
Splits of one collection share it and have disjoint query ids -- except DPR's, whose ids ir_datasets
numbers from 0 in each of its JSON files (as it does for the real NQ train and dev files).

Requires: ``lz4`` (an ir_datasets dependency) for ClueWeb09's checkpoints; reading the DPR NQ splits
needs ``ijson`` in the environment (ir_datasets imports it before looking for its built files).
"""
from __future__ import annotations

import gzip
import io
import json
import random
import shutil
import tarfile
import textwrap
import zipfile
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Mapping

__all__ = ["SUPPORTED", "Expected", "write_fixtures", "expected", "family_of", "ROBUST04_FOLD_QIDS"]

# --------------------------------------------------------------------------------------------- content

TOPIC_WORDS = tuple("""
abacus acorn admiral airship alchemy algae alpaca amber anchor anvil apricot aquarium arch archive armada
artichoke asteroid atlas aurora avalanche avocado badger bagpipe balcony ballad bamboo banjo barley barometer
basalt basket bassoon beacon beaver beetle bicycle bison blizzard blueprint bobsled bonsai boulder bramble
brewery bridge brocade bronze buffalo bugle bulldozer bunker butterfly cabbage cactus caldera camel canal
candle canoe canyon caravan cardamom caribou carousel cashew castle catapult cathedral cello ceramic chalk
chameleon chandelier cheetah chestnut chimney chisel cinnamon citadel clarinet cobalt cobra coconut comet
compass condor copper coral cormorant cotton cougar crater crayon cricket crocodile crystal cucumber cypress
dagger dahlia dandelion delta desert diamond dinghy dolphin donkey dragonfly drum dune eagle earthquake
eclipse eel elephant elm emerald engine falcon fern ferry fiddle fig fjord flamingo flute fossil fountain
fox frigate galaxy garlic gazelle geyser ginger giraffe glacier goblet gondola gorilla granite grape graphite
greenhouse guitar gull hammock hamster harbor harp harvest hazelnut hedgehog helicopter heron hippo honey
hornet hurricane hyacinth iceberg iguana indigo iris island ivory jackal jade jaguar jasmine jellyfish juniper
kangaroo kayak kelp kettle kiwi koala lagoon lantern larch lava lemon leopard lettuce lighthouse lilac
limestone lobster locomotive lotus lynx magnet magnolia mahogany mammoth mango maple marble marathon marigold
marsh meadow meteor microscope mint monsoon moose mosaic moss mountain mule mushroom mustard nectar nettle
nightingale nutmeg oasis oak octopus olive onion opal orchard orchid ostrich otter owl oyster paddle pagoda
palm panther papaya parachute parrot peach peacock pearl pebble pelican pepper pheasant piano pigeon pine
pistachio plankton plum polar pomegranate poppy porcupine potato prairie pumpkin puffin pyramid quail quarry
quartz rabbit raccoon radish rainbow raven reef reindeer rhubarb rhino rocket saddle saffron salmon sandstone
sapphire sardine satellite saxophone scarab scorpion seahorse sequoia shark sheep shipwreck silk silver
skyscraper sled snail sparrow spinach sponge squid squirrel stallion starfish submarine sunflower swamp swan
sycamore tambourine tangerine telescope temple termite thistle thunder tiger timber tobacco tomato topaz
tornado tortoise toucan tractor trombone trumpet tulip tundra turbine turnip turquoise turtle umbrella
unicorn valley vanilla velvet violin volcano vulture walnut walrus waterfall weasel whale wheat willow
windmill wolf wombat woodpecker yacht yak zebra zeppelin zinc
""".split())

# Words every kind of document shares (low IDF): they never make a document match a query by themselves.
FILLER_WORDS = tuple("""
report study local new small large early recent general public annual common several various people area
time year part group system number level case point place work world city family market service program
history research result process member course policy period value order office control support change
""".split())

_CYRILLIC = dict(zip("abcdefghijklmnopqrstuvwxyz",
                     ["а", "б", "ц", "д", "е", "ф", "г", "х", "и", "ж", "к", "л", "м", "н", "о", "п", "къ",
                      "р", "с", "т", "у", "в", "ш", "кс", "ы", "з"]))


def russian(word: str) -> str:
    """A Russian-looking stand-in for an English word (letter by letter into Cyrillic)."""
    return "".join(_CYRILLIC.get(c, c) for c in word)


@dataclass
class Doc:
    doc_id: str
    title: list[str]
    body: list[str]

    @property
    def words(self) -> list[str]:
        return self.title + self.body


@dataclass
class Collection:
    """Documents, and every query of every split (words, relevance judgements, distractors)."""
    docs: list[Doc]
    query_words: dict[str, list[str]]
    qrels: dict[str, dict[str, int]]                  # judged queries only
    distractors: dict[str, list[str]]                 # non-relevant documents holding one query word

    def rename(self, new: Mapping[str, str]) -> None:
        """Give the documents the ids ``new[old id]`` (in the documents, qrels and distractors)."""
        for doc in self.docs:
            doc.doc_id = new[doc.doc_id]
        self.qrels = {q: {new[d]: r for d, r in judged.items()} for q, judged in self.qrels.items()}
        self.distractors = {q: [new[d] for d in docs] for q, docs in self.distractors.items()}


SENTENCE_WORDS = 7          # words per sentence: RIP pairs a passage's sentences, and needs two


def _sentence(words: Iterable[str]) -> str:
    """The words as sentences of ``SENTENCE_WORDS``, each capitalised and closed by a full stop."""
    words = list(words)
    parts = [" ".join(words[start:start + SENTENCE_WORDS]) for start in range(0, len(words), SENTENCE_WORDS)]
    return " ".join(part[:1].upper() + part[1:] + "." for part in parts)


def generate(name: str, seed: int, qids: list[str], doc_ids: Iterable[str], *, grades: tuple[int, ...] = (1,),
             nonrel: int | None = None, unjudged: Iterable[str] = (), n_docs: int = 40,
             max_rel: int = 3, empty: int = 1) -> Collection:
    """A collection for ``qids`` (``unjudged`` ones have no relevant documents): ids taken in order from
    ``doc_ids``; relevant documents graded from ``grades``; distractors judged ``nonrel`` if not None; and ``empty``
    documents with no words at all, as real collections have (each format writes one as its collection does: a
    record without ``TEXT``, a page of markup only, a row with an empty text), never judged or a distractor. They
    are added last, without drawing from the generator, so the other documents are the same with or without them."""
    rng = random.Random(f"{seed}:{name}")
    unjudged = set(unjudged)
    pool = list(TOPIC_WORDS)
    rng.shuffle(pool)
    query_words = {qid: [pool.pop() for _ in range(3)] for qid in qids}
    content = pool                                      # words no query has: documents' own vocabulary
    ids = iter(doc_ids)
    docs: list[Doc] = []
    qrels: dict[str, dict[str, int]] = {}

    def filler(n: int) -> list[str]:
        return rng.sample(FILLER_WORDS, n) + rng.sample(["the", "of", "and", "in", "a", "for"], 2)

    for qid in qids:
        if qid in unjudged:
            continue
        words = query_words[qid]
        judged = qrels.setdefault(qid, {})
        for rank in range(rng.randint(1, max_rel)):
            grade = max(grades) if rank == 0 else rng.choice(grades)
            top = grade == max(grades)
            own = rng.sample(content, 2)
            body = words * (2 if top else 1) + own + filler(rng.randint(8, 12))
            rng.shuffle(body)
            doc = Doc(next(ids), [words[0], own[0]] if top else [own[0], rng.choice(FILLER_WORDS)], body)
            docs.append(doc)
            judged[doc.doc_id] = grade
    for number in range(max(n_docs - len(docs), 8)):   # background documents, at least 8; every fourth long
        own = rng.sample(content, 3)                   # (coCondenser needs documents of two 128-token spans)
        body = own + (filler(rng.randint(8, 12)) if number % 4 else
                      rng.choices(FILLER_WORDS, k=rng.randint(150, 220)))
        rng.shuffle(body)
        docs.append(Doc(next(ids), [own[0], rng.choice(FILLER_WORDS)], body))
    distractors: dict[str, list[str]] = {}
    for qid in qids:
        candidates = [d for d in docs if d.doc_id not in qrels.get(qid, {})]
        chosen = rng.sample(candidates, 3 if qid in unjudged else rng.randint(2, 3))
        for doc, word in zip(chosen, query_words[qid]):
            doc.body.insert(rng.randrange(len(doc.body) + 1), word)
        distractors[qid] = [d.doc_id for d in chosen]
        if nonrel is not None and qid in qrels:
            for doc in chosen:
                qrels[qid].setdefault(doc.doc_id, nonrel)
    rng.shuffle(docs)                                  # relevant documents are not first in the files
    for number in range(empty):                        # among the others in the files, not first or last
        docs.insert((number + 1) * len(docs) // (empty + 1), Doc(next(ids), [], []))
    return Collection(docs, query_words, qrels, distractors)


def scored(coll: Collection, qid: str, rng: random.Random, depth: int = 20) -> list[tuple[str, float]]:
    """A first-stage run for ``qid``: its relevant documents and distractors among others, best first."""
    picked = list(dict.fromkeys(list(coll.qrels.get(qid, {})) + coll.distractors[qid]))
    others = [d.doc_id for d in coll.docs if d.doc_id not in picked]
    picked += rng.sample(others, max(0, min(depth, len(coll.docs)) - len(picked)))
    rng.shuffle(picked)
    return [(doc_id, round(30.0 - 1.25 * rank, 2)) for rank, doc_id in enumerate(picked)]


# ----------------------------------------------------------------------------------- what each id yields

@dataclass
class Expected:
    """What ``ir_datasets.load(id)`` yields from the fixture: document ids with the words their exported
    text must hold (``docs``), queries with their fields, qrels, and docpairs / scoreddocs if any."""
    docs: dict[str, str]
    queries: dict[str, dict[str, str]]
    qrels: dict[str, dict[str, int]]
    docpairs: list[tuple[str, str, str]] | None = None
    scoreddocs: dict[str, list[str]] | None = None
    doc_fields: tuple[str, ...] = ()                   # the fields the paper's config exports
    query_field: str = "text"

    def counts(self) -> dict[str, int]:
        counts = {"docs": len(self.docs), "queries": len(self.queries),
                  "qrels": sum(len(judged) for judged in self.qrels.values())}
        if self.docpairs is not None:
            counts["docpairs"] = len(self.docpairs)
        if self.scoreddocs is not None:
            counts["scoreddocs"] = sum(len(docs) for docs in self.scoreddocs.values())
        return counts


@dataclass
class Family:
    files: dict[str, bytes] = field(default_factory=dict)          # relative to the home
    derived: list[str] = field(default_factory=list)               # what ir_datasets builds from them
    datasets: dict[str, Expected] = field(default_factory=dict)


def _docs_text(coll: Collection) -> dict[str, str]:
    return {d.doc_id: " ".join(d.words) for d in coll.docs}


def _subset(coll: Collection, qids: Iterable[str], texts: Mapping[str, dict[str, str]]) -> tuple[dict, dict]:
    qids = list(qids)
    return ({q: texts[q] for q in qids}, {q: dict(coll.qrels[q]) for q in qids if q in coll.qrels})


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _tar_gz(members: Mapping[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def _zip(members: Mapping[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    return raw.getvalue()


def _lines(rows: Iterable[Iterable[object]], sep: str = "\t") -> bytes:
    return "".join(sep.join(str(c) for c in row) + "\n" for row in rows).encode()


def _trec_qrels(qrels: Mapping[str, Mapping[str, int]], iteration: str = "0", sep: str = " ") -> bytes:
    return _lines(((q, iteration, d, r) for q, judged in qrels.items() for d, r in judged.items()), sep)


def _trec_run(runs: Mapping[str, list[tuple[str, float]]], tag: str) -> bytes:
    return _lines(((q, "Q0", d, rank, score, tag) for q, docs in runs.items()
                   for rank, (d, score) in enumerate(docs, start=1)), " ")


# ----------------------------------------------------------------------------- TREC disks 4 & 5: Robust04

# A few topics of each of Huston & Croft's folds (ir_datasets' ROBUST04_FOLDS), so each fold subset has queries.
ROBUST04_FOLD_QIDS = {"fold1": ["302", "303", "309"], "fold2": ["301", "308"], "fold3": ["306", "307", "313"],
                      "fold4": ["320", "325"], "fold5": ["304", "305"]}
DISKS45_FILE_COUNT = 2295          # files ir_datasets' disks45/nocr globs must match (else it raises)


def disks45_files() -> dict[str, list[str]]:
    """The 2,295 files of TREC disks 4 & 5 (without CR) that ir_datasets expects, named as distributed:
    FBIS/FB396001.., FR94/MM/FR94MMDD.N, FT/FT9YQ/FT9YQ_N, LATIMES/LAMMDDYY (one a day, 1989-1990).
    The exact split of the count among FBIS, FR94 and FT is this fixture's (the names follow the patterns)."""
    latimes = [f"LATIMES/LA{d:%m%d%y}" for d in (date(1989, 1, 1) + timedelta(n) for n in range(730))]
    fbis = [f"FBIS/FB396{n:03d}" for n in range(1, 491)]
    fr94 = [f"FR94/{d:%m}/FR94{d:%m%d}.{part}"
            for d in (date(1994, 1, 3) + timedelta(n) for n in range(364)) if d.weekday() < 5 for part in (0, 1)]
    quarters = [f"FT9{y}{q}" for y in range(1, 5) for q in range(1, 5) if (y, q) not in ((1, 2), (1, 3), (1, 4))]
    n_ft = DISKS45_FILE_COUNT - len(latimes) - len(fbis) - len(fr94)
    ft = [f"FT/{quarters[i % len(quarters)]}/{quarters[i % len(quarters)]}_{i // len(quarters) + 1}"
          for i in range(n_ft)]
    return {"FBIS": fbis, "FR94": fr94, "FT": ft, "LATIMES": latimes}


def _disks45_doc(source: str, doc: Doc, doc_id: str) -> str:
    if not doc.words:                    # a record with no TEXT and no headline: ir_datasets gives it no text
        return f"<DOC>\n<DOCNO> {doc_id} </DOCNO>\n</DOC>\n"
    title, body = _sentence(doc.title), _sentence(doc.body)
    if source == "FBIS":
        return (f"<DOC>\n<DOCNO> {doc_id} </DOCNO>\n<HT>  \"cr00000011094001\" </HT>\n\n<HEADER>\n"
                f"<H2>   March Reports </H2>\n<DATE1>  1 March 1994 </DATE1>\nArticle Type:FBIS\n"
                f"<H3> <TI>   {title} </TI></H3>\n</HEADER>\n\n<TEXT>\n{body}\n</TEXT>\n\n</DOC>\n")
    if source == "FR94":
        return (f"<DOC>\n<DOCNO> {doc_id} </DOCNO>\n<PARENT> {doc_id} </PARENT>\n<TEXT>\n \n"
                f"<!-- PJG FTAG 4700 -->\n \n<DOCTITLE>{title}</DOCTITLE>\n \n{body}\n \n</TEXT>\n</DOC>\n")
    if source == "FT":
        return (f"<DOC>\n<DOCNO>{doc_id}</DOCNO>\n<PROFILE>_AN-BEOA7AAIFT</PROFILE>\n<HEADLINE>\n"
                f"FT  14 MAY 91 / {title}\n</HEADLINE>\n<TEXT>\n{body}\n</TEXT>\n<PUB>The Financial Times\n"
                f"</PUB>\n<PAGE>\nLondon Page 33\n</PAGE>\n</DOC>\n")
    return (f"<DOC>\n<DOCNO> {doc_id} </DOCNO>\n<DOCID> 1 </DOCID>\n<SECTION>\n<P>\nMetro; Part 2; Page 1\n</P>\n"
            f"</SECTION>\n<HEADLINE>\n<P>\n{title}\n</P>\n</HEADLINE>\n<TEXT>\n<P>\n{body}\n</P>\n</TEXT>\n</DOC>\n")


def _disks45_id(source: str, path: str) -> str:
    name = path.rsplit("/", 1)[1]
    if source == "FBIS":
        return f"FBIS3-{int(name[5:]) * 100 + 1}"
    if source == "FR94":
        return f"{name[:8]}-{name[9:]}-00001"
    if source == "FT":
        folder, part = name.split("_")
        return f"{folder}-{int(part) * 1000 + 1}"
    return f"{name}-0001"


def _robust04(seed: int) -> Family:
    qids = sorted(q for fold in ROBUST04_FOLD_QIDS.values() for q in fold)
    files = disks45_files()
    sources = list(files)
    slots = [(sources[i % 4], files[sources[i % 4]][i // 4]) for i in range(200)]
    ids = [_disks45_id(source, path) for source, path in slots]
    coll = generate("robust04", seed, qids, ids, grades=(1, 2), nonrel=0, n_docs=60)
    fam = Family(derived=["disks45/corpus.nocr.pklz4"])
    where = dict(zip(ids, slots))
    for source, paths in files.items():
        for path in paths:
            fam.files[f"disks45/corpus/{path}"] = b""            # a file of the copy holding no fixture document
    for doc in coll.docs:
        source, path = where[doc.doc_id]
        fam.files[f"disks45/corpus/{path}"] = _disks45_doc(source, doc, doc.doc_id).encode()
    titles = {q: " ".join(w.capitalize() for w in coll.query_words[q]) for q in qids}
    topics = "".join(
        f"<top>\n\n<num> Number: {q}\n\n<title> {titles[q]}\n\n<desc> Description:\n"
        f"Find documents about {' and '.join(coll.query_words[q])}.\n\n<narr> Narrative:\n"
        f"A relevant document discusses {coll.query_words[q][0]}.\n\n</top>\n\n\n" for q in qids)
    fam.files["disks45/04.testset.gz"] = _gz(topics.encode())
    fam.files["disks45/qrels.robust2004.txt"] = _trec_qrels(coll.qrels)
    texts = {q: {"title": titles[q]} for q in qids}
    docs = _docs_text(coll)
    base = "disks45/nocr/trec-robust-2004"
    fam.datasets[base] = Expected(docs, *_subset(coll, qids, texts), doc_fields=("title", "body"),
                                  query_field="title")
    for fold, fold_qids in ROBUST04_FOLD_QIDS.items():
        fam.datasets[f"{base}/{fold}"] = Expected(docs, *_subset(coll, fold_qids, texts),
                                                  doc_fields=("title", "body"), query_field="title")
    return fam


# ------------------------------------------------------------------------------------ ClueWeb09 Category B

CLUEWEB09_YEARS = {2009: range(1, 5), 2010: range(51, 55), 2011: range(101, 105), 2012: range(151, 155)}
# Category B's WARC files (English_1 holds en0000-en0011 and the Wikipedia segments enwp00-enwp03).
CLUEWEB09_FILES = ("en0000/00", "en0000/01", "en0001/00", "enwp00/00")


def _warc(records: list[tuple[str, str, bytes]]) -> bytes:
    """A ClueWeb09 WARC file (version 0.18, LF line ends): a warcinfo record, then one response per page."""
    info = (b"software: Nutch 1.0-dev (modified for clueweb09)\nisPartOf: clueweb09-en\n"
            b"description: clueweb09 crawl with WARC output\nformat: WARC file version 0.18\n")
    out = [b"WARC/0.18\nWARC-Type: warcinfo\nWARC-Date: 2009-03-65T08:43:19-0800\n"
           b"WARC-Record-ID: <urn:uuid:993d3969-9643-4934-b1c6-68d4dbe55b83>\n"
           b"Content-Type: application/warc-fields\nContent-Length: " + str(len(info)).encode() + b"\n\n" + info + b"\n"]
    for n, (doc_id, url, html) in enumerate(records):
        payload = (b"HTTP/1.1 200 OK\nContent-Type: text/html\nDate: Tue, 13 Jan 2009 18:05:10 GMT\n"
                   b"Content-Length: " + str(len(html)).encode() + b"\n\n" + html)
        out.append(("WARC/0.18\nWARC-Type: response\nWARC-Target-URI: " + url + "\n"
                    "WARC-Warcinfo-ID: 993d3969-9643-4934-b1c6-68d4dbe55b83\nWARC-Date: 2009-03-65T08:43:19-0800\n"
                    f"WARC-Record-ID: <urn:uuid:67f7cabd-146c-41cf-bd01-{n:012d}>\nWARC-TREC-ID: {doc_id}\n"
                    "Content-Type: application/http;msgtype=response\nWARC-Identified-Payload-Type: \n"
                    f"Content-Length: {len(payload)}\n\n").encode() + payload + b"\n\n")
    return b"".join(out)


def _host(doc: Doc) -> str:
    return doc.title[0] if doc.title else "blank"


def _page(doc: Doc) -> str:
    """A page's HTML; an empty document's is markup only (a script, a line break), whose extracted text is empty."""
    if not doc.words:
        return '<html><head><title></title></head>\n<body><script>document.write("");</script><br/></body></html>\n'
    return (f"<html><head><title>{_sentence(doc.title)}</title></head>\n<body><p>{_sentence(doc.body)}</p>"
            f"</body></html>\n")


def _clueweb09(seed: int) -> Family:
    qids = [str(q) for years in CLUEWEB09_YEARS.values() for q in years]
    ids = [f"clueweb09-{f.replace('/', '-')}-{n:05d}" for n in range(60) for f in CLUEWEB09_FILES]
    coll = generate("clueweb09", seed, qids, ids, grades=(1, 2, 3), nonrel=0, n_docs=60)
    import lz4.frame                                  # ir_datasets' dependency; its checkpoint files are LZ4 frames
    fam = Family(derived=["clueweb09/corpus.cache"])
    by_file: dict[str, list[Doc]] = {f: [] for f in CLUEWEB09_FILES}
    renumbered: dict[str, str] = {}
    for doc in coll.docs:                                          # numbered in file order, as in the crawl
        f = next(f for f in CLUEWEB09_FILES if doc.doc_id.startswith(f"clueweb09-{f.replace('/', '-')}-"))
        renumbered[doc.doc_id] = f"clueweb09-{f.replace('/', '-')}-{len(by_file[f]):05d}"
        by_file[f].append(doc)
    counts = []
    for f, docs in by_file.items():
        records = [(renumbered[d.doc_id], f"http://{_host(d)}.example.org/{n}.html", _page(d).encode())
                   for n, d in enumerate(docs)]
        fam.files[f"clueweb09/corpus/ClueWeb09_English_1/{f}.warc.gz"] = _gz(_warc(records))
        # ir_datasets' checkpoint index of each WARC file (for seeking): none is due in a file this small
        fam.files[f"clueweb09/corpus.chk/ClueWeb09_English_1/{f}.warc.gz.chk.lz4"] = lz4.frame.compress(b"")
        counts.append(f"*./{f}.warc.gz {len(docs)}")
    fam.files["clueweb09/corpus/record_counts/ClueWeb09_English_1_counts.txt"] = ("\n".join(counts) + "\n").encode()
    coll.rename(renumbered)
    docs = _docs_text(coll)
    for year, years in CLUEWEB09_YEARS.items():
        year_qids = [str(q) for q in years]
        topics = "".join(
            f'<topic number="{q}" type="faceted">\n  <query>{" ".join(coll.query_words[q])}</query>\n'
            f"  <description>Find information on {' and '.join(coll.query_words[q])}.\n  </description>\n"
            f'  <subtopic number="1" type="inf">\n    Where is {coll.query_words[q][0]} found?\n  </subtopic>\n'
            f"</topic>\n\n" for q in year_qids)
        fam.files[f"clueweb09/trec-web-{year}/queries.xml"] = f"<webtrack{year}>\n\n{topics}</webtrack{year}>\n".encode()
        judged = {q: coll.qrels[q] for q in year_qids}
        outside = {year_qids[0]: {"clueweb09-en0040-37-00001": 1}}    # a Category A page: filtered out of catb
        if year == 2009:                                   # statMAP prels: qid docid rel method inclusion-prob
            rows = [(q, d, r, 0, 0.5) for part in (judged, outside) for q, ds in part.items() for d, r in ds.items()]
            fam.files["clueweb09/trec-web-2009/prels.gz"] = _gz(_lines(rows, " "))
        else:
            fam.files[f"clueweb09/trec-web-{year}/qrels"] = _trec_qrels({**judged}) + _trec_qrels(outside)
        texts = {q: {"query": " ".join(coll.query_words[q])} for q in year_qids}
        fam.datasets[f"clueweb09/catb/trec-web-{year}"] = Expected(docs, *_subset(coll, year_qids, texts),
                                                                    doc_fields=("default_text",),
                                                                    query_field="query")
    fam.datasets["clueweb09/catb"] = Expected(docs, {}, {}, doc_fields=("default_text",), query_field="query")
    return fam


# ------------------------------------------------------------------------------------ MS MARCO documents

def _msmarco_document(seed: int) -> Family:
    rng = random.Random(f"{seed}:msmarco-document:ids")
    train = [str(q) for q in rng.sample(range(100_000, 1_200_000), 8)]
    dev = [str(q) for q in rng.sample(range(1_000, 99_000), 6)]
    dl19 = [str(q) for q in rng.sample(range(1_200_000, 1_300_000), 7)]
    unjudged = dl19[5:]                                  # the DL 2019 queries nobody judged (filtered out)
    ids = [f"D{n}" for n in rng.sample(range(1, 3_300_000), 200)]
    coll = generate("msmarco-document", seed, train + dev + dl19, ids, unjudged=unjudged, n_docs=60)
    # TREC DL judgements are graded and judge non-relevant documents; the official MS MARCO ones are not
    for q in dl19[:5]:
        coll.qrels[q] = {d: rng.choice((2, 3)) if n == 0 else rng.choice((1, 2, 3)) for n, d in enumerate(coll.qrels[q])}
        coll.qrels[q].update({d: 0 for d in coll.distractors[q]})
    fam = Family(derived=["msmarco-document/collection.tsv.gz.pklz4", "msmarco-document/trec-dl-2019/queries.tsv"])
    trec = "".join(f"<DOC>\n<DOCNO>{d.doc_id}</DOCNO>\n<TEXT>\nhttp://{_host(d)}.example.com/{d.doc_id}\n"
                   f"{_sentence(d.title)}\n{_sentence(d.body)}\n</TEXT>\n</DOC>\n" for d in coll.docs)
    fam.files["msmarco-document/collection.tsv.gz"] = _gz(trec.encode())     # msmarco-docs.trec.gz, as named there
    texts = {q: {"text": " ".join(coll.query_words[q])} for q in coll.query_words}
    docs = _docs_text(coll)
    runs = {}
    for split, qids in (("train", train), ("dev", dev), ("trec-dl-2019", dl19)):
        fam.files[f"msmarco-document/{split}/queries.tsv.gz"] = _gz(_lines((q, texts[q]["text"]) for q in qids))
        judged = {q: coll.qrels[q] for q in qids if q in coll.qrels}
        qrels = _trec_qrels(judged, iteration="Q0" if split.startswith("trec") else "0")
        fam.files[f"msmarco-document/{split}/" + ("qrels" if split.startswith("trec") else "qrels.gz")] = (
            qrels if split.startswith("trec") else _gz(qrels))
        runs[split] = {q: scored(coll, q, rng, depth=20) for q in qids}
        fam.files[f"msmarco-document/{split}/ms.run.gz"] = _gz(_trec_run(runs[split], "IndriQueryLikelihood"))
    for split, qids in (("train", train), ("dev", dev), ("trec-dl-2019/judged", dl19[:5])):
        queries, qrels = _subset(coll, qids, texts)
        run = runs[split.split("/")[0]]
        fam.datasets[f"msmarco-document/{split}"] = Expected(docs, queries, qrels,
                                                             scoreddocs={q: [d for d, _ in run[q]] for q in qids},
                                                             doc_fields=("title", "body"))
    fam.datasets["msmarco-document"] = Expected(docs, {}, {}, doc_fields=("title", "body"))
    return fam


# -------------------------------------------------------------------------------------- MS MARCO passage

def _msmarco_passage(seed: int) -> Family:
    rng = random.Random(f"{seed}:msmarco-passage:ids")
    qids = [str(q) for q in rng.sample(range(1, 1_200_000), 36)]
    train, dev_small, dev2, dl19, dl20 = qids[:10], qids[10:16], qids[16:22], qids[22:29], qids[29:36]
    unjudged = set(train[8:] + dl19[5:] + dl20[5:])       # in the query files, without qrels (filtered out)
    coll = generate("msmarco-passage", seed, qids, (str(n) for n in range(10_000)), unjudged=unjudged, n_docs=80)
    for q in dl19[:5] + dl20[:5]:                          # TREC DL: graded 0-3
        coll.qrels[q] = {d: rng.choice((2, 3)) if n == 0 else rng.choice((1, 2, 3)) for n, d in enumerate(coll.qrels[q])}
        coll.qrels[q].update({d: 0 for d in coll.distractors[q]})
    coll.docs.sort(key=lambda d: int(d.doc_id))           # collection.tsv is in id order
    texts = {q: {"text": " ".join(coll.query_words[q])} for q in qids}
    fam = Family(derived=["msmarco-passage/collection.tsv", "msmarco-passage/collection.tsv.pklz4",
                          "msmarco-passage/train/queries.tsv", "msmarco-passage/dev/queries.tsv",
                          "msmarco-passage/dev/small/queries.tsv", "msmarco-passage/dev/small/qrels",
                          "msmarco-passage/eval/queries.tsv", "msmarco-passage/trec-dl-2020/queries.tsv"])

    def queries(qs):
        return _lines((q, texts[q]["text"]) for q in qs)

    def judged(qs):
        return {q: coll.qrels[q] for q in qs if q in coll.qrels}

    eval_qids = [str(q) for q in rng.sample(range(1_200_000, 1_300_000), 3)]
    fam.files["msmarco-passage/collectionandqueries.tar.gz"] = _tar_gz({
        "collection.tsv": _lines((d.doc_id, _sentence(d.words)) for d in coll.docs),
        "qrels.dev.small.tsv": _trec_qrels(judged(dev_small), sep="\t"),
        "qrels.dev.tsv": _trec_qrels(judged(dev_small + dev2), sep="\t"),
        "qrels.train.tsv": _trec_qrels(judged(train), sep="\t"),
        "queries.dev.small.tsv": queries(dev_small),
        "queries.dev.tsv": queries(dev_small + dev2),
        "queries.eval.small.tsv": _lines((q, "unjudged evaluation question") for q in eval_qids),
        "queries.eval.tsv": _lines((q, "unjudged evaluation question") for q in eval_qids),
        "queries.train.tsv": queries(train)})
    fam.files["msmarco-passage/queries.tar.gz"] = _tar_gz({
        "queries.dev.tsv": queries(dev_small + dev2),
        "queries.eval.tsv": _lines((q, "unjudged evaluation question") for q in eval_qids),
        "queries.train.tsv": queries(train)})
    fam.files["msmarco-passage/train/qrels"] = _trec_qrels(judged(train), sep="\t")
    fam.files["msmarco-passage/dev/qrels"] = _trec_qrels(judged(dev_small + dev2), sep="\t")
    fam.files["msmarco-passage-v2/dev2/queries.tsv"] = queries(dev2)    # ids of msmarco-passage/dev/2
    fam.files["msmarco-passage/trec-dl-2019/queries.tsv"] = queries(dl19)   # Cache output: source lacks a path
    fam.files["msmarco-passage/trec-dl-2020/queries.tsv.gz"] = _gz(queries(dl20))
    fam.files["msmarco-passage/trec-dl-2019/qrels"] = _trec_qrels(judged(dl19), iteration="Q0")
    fam.files["msmarco-passage/trec-dl-2020/qrels"] = _trec_qrels(judged(dl20), iteration="Q0")
    pairs = [(q, pos, neg) for q in train if q in coll.qrels for pos, r in coll.qrels[q].items() if r > 0
             for neg in coll.distractors[q]]
    fam.files["msmarco-passage/train/docpairs.tsv.gz"] = _gz(_lines(pairs))  # qidpidtriples.train.full.2.tsv.gz
    runs = {}
    for split, qs in (("train", train), ("dev", dev_small), ("trec-dl-2019", dl19), ("trec-dl-2020", dl20)):
        runs[split] = {q: scored(coll, q, rng) for q in qs}
        # top1000 files reduced to qid<TAB>pid by ir_datasets (their download has no cache path)
        fam.files[f"msmarco-passage/{split}/ms.run"] = _lines((q, d) for q in qs for d, _ in runs[split][q])
    docs = _docs_text(coll)

    def run_of(split, qs):
        return {q: [d for d, _ in runs[split][q]] for q in qs}

    judged_train = [q for q in train if q in coll.qrels]
    fam.datasets["msmarco-passage"] = Expected(docs, {}, {}, doc_fields=("text",))
    fam.datasets["msmarco-passage/train/judged"] = Expected(docs, *_subset(coll, judged_train, texts), docpairs=pairs,
                                                           scoreddocs=run_of("train", judged_train),
                                                           doc_fields=("text",))
    fam.datasets["msmarco-passage/dev/small"] = Expected(docs, *_subset(coll, dev_small, texts),
                                                         scoreddocs=run_of("dev", dev_small), doc_fields=("text",))
    fam.datasets["msmarco-passage/dev/2"] = Expected(docs, *_subset(coll, dev2, texts), doc_fields=("text",))
    for year, qs in (("2019", dl19[:5]), ("2020", dl20[:5])):
        fam.datasets[f"msmarco-passage/trec-dl-{year}/judged"] = Expected(
            docs, *_subset(coll, qs, texts), scoreddocs=run_of(f"trec-dl-{year}", qs), doc_fields=("text",))
    return fam


# ------------------------------------------------------------------------------------------------- BEIR

# name: (qrels splits, document metadata, query metadata, document id style, query id style, grades)
BEIR = {
    "arguana": (("test",), (), (), "arg", "arg", (1,)),
    "climate-fever": (("test",), (), (), "title", "int", (1,)),
    "dbpedia-entity": (("dev", "test"), ("url",), (), "dbpedia", "inex", (1, 2)),
    "fever": (("train", "dev", "test"), (), (), "title", "int", (1,)),
    "fiqa": (("train", "dev", "test"), (), (), "int", "int", (1,)),
    "hotpotqa": (("train", "dev", "test"), ("url",), (), "int", "hex", (1,)),
    "nfcorpus": (("train", "dev", "test"), ("url",), ("url",), "med", "plain", (1, 2)),
    "nq": (("test",), (), (), "doc", "test", (1,)),
    "quora": (("dev", "test"), (), (), "int", "int", (1,)),
    "scidocs": (("test",), ("authors", "year", "cited_by", "references"),
                ("authors", "year", "cited_by", "references"), "hex", "hex", (1,)),
    "scifact": (("train", "test"), (), (), "int", "int", (1,)),
    "trec-covid": (("test",), ("url", "pubmed_id"), ("query", "narrative"), "cord", "int", (1, 2)),
    "webis-touche2020/v2": (("test",), ("stance", "url"), ("description", "narrative"), "touche", "int", (1, 2)),
}
BEIR_IDS = tuple(sorted([f"beir/{name}" for name in BEIR] + [
    "beir/dbpedia-entity/test", "beir/fever/train", "beir/fever/dev", "beir/fever/test", "beir/fiqa/train",
    "beir/fiqa/dev", "beir/fiqa/test", "beir/hotpotqa/test", "beir/nfcorpus/train", "beir/nfcorpus/dev",
    "beir/nfcorpus/test", "beir/quora/test", "beir/scifact/test"]))
BEIR_NO_TITLE = ("fiqa", "quora")                        # GenericDoc: doc_id and text only


BEIR_ID_STYLES = {        # each collection's id shape: (n, rng, words) → an id
    "int": lambda n, rng, words: str(n + 1),
    "hex": lambda n, rng, words: f"{rng.getrandbits(160):040x}",
    "title": lambda n, rng, words: "_".join(w.capitalize() for w in words[:2]) + f"_{n}",
    "arg": lambda n, rng, words: f"test-{words[0]}-{rng.getrandbits(32):08x}-pro{n:02d}a",
    "dbpedia": lambda n, rng, words: f"<dbpedia:{'_'.join(w.capitalize() for w in words[:2])}_{n}>",
    "med": lambda n, rng, words: f"MED-{n + 10}",
    "plain": lambda n, rng, words: f"PLAIN-{n + 3}",
    "cord": lambda n, rng, words: f"{rng.getrandbits(32):08x}",
    "inex": lambda n, rng, words: f"INEX_LD-{2009000 + n}",
    "touche": lambda n, rng, words: f"{rng.getrandbits(32):08x}-{rng.getrandbits(32):08x}",
    "test": lambda n, rng, words: f"test{n}",
}


def _beir_id(style: str, n: int, rng: random.Random, words: list[str]) -> str:
    return BEIR_ID_STYLES.get(style, lambda n, rng, words: f"doc{n}")(n, rng, words)


def _beir(seed: int) -> Family:
    fam = Family()
    for name, (splits, doc_meta, query_meta, doc_style, query_style, grades) in BEIR.items():
        rng = random.Random(f"{seed}:beir/{name}:ids")
        per_split = {split: rng.randint(4, 6) for split in splits}
        qids: list[str] = []
        split_qids: dict[str, list[str]] = {}
        for split, n in per_split.items():
            split_qids[split] = [_beir_id(query_style, len(qids) + k, rng, ["q"]) for k in range(n)]
            qids += split_qids[split]
        unjudged = [_beir_id(query_style, len(qids) + k, rng, ["q"]) for k in range(1)]  # a query of no split
        placeholder = [f"__doc{n}" for n in range(200)]
        coll = generate(f"beir/{name}", seed, qids + unjudged, placeholder, grades=grades, unjudged=unjudged,
                        n_docs=40)
        rename = {d.doc_id: _beir_id(doc_style, n, rng, d.title or ["blank"]) for n, d in enumerate(coll.docs)}
        assert len(set(rename.values())) == len(rename), name
        coll.rename(rename)
        folder = name.split("/")[0]

        def metadata(keys, words):
            values = {"url": f"https://example.org/{'_'.join(words)}", "pubmed_id": str(rng.randrange(10**7)),
                      "stance": rng.choice(["PRO", "CON"]), "authors": ["A. Author", "B. Writer"], "year": 2015,
                      "cited_by": [], "references": [], "query": " ".join(words), "narrative": "Relevant if about "
                      + " ".join(words) + ".", "description": "What about " + " ".join(words) + "?"}
            return {k: values[k] for k in keys}

        corpus = [{"_id": d.doc_id, "title": "" if name in BEIR_NO_TITLE else _sentence(d.title),
                   "text": _sentence(d.body if name not in BEIR_NO_TITLE else d.words),
                   "metadata": metadata(doc_meta, d.title)} for d in coll.docs]
        texts = {q: {"text": " ".join(coll.query_words[q]) + ("?" if name in ("nq", "quora", "fiqa") else "")}
                 for q in qids + unjudged}
        queries = [{"_id": q, "text": texts[q]["text"], "metadata": metadata(query_meta, coll.query_words[q])}
                   for q in qids + unjudged]
        members = {f"{folder}/corpus.jsonl": "".join(json.dumps(c) + "\n" for c in corpus).encode(),
                   f"{folder}/queries.jsonl": "".join(json.dumps(q) + "\n" for q in queries).encode()}
        for split in splits:
            rows = [("query-id", "corpus-id", "score")] + [(q, d, r) for q in split_qids[split]
                                                          for d, r in coll.qrels[q].items()]
            members[f"{folder}/qrels/{split}.tsv"] = _lines(rows)
        fam.files[f"beir/{name}/source.zip"] = _zip(members)
        fam.derived += [f"beir/{name}/docs.pklz4", f"beir/{name}/queries.json"] + [
            f"beir/{name}/{split}.qrels" for split in splits]
        docs = {d["_id"]: f"{d['title']} {d['text']}" for d in corpus}
        fields = ("text",) if name in BEIR_NO_TITLE else ("title", "text")
        if len(splits) == 1:
            fam.datasets[f"beir/{name}"] = Expected(docs, {q: texts[q] for q in qids + unjudged},
                                                    {q: coll.qrels[q] for q in qids}, doc_fields=fields)
        else:
            fam.datasets[f"beir/{name}"] = Expected(docs, {q: texts[q] for q in qids + unjudged}, {},
                                                    doc_fields=fields)
            for split in splits:
                fam.datasets[f"beir/{name}/{split}"] = Expected(docs, *_subset(coll, split_qids[split], texts),
                                                                doc_fields=fields)
    return fam


# ----------------------------------------------------------------------------- DPR Wikipedia, NQ splits

def _dpr(seed: int) -> Family:
    rng = random.Random(f"{seed}:dpr-w100:ids")
    train, dev = [f"train{n}" for n in range(10)], [f"dev{n}" for n in range(8)]
    coll = generate("dpr-w100", seed, train + dev, (str(n) for n in range(1, 10_000)), grades=(1, 2), n_docs=80)
    coll.docs.sort(key=lambda d: int(d.doc_id))
    fam = Family(derived=["dpr-w100/docs.tsv.gz.pklz4"] + [f"dpr-w100/nq-{split}/{built}" for split in ("train", "dev")
                                                            for built in ("queries.tsv", "qrels")])
    title = {d.doc_id: " ".join(w.capitalize() for w in d.title) for d in coll.docs}
    text = {d.doc_id: _sentence(d.body) for d in coll.docs}
    rows = [("id", "text", "title")] + [(d.doc_id, f'"{text[d.doc_id]}"' if d.words else "", title[d.doc_id])
                                        for d in coll.docs]
    fam.files["dpr-w100/docs.tsv.gz"] = _gz(_lines(rows))           # psgs_w100.tsv.gz: text in double quotes
    docs = {d.doc_id: f"{text[d.doc_id]} {title[d.doc_id]}" for d in coll.docs}
    fam.datasets["dpr-w100"] = Expected(docs, {}, {}, doc_fields=("title", "text"))
    for split, names in (("train", train), ("dev", dev)):
        records, queries, qrels = [], {}, {}
        for n, name in enumerate(names):                 # ir_datasets numbers the questions of each file from 0
            words = coll.query_words[name]

            def ctx(doc_id, score):
                return {"title": title[doc_id], "text": text[doc_id], "score": score, "title_score": 0,
                        "passage_id": doc_id}

            graded = sorted(coll.qrels[name].items(), key=lambda item: -item[1])
            negatives = [d.doc_id for d in rng.sample(coll.docs, 3) if d.doc_id not in coll.qrels[name]
                         and d.doc_id not in coll.distractors[name]]
            records.append({
                "dataset": f"nq_{split}_psgs_w100", "question": " ".join(words) + "?", "answers": [words[0]],
                "positive_ctxs": [ctx(d, 1000 if r == 2 else 14.5) for d, r in graded],
                "negative_ctxs": [ctx(d, 0) for d in negatives],
                "hard_negative_ctxs": [ctx(d, 9.5) for d in coll.distractors[name]]})
            queries[str(n)] = {"text": " ".join(words) + "?"}
            qrels[str(n)] = {**{d: 2 if r == 2 else 1 for d, r in graded},
                             **{d: 0 for d in coll.distractors[name]}, **{d: -1 for d in negatives}}
        fam.files[f"dpr-w100/nq-{split}.json.gz"] = _gz(json.dumps(records, indent=2).encode())
        fam.datasets[f"dpr-w100/natural-questions/{split}"] = Expected(docs, queries, qrels,
                                                                        doc_fields=("title", "text"))
    return fam


# ------------------------------------------------------------------------------------------- TripClick

TRIPCLICK_SPLITS = {("head", "train"): 3, ("torso", "train"): 3, ("tail", "train"): 3, ("head", "val"): 5,
                    ("torso", "val"): 4, ("tail", "val"): 4, ("head", "test"): 5, ("torso", "test"): 4,
                    ("tail", "test"): 4}


def _tripclick(seed: int) -> Family:
    rng = random.Random(f"{seed}:tripclick:ids")
    all_qids = [str(q) for q in rng.sample(range(1, 700_000), sum(TRIPCLICK_SPLITS.values()))]
    split_qids, at = {}, 0
    for key, n in TRIPCLICK_SPLITS.items():
        split_qids[key], at = all_qids[at:at + n], at + n
    test = [q for (_, part), qs in split_qids.items() if part == "test" for q in qs]
    coll = generate("tripclick", seed, all_qids, (str(n) for n in rng.sample(range(1, 12_000_000), 300)),
                    unjudged=test, n_docs=100, max_rel=2)
    fam = Family(derived=["tripclick/topics_and_qrels", "tripclick/val_runs", "tripclick/test_runs",
                          "tripclick/train.docpairs", "tripclick/benchmark.tar.gz.pklz4"])
    title = {d.doc_id: _sentence(d.title) for d in coll.docs}
    body = {d.doc_id: _sentence(d.body) for d in coll.docs}
    members: dict[str, bytes] = {}
    for g in range(4):
        group = coll.docs[g::4]
        members[f"benchmark/documents/docs_grp_{g:02d}.txt"] = "".join(
            f"<DOC>\n<DOCNO>{d.doc_id}</DOCNO>\n<TITLE>{title[d.doc_id]}</TITLE>\n"
            f"<URL>https://www.tripdatabase.com/doc/{d.doc_id}</URL>\n<TEXT>\n{body[d.doc_id]}\n</TEXT>\n</DOC>\n"
            for d in group).encode()
    texts = {q: {"text": " ".join(coll.query_words[q])} for q in all_qids}
    for (group, part), qs in split_qids.items():
        members[f"benchmark/topics/topics.{group}.{part}.txt"] = "".join(
            f"<top>\n<num> Number: {q}\n<title> {texts[q]['text']}\n<desc> Description:\n<narr> Narrative:\n</top>\n\n"
            for q in qs).encode()
        if part != "test":                               # test qrels are not distributed
            raw = {q: {d: 1 if r > 0 else 0 for d, r in coll.qrels[q].items()} for q in qs}
            for q in qs:                                 # shown higher up and not clicked
                raw[q].update({d: 0 for d in coll.distractors[q]})
            members[f"benchmark/qrels/qrels.raw.{group}.{part}.txt"] = _trec_qrels(raw)
            dctr = {q: {d: rng.choice((1, 2, 3)) if r else 0 for d, r in raw[q].items()} for q in qs}
            members[f"benchmark/qrels/qrels.dctr.{group}.{part}.txt"] = _trec_qrels(dctr)
            coll.qrels.update(raw)
    fam.files["tripclick/benchmark.tar.gz"] = _tar_gz(members)
    train = [q for (_, part), qs in split_qids.items() if part == "train" for q in qs]
    pairs = [(q, pos, neg) for q in train for pos, r in coll.qrels[q].items() if r > 0
             for neg in coll.distractors[q]]
    triples = _lines((texts[q]["text"], f"{title[a]} <eot> {body[a]}", f"{title[b]} <eot> {body[b]}")
                     for q, a, b in pairs)
    runs = {key: {q: scored(coll, q, rng) for q in qs} for key, qs in split_qids.items()}
    fam.files["tripclick/dlfiles.tar.gz"] = _tar_gz({"dlfiles/triples.train.tsv": triples, **{
        f"dlfiles/run.trip.BM25.{group}.val.txt": _trec_run(runs[(group, "val")], "BM25")
        for group in ("head", "torso", "tail")}})
    fam.files["tripclick/dlfiles_runs_test.tar.gz"] = _tar_gz({
        f"runs_test/run.trip.BM25.{group}.test.txt": _trec_run(runs[(group, "test")], "BM25")
        for group in ("head", "torso", "tail")})
    docs = {d.doc_id: f"{title[d.doc_id]} {body[d.doc_id]}" for d in coll.docs}
    fields = ("title", "text")
    fam.datasets["tripclick"] = Expected(docs, {}, {}, doc_fields=fields)
    fam.datasets["tripclick/train"] = Expected(docs, *_subset(coll, train, texts), docpairs=pairs, doc_fields=fields)
    for group, part in (("head", "val"), ("torso", "val"), ("tail", "val"), ("head", "test"), ("torso", "test"),
                        ("tail", "test")):
        qs = split_qids[(group, part)]
        queries, qrels = _subset(coll, qs, texts)
        fam.datasets[f"tripclick/{part}/{group}"] = Expected(
            docs, queries, qrels if part != "test" else {},
            scoreddocs={q: [d for d, _ in runs[(group, part)][q]] for q in qs}, doc_fields=fields)
    return fam


# ------------------------------------------------------------------------------------------------ Cranfield

def _cranfield_record(number: int | str, fields: Mapping[str, list[str]]) -> str:
    """A record of ``cran.all.1400`` / ``cran.qry``: ``.I`` and its number, then each field's marker and lines."""
    return f".I {number}\n" + "".join(f".{marker}\n" + "".join(f"{line}\n" for line in lines)
                                      for marker, lines in fields.items())


def _cranfield(seed: int) -> Family:
    """The Cranfield collection as ``cran.tar.gz`` holds it: 1,400 aeronautics abstracts in the real one, two of them
    (471 and 995) with no text at all, as the first two empty documents here are, the first judged relevant to the
    first query; the third has its title and text lines of whitespace only. Lower-case text with spaced full stops; queries numbered with gaps in ``cran.qry``
    (ir_datasets renumbers them 1, 2, ... as ``cranqrel`` does); grades -1 (no interest) to 4."""
    rng = random.Random(f"{seed}:cranfield:ids")
    given = sorted(rng.sample(range(1, 366), 10))                  # cran.qry's own numbers, with gaps
    qids = [str(n) for n in range(1, len(given) + 1)]              # what ir_datasets and cranqrel call them
    coll = generate("cranfield", seed, qids, (f"_{n}" for n in range(1, 1401)), grades=(1, 2, 3, 4), nonrel=-1,
                    n_docs=50, empty=3)
    blank = [d.doc_id for d in coll.docs if not d.words]
    coll.qrels[qids[0]][blank[0]] = 1           # judged (of minimum interest), though no ranker can read it
    coll.rename({d.doc_id: str(n) for n, d in enumerate(coll.docs, 1)})   # numbered in file order, as the real one
    blank = [d.doc_id for d in coll.docs if not d.words]

    def lines(words: list[str]) -> list[str]:
        return textwrap.wrap(" ".join(words) + " .", 60) if words else []

    records = []
    for doc in coll.docs:
        if doc.doc_id == blank[-1]:                                 # whitespace only
            fields = {"T": ["   "], "A": [], "B": [], "W": ["  ", "\t "]}
        else:
            fields = {"T": lines(doc.title), "A": [f"{doc.title[0]},a."] if doc.title else [],
                      "B": [f"j. ae. scs. {doc.doc_id}, 1958."] if doc.words else [], "W": lines(doc.words)}
        records.append(_cranfield_record(doc.doc_id, fields))
    queries = "".join(_cranfield_record(f"{number:03d}", {"W": lines(coll.query_words[qid])})
                      for number, qid in zip(given, qids))
    qrels = _lines(((q, d, r) for q, judged in coll.qrels.items() for d, r in judged.items()), " ")
    fam = Family(derived=["cranfield/docs.txt", "cranfield/queries.txt", "cranfield/qrels.txt", "cranfield/docs.pklz4"])
    fam.files["cranfield/cran.tar.gz"] = _tar_gz({"cran.all.1400": "".join(records).encode(),
                                                  "cran.qry": queries.encode(), "cranqrel": qrels})
    texts = {q: {"text": " ".join(coll.query_words[q]) + " ."} for q in qids}
    docs = {d.doc_id: " ".join(d.words) for d in coll.docs}
    fam.datasets["cranfield"] = Expected(docs, texts, coll.qrels, doc_fields=("title", "text"))
    return fam


# ------------------------------------------------------------------------------------- NeuCLIR (Russian)

def _neuclir(seed: int) -> Family:
    rng = random.Random(f"{seed}:neuclir:ids")
    qids = [str(q) for q in rng.sample(range(1, 200), 10)]
    ru, elsewhere = qids[:8], qids[8:]                   # the last two are judged in Chinese only
    coll = generate("neuclir", seed, ru, (f"{rng.getrandbits(128):032x}" for _ in range(400)),
                    grades=(1, 3), nonrel=0, n_docs=60)
    for q in elsewhere:
        coll.query_words[q] = rng.sample(TOPIC_WORDS, 3)
    fam = Family(derived=["neuclir/1/rus/docs.jsonl.gz.pklz4"])
    docs_jsonl = "".join(json.dumps({
        "id": f"{d.doc_id[:8]}-{d.doc_id[8:12]}-{d.doc_id[12:16]}-{d.doc_id[16:20]}-{d.doc_id[20:]}",
        "cc_file": "crawl-data/CC-NEWS/2021/01/CC-NEWS-20210101000000-00001.warc.gz",
        "time": "2021-01-01", "title": _sentence(russian(w) for w in d.title),
        "text": _sentence(russian(w) for w in d.body), "url": f"https://news.example.ru/{d.doc_id[:12]}"},
        ensure_ascii=False) + "\n" for d in coll.docs)
    uuid = {d.doc_id: f"{d.doc_id[:8]}-{d.doc_id[8:12]}-{d.doc_id[12:16]}-{d.doc_id[16:20]}-{d.doc_id[20:]}"
            for d in coll.docs}
    fam.files["neuclir/1/rus/docs.jsonl.gz"] = _gz(docs_jsonl.encode())

    def topic(lang, source, words):
        return {"lang": lang, "source": source, "topic_title": " ".join(words),
                "topic_description": "Что известно о " + " ".join(words) + "?" if lang != "eng"
                else "What is known about " + " ".join(words) + "?",
                "topic_narrative": ("Документы о " if lang != "eng" else "Documents about ") + " ".join(words) + "."}

    lines = []
    for q in qids:
        words = coll.query_words[q]
        ru_words = [russian(w) for w in words]
        lines.append({"topic_id": q, "topics": [topic("eng", "original", words),
                                                 topic("rus", "human translation", ru_words),
                                                 topic("rus", "machine translation", ru_words[::-1])],
                      "narratives": {"rus": {"very_valuable": "", "somewhat_valuable": "", "not_that_valuable": "",
                                             "non_relevant": ""}},
                      "languages_with_qrels": ["rus"] if q in ru else ["zho"]})
    fam.files["neuclir/trec-2022/topics.jsonl"] = "".join(json.dumps(t, ensure_ascii=False) + "\n"
                                                          for t in lines).encode()
    qrels = {q: {uuid[d]: r for d, r in coll.qrels[q].items()} for q in ru}
    zho = {q: {f"{rng.getrandbits(128):032x}": 3} for q in elsewhere + ru[:1]}   # other languages: filtered out
    fam.files["neuclir/trec-2022/qrels"] = _trec_qrels(qrels, iteration="rus") + _trec_qrels(zho, iteration="zho")
    texts = {q: {"title": " ".join(coll.query_words[q]), "ht_title": " ".join(russian(w) for w in coll.query_words[q])}
             for q in ru}
    docs = {uuid[d.doc_id]: " ".join(russian(w) for w in d.words) for d in coll.docs}
    fam.datasets["neuclir/1/ru/trec-2022"] = Expected(docs, texts, qrels, doc_fields=("title", "text"),
                                                      query_field="ht_title")
    return fam


# ---------------------------------------------------------------------------------------------- the API

FAMILIES: dict[str, Callable[[int], Family]] = {
    "robust04": _robust04, "clueweb09": _clueweb09, "msmarco-document": _msmarco_document,
    "msmarco-passage": _msmarco_passage, "beir": _beir, "dpr-w100": _dpr, "tripclick": _tripclick,
    "neuclir": _neuclir, "cranfield": _cranfield}


@lru_cache(maxsize=None)
def _family(name: str, seed: int) -> Family:
    """A family's files and expectations (cached: treat as read-only)."""
    return FAMILIES[name](seed)


SUPPORTED: tuple[str, ...] = tuple(dataset for name in FAMILIES for dataset in _family(name, 0).datasets)


def family_of(dataset_id: str) -> str:
    """The collection family (``FAMILIES`` key) whose files serve ``dataset_id``."""
    for name in FAMILIES:
        if dataset_id in _family(name, 0).datasets:
            return name
    raise ValueError(f"no scale-model fixture for {dataset_id!r}; supported: {', '.join(SUPPORTED)}")


def expected(dataset_id: str, seed: int = 0) -> Expected:
    """What ``ir_datasets.load(dataset_id)`` yields from the fixture written with ``seed``."""
    return _family(family_of(dataset_id), seed).datasets[dataset_id]


def _put(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` unless it holds it already; whether it changed."""
    if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    partial.replace(path)
    return True


def write_fixtures(home: str | Path, dataset_ids: Iterable[str], seed: int = 0) -> dict[str, dict[str, int]]:
    """Write the files ir_datasets reads for each id under ``home`` (an IR_DATASETS_HOME); returns per id
    the counts of docs, queries and qrels it yields (and docpairs / scoreddocs where it has them).

    A collection is written whole (every split of it), so ids sharing one get the same files; writing
    again is a no-op unless ``seed`` differs, when the files ir_datasets derived from the old ones go."""
    home = Path(home)
    dataset_ids = list(dataset_ids)
    families = list(dict.fromkeys(family_of(i) for i in dataset_ids))
    for name in families:
        fam = _family(name, seed)
        changed = [_put(home / rel, data) for rel, data in fam.files.items()]
        if any(changed):
            for rel in fam.derived:
                target = home / rel
                if target.is_dir():
                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
    return {i: expected(i, seed).counts() for i in dataset_ids}

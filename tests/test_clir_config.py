"""The modular CLIR paper configuration (config/paper-modular-clir.yaml), its checks, and the collection and
corpus sources it adds: an ir_datasets collection, a local text part, a licensed collection given as files."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from peftir.clir.collection import make_test_collection
from peftir.clir.multilingual_text import build_language_corpus
from peftir.data.trec import MalformedFileError
from peftir.errors import ActionableError
from peftir.clir.contract import CLIR_SYSTEMS, composed_languages, pair_languages, ranking_key
from peftir.pipeline.config import ConfigError, load_config
from peftir.contract.backbones import hub_pin

REPO = Path(__file__).resolve().parents[1]
PAPER = REPO / "config" / "paper-modular-clir.yaml"
NEUCLIR = REPO / "config" / "paper-modular-clir-neuclir.yaml"


def _overlay(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "overlay.yaml"
    path.write_text(text)
    return path


def one_line_error(tmp_path: Path, text: str) -> str:
    """The ConfigError the overlay ``text`` raises, checked to be one line."""
    with pytest.raises(ConfigError) as raised:
        load_config(REPO, [_overlay(tmp_path, text)])
    assert "\n" not in str(raised.value)
    return str(raised.value)


@pytest.mark.parametrize("overlays", [[PAPER], [PAPER, NEUCLIR]], ids=["clef", "neuclir"])
def test_the_paper_overlays_validate(irds_home, overlays):
    clir = load_config(REPO, overlays)["modular_clir"]
    assert hub_pin(clir["backbone"]["name"])[0] == "bert-base-multilingual-uncased"     # pinned
    assert clir["language_modules"]["adapter"]["steps"] == 250_000
    assert clir["ranking"]["sftm"]["phase_steps"] == [187_500, 625_000]


@pytest.mark.parametrize("text, key", [
    ("modular_clir: {rerank: {depht: 10}}", "modular_clir.rerank: unknown key(s) depht"),
    ("modular_clir: {tables: {table1: {pairs: [en-xx]}}}", "modular_clir.tables.table1.pairs[0] = 'xx'"),
    ("modular_clir: {languages: {en: {corpus: [{kind: text}]}}}", "modular_clir.languages.en.corpus[0]: a text part"),
    ("modular_clir: {languages: {en: {corpus: [{kind: manpages}]}}}", "modular_clir.languages.en.corpus[0]: a manpages"),
])
def test_a_bad_clir_config_is_one_line_naming_the_key(irds_home, tmp_path, text, key):
    assert key in one_line_error(tmp_path, text)


def _clir_jobs(clir: dict) -> dict[str, int]:
    """Jobs per CLIR rule the tables and figures need, counted from the config (README's job counts)."""
    reranks, languages = set(), set()
    for kind in ("tables", "figures"):
        for spec in clir[kind].values():
            for system in spec["systems"]:
                module = CLIR_SYSTEMS[system].module
                factors = spec.get("reduction_factors") or [clir["ranking"]["reduction_factors"].get(module)]
                for pair in spec["pairs"]:
                    languages |= {(module, language)    # the query's, the document's or both languages' modules
                                  for language in composed_languages(CLIR_SYSTEMS[system].language, *pair_languages(pair))}
                    reranks |= {(pair, spec["prerank"], system, ranking_key(module, rf), seed)
                                for rf in factors for seed in clir["ranking"]["seeds"]}
    preranks = {(pair, prerank) for pair, prerank, *_ in reranks}
    return {"rerank_clir": len(reranks), "evaluate_clir": len(reranks), "prerank_clir": len(preranks),
            "ranking_adapter": len({(ranking, seed) for *_, ranking, seed in reranks}),
            "mlm_language_adapter": len(languages | {(kind, clir["source_language"])
                                                     for _, _, system, ranking, _ in reranks
                                                     if (kind := CLIR_SYSTEMS[system].module) != "full"}),
            "clir_index": len({pair_languages(pair)[1] for pair, prerank in preranks if prerank == "bm25"}),
            "clir_dense_index": len({pair_languages(pair)[1] for pair, prerank in preranks if prerank == "dense"}),
            "clir_collection": 1}


def test_the_paper_overlay_plans_the_documented_jobs(irds_home, tmp_path):
    clir = load_config(REPO, [PAPER])["modular_clir"]
    expected = _clir_jobs(clir)
    # Table 1: 9 pairs × 9 systems; Table 2: 2 × 2; Table 3: 5 × 3; Figure 2: 9 pairs × 2 systems × 6 factors,
    # less its 18 runs at the Tables' factors (RA rf 16, RM rf 2) that Table 1 has: 81 + 4 + 15 + 90.
    assert expected["rerank_clir"] == 190 and expected["ranking_adapter"] == 13
    # EN DE IT FI RU; Table 2's SW and SO queries meet English documents under RA + LA_Doc and RM + LM_Doc
    assert expected["mlm_language_adapter"] == 2 * 5 and expected["prerank_clir"] == 16
    assert expected["clir_dense_index"] == 4            # DE IT FI RU documents, each embedded once for 9 pairs
    for language in ("en", "de", "it", "fi", "ru", "sw", "so"):       # the Wikipedia text the corpora read
        path = tmp_path / "data" / "wikipedia" / f"{language}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("text\n")
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--cores", "1", "--snakefile",
                             str(REPO / "Snakefile"), "--directory", str(tmp_path), "--configfile",
                             str(REPO / "config.yaml"), str(PAPER), "--", "all_tables"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    counts = {line.split()[0]: int(line.split()[1]) for line in result.stdout.splitlines()
              if len(line.split()) == 2 and line.split()[1].isdigit()}
    assert {rule: counts.get(rule, 0) for rule in expected} == expected
    assert counts["language_corpus"] == 5 and "debian_package" not in counts
    assert counts["clir_table"] == 3 and counts["clir_figure"] == 1


def test_the_ir_datasets_source_exports_each_language(irds_home, tmp_path):
    out = tmp_path / "collection"
    files = {name: {"en": str(out / "en" / name)} for name in ("docs.jsonl", "queries.tsv", "qrels.txt")}
    settings = {"source": "ir_datasets", "languages": {"en": {"irds": "vaswani", "query_field": "text",
                                                              "doc_fields": ["text"]}}}
    make_test_collection(settings, {}, {}, ["en"], files["docs.jsonl"], files["queries.tsv"], files["qrels.txt"],
                         str(out / "folds.json"), str(out / "info.json"))
    docs = (out / "en" / "docs.jsonl").read_text().splitlines()
    assert len(docs) == 11429 and set(json.loads(docs[0])) == {"id", "contents"}
    queries = (out / "en" / "queries.tsv").read_text().splitlines()
    assert len(queries) == 93
    assert json.loads((out / "folds.json").read_text())["splits"]["test"] == sorted(q.split("\t")[0] for q in queries)
    assert (out / "en" / "qrels.txt").read_text().count("\n") == 2083
    info = json.loads((out / "info.json").read_text())
    assert info["per_language"]["en"]["docs"] == 11429
    assert sorted(path.name for path in out.iterdir()) == ["en", "folds.json", "info.json"]   # no lookups left


def test_a_text_part_reads_a_local_file_one_unit_per_line(tmp_path):
    text = tmp_path / "wiki.txt"
    text.write_text("".join(f"Article {i} of the extracted dump.\n" for i in range(20)) + "Article 0 of the "
                    "extracted dump.\n\n")
    out = tmp_path / "corpus"
    build_language_corpus("en", [{"kind": "text", "path": str(text)}], {}, {}, str(out / "train.txt"),
                          str(out / "heldout.txt"), str(out / "info.json"), heldout_fraction=0.1, max_words=None,
                          seed=1)
    lines = (out / "train.txt").read_text().splitlines() + (out / "heldout.txt").read_text().splitlines()
    assert sorted(lines) == sorted(f"Article {i} of the extracted dump." for i in range(20))
    part = json.loads((out / "info.json").read_text())["parts"][0]
    assert part["duplicates_dropped"] == 1 and len(part["sha256"]) == 64
    with pytest.raises(ActionableError, match="no file"):
        build_language_corpus("en", [{"kind": "text", "path": str(tmp_path / "absent.txt")}], {}, {},
                              str(out / "t.txt"), str(out / "h.txt"), str(out / "i.json"), heldout_fraction=0.1,
                              max_words=None, seed=1)


ARTICLES = {"Alpha": ["Alpha is the first letter.", "It comes before beta."],
            "Beta": ["Beta is the second letter."], "Gamma": ["Gamma follows beta.", "Then delta.", "Then epsilon."]}


def _extractions(directory) -> dict[str, str]:
    """The three forms of one extraction: wikiextractor's <doc> blocks and --json lines, and one article a line."""
    directory.mkdir()
    doc = "".join(f'<doc id="{i}" url="u{i}" title="{title}">\n{title}\n' + "\n".join(paragraphs) + "\n</doc>\n"
                  for i, (title, paragraphs) in enumerate(ARTICLES.items()))
    lines = {"doc.txt": doc,
             "json.txt": "".join(json.dumps({"id": str(i), "title": title, "text": "\n".join(paragraphs)}) + "\n"
                                 for i, (title, paragraphs) in enumerate(ARTICLES.items())),
             "lines.txt": "".join(" ".join(paragraphs) + "\n" for paragraphs in ARTICLES.values())}
    for name, text in lines.items():
        (directory / name).write_text(text)
    return {name: str(directory / name) for name in lines}


def test_a_text_part_is_one_article_a_unit_in_each_form_wikiextractor_writes(tmp_path):
    """An article is held out or trained on whole and its paragraphs stay one unit (one [CLS] … [SEP] when
    tokenised), whether the extraction is wikiextractor's <doc> blocks (title line left out), its --json, or one
    article a line."""
    wanted = sorted(" ".join(paragraphs) for paragraphs in ARTICLES.values())
    for name, path in _extractions(tmp_path / "extracted").items():
        out = tmp_path / name
        build_language_corpus("en", [{"kind": "text", "path": path}], {}, {}, str(out / "train.txt"),
                              str(out / "heldout.txt"), str(out / "info.json"), heldout_fraction=0.34,
                              max_words=None, seed=1)
        held, trained = ((out / f).read_text().splitlines() for f in ("heldout.txt", "train.txt"))
        assert len(held) == 1 and sorted(held + trained) == wanted, name


@pytest.mark.parametrize("text, where, why", [
    ('<doc id="1" title="A">\nA\nBody.\n</doc>\n</doc>\n', "line 5", "without its <doc>"),
    ('<doc id="1" title="A">\nA\nBody.\n', "line 1", "not closed"),
    ('<doc id="1" title="A">\nA\n</doc>\nstray paragraph\n', "line 4", "outside a <doc>"),
    ('{"id": "1", "text": "Body."}\n{"id": "2", "title": "B"}\n', "line 2", "under \"text\""),
    ("An article.\n<doc id=\"2\" title=\"B\">\n", "line 2", "one article a line"),
])
def test_a_text_part_that_is_not_whole_articles_is_refused_with_its_line(tmp_path, text, where, why):
    path = tmp_path / "wiki.txt"
    path.write_text(text)
    with pytest.raises(MalformedFileError, match=f"{path}, {where}: .*{why}"):
        build_language_corpus("en", [{"kind": "text", "path": str(path)}], {}, {}, str(tmp_path / "t.txt"),
                              str(tmp_path / "h.txt"), str(tmp_path / "i.json"), heldout_fraction=0.1,
                              max_words=None, seed=1)


def test_a_missing_licensed_collection_says_where_to_get_it_and_writes_nothing(tmp_path):
    settings = yaml.safe_load(PAPER.read_text())["modular_clir"]["collection"]
    settings["path"] = str(tmp_path / "clef-2003")
    out = tmp_path / "collection"
    paths = {lang: str(out / lang / "file") for lang in ("en", "de")}
    with pytest.raises(ActionableError) as raised:
        make_test_collection(settings, {}, {}, ["en", "de"], paths, paths, paths, str(out / "folds.json"),
                             str(out / "info.json"))
    assert "ELRA" in str(raised.value) and "clef-dataloaders" in str(raised.value)
    assert not out.exists()


def test_translations_are_checked_before_any_job_naming_file_and_line(irds_home, tmp_path):
    """Table 1's NMT + BM25 row: a translations file of a shown pair, there, well formed and, for a collection given
    as files, covering its test queries (by the queries file's line); the row only in tables."""
    bad, good = tmp_path / "bad.tsv", tmp_path / "de.tsv"
    bad.write_text("q1\tKäse\nq2 Eisenbahn\n")
    good.write_text("q1\tKäse\n")
    key = "modular_clir.translations"
    assert f"{key}.en-de = '{bad}': {bad}, line 2: expected query id<TAB>translated text" in one_line_error(
        tmp_path, f"modular_clir: {{translations: {{en-de: {bad}}}}}")
    assert f"{key}.en-de = '{tmp_path / 'no.tsv'}': no such file" in one_line_error(
        tmp_path, f"modular_clir: {{translations: {{en-de: {tmp_path / 'no.tsv'}}}}}")
    assert f"{key}.de-en = '{good}': no table with an NMT + BM25 row (nmt_bm25) or pre-ranker shows pair de-en" in one_line_error(
        tmp_path, f"modular_clir: {{translations: {{de-en: {good}}}}}")
    assert f"config key {key}.english-german:" in one_line_error(
        tmp_path, f"modular_clir: {{translations: {{english-german: {good}}}}}")
    assert "modular_clir.figures.figure2.nmt_bm25: only tables" in one_line_error(
        tmp_path, "modular_clir: {figures: {figure2: {nmt_bm25: NMT}}}")
    clef = tmp_path / "clef"
    (clef / "en").mkdir(parents=True)
    (clef / "en" / "queries.tsv").write_text("q1\tcheese\nq2\trailway\nq3\tweather\n")
    files = f"modular_clir: {{collection: {{source: files, path: {clef}}}, translations: {{en-de: {good}}}}}"
    assert (f"{key}.en-de = '{good}': {good}: no translation of test query 'q2' ({clef / 'en' / 'queries.tsv'}, "
            f"line 2), 'q3' (") in one_line_error(tmp_path, files)
    (clef / "folds.json").write_text(json.dumps({"splits": {"train": ["q2", "q3"], "valid": [], "test": ["q1"]}}))
    assert load_config(REPO, [_overlay(tmp_path, files)])["modular_clir"]["translations"] == {"en-de": str(good)}


def test_clef_queries_are_title_and_description_as_the_authors_loaders_read_them(irds_home, tmp_path):
    """The paper configuration reads a CLEF topic as its title and description joined (the authors' clef-dataloaders
    load_queries with include_desc); a file without the description is refused naming the key, and ``title`` (the
    default) keeps the title alone."""
    from peftir.clir.collection import copy_local_collection

    assert load_config(REPO, [PAPER])["modular_clir"]["collection"]["query_text"] == "title_description"
    (tmp_path / "clef" / "en").mkdir(parents=True)
    (tmp_path / "clef" / "en" / "docs.jsonl").write_text('{"id": "d1", "contents": "a cheese shop"}\n')
    (tmp_path / "clef" / "en" / "qrels.txt").write_text("q1 0 d1 1\n")
    queries = tmp_path / "clef" / "en" / "queries.tsv"
    out = {name: {"en": str(tmp_path / name)} for name in ("docs", "queries", "qrels")}

    def copied(query_text: str) -> str:
        copy_local_collection({"path": str(tmp_path / "clef"), "query_text": query_text}, ["en"], out["docs"],
                              out["queries"], out["qrels"], str(tmp_path / "folds.json"), str(tmp_path / "info.json"))
        return (tmp_path / "queries").read_text()

    queries.write_text("q1\tcheese\tFind documents about cheese shops.\n")
    assert copied("title_description") == "q1\tcheese Find documents about cheese shops.\n"
    assert copied("title") == "q1\tcheese\n" and json.loads((tmp_path / "info.json").read_text())["query_text"] == \
        "title"
    queries.write_text("q1\tcheese\n")
    with pytest.raises(ActionableError, match="query q1 has no description: modular_clir.collection.query_text"):
        copied("title_description")
    queries.write_text("q1\tcheese\tFind documents\tabout cheese shops.\n")
    with pytest.raises(ActionableError, match="query q1 has 3 columns after its id: modular_clir.collection.query_te"):
        copied("title_description")


def test_table_2s_rerankers_can_read_the_translated_query_nmt_bm25_ranked(irds_home, tmp_path):
    """The paper pairs NMT + BM25 with its English-trained modules reading the translated English query (the
    authors' evaluate.py swaps SW/SO queries for their translations): with ``prerank: nmt_bm25`` the pre-ranking is
    BM25 of the user's translations and the rerankers read the same translations, composing the documents'
    language's modules; without translations the table is refused naming the key."""
    from peftir.clir import plan
    from peftir.pipeline.contract import PARAMS, PATHS

    translations = {pair: tmp_path / f"{pair}.tsv" for pair in ("sw-en", "so-en")}
    for path in translations.values():
        path.write_text("q1\ta translated query\n")
    overlay = ("modular_clir: {tables: {table2: {prerank: nmt_bm25}}, translations: {"
               + ", ".join(f"{pair}: {path}" for pair, path in translations.items()) + "}}\n")
    config = load_config(REPO, [PAPER, _overlay(tmp_path, overlay)])
    job = {"pair": "sw-en", "prerank": "nmt_bm25", "system": "ra_doc_noinv", "ranking": "adapter-rf16", "seed": "1"}
    found = plan.rerank_clir_input(config, job)
    assert found["queries"] == str(translations["sw-en"])
    assert found["prerank"] == PATHS.clir_prerank.format(pair="sw-en", prerank="nmt_bm25")
    assert found["language_modules"] == [PATHS.language_module.format(kind="adapter", language="en")]
    assert plan.prerank_input(config, job)["translations"] == str(translations["sw-en"])
    assert PARAMS["clir_rerank"](config, job)["translated_query"] is True
    assert "translated_query" not in PARAMS["clir_rerank"](config, {**job, "prerank": "bm25"})
    assert PARAMS["clir_prerank"](config, job) == {"k1": 0.9, "b": 0.4, "depth": 1000, "analyzer": "en"}
    untranslated = _overlay(tmp_path, "modular_clir: {tables: {table2: {prerank: nmt_bm25}}}\n")
    with pytest.raises(ConfigError, match="modular_clir.tables.table2.prerank = 'nmt_bm25': no translations of pair "
                                          "sw-en's queries"):
        load_config(REPO, [PAPER, untranslated])

"""Open-domain QA judged as DPR judges it: answer matching (``peftir.evaluation.answers``), the answers' export, the
evaluation that counts every question, and the config check before any job."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from peftir.data import export, split_queries
from peftir.data.docstore import lookup_writer
from peftir.data.trec import MalformedFileError
from peftir.errors import ActionableError
from peftir.evaluation.answers import has_answer, judge_run, words
from peftir.evaluation.metrics import evaluation_summary

from test_clir_config import one_line_error

PASSAGES = {
    "gold": "Eiffel Tower The tower stands in Paris, on the Champ de Mars.",       # BM25's, judged in the qrels
    "dense": "Gustave Eiffel's company built it for the 1889 World's Fair held in Paris.",   # outside BM25's pool
    "near": "Parisian cafes line the streets of the city.",                        # "Paris" only inside a word
    "army": "He served in the U.S. Army during the war.",
    "cafe": "Un café au lait, s'il vous plaît.",
}
QUESTIONS = {"dev-0": ["Paris"], "dev-1": ["U.S. Army"], "dev-2": ["nowhere to be found"]}


def test_answers_match_as_dpr_tokens_in_a_row():
    """DPR's SimpleTokenizer: runs of letters, digits and marks and single other characters, after NFD, uncased."""
    assert words("U.S. Army, 1889!") == ["u", ".", "s", ".", "army", ",", "1889", "!"]
    paris = [words("Paris")]
    assert has_answer(paris, PASSAGES["gold"]) and has_answer(paris, PASSAGES["dense"])
    assert not has_answer(paris, PASSAGES["near"])                          # a token, not a substring
    assert has_answer([words("u.s. army")], PASSAGES["army"])
    assert not has_answer([words("army during war")], PASSAGES["army"])    # in a row
    assert has_answer([words("CAFÉ")], PASSAGES["cafe"]) and not has_answer([words("cafe")], PASSAGES["cafe"])
    assert has_answer([words("nowhere"), words("Champ de Mars")], PASSAGES["gold"])   # any of the answers


@pytest.fixture
def qa(tmp_path: Path) -> dict[str, str]:
    """A passage collection with its lookup, three dev questions with answers, a presplit folds file, the qrels
    ir_datasets gives (only BM25's answer-bearing passage), and a dense run that finds another one."""
    docs = tmp_path / "docs.jsonl"
    lines = [(json.dumps({"id": doc, "contents": text}) + "\n").encode() for doc, text in PASSAGES.items()]
    docs.write_bytes(b"".join(lines))
    with lookup_writer(tmp_path / "lookup.sqlite", docs) as places:
        offset = 0
        for doc, line in zip(PASSAGES, lines):
            places.add(doc, offset, len(line))
            offset += len(line)
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps({"id": qid, "answers": answers}) + "\n"
                                                    for qid, answers in QUESTIONS.items()))
    (tmp_path / "folds.json").write_text(json.dumps({"splits": {"train": [], "valid": [], "test": sorted(QUESTIONS)}}))
    (tmp_path / "qrels.txt").write_text("dev-0 0 gold 1\ndev-1 0 army 1\n")
    (tmp_path / "dense.run").write_text("dev-0 Q0 near 1 3.0 dense\ndev-0 Q0 dense 2 2.0 dense\n"
                                        "dev-1 Q0 cafe 1 1.0 dense\ndev-1 Q0 near 2 0.5 dense\n")
    return {name: str(tmp_path / name) for name in ("docs.jsonl", "lookup.sqlite", "answers.jsonl", "folds.json",
                                                    "qrels.txt", "dense.run")} | {"dir": str(tmp_path)}


def test_a_run_is_judged_by_its_passages_answers_and_every_question_counts(qa):
    """The dense run's answer-bearing passage outside the qrels is a hit (the qrels would miss it); a question whose
    run holds no answer, or that the run does not reach, scores 0 and still counts (DPR divides by all questions)."""
    judgments = str(Path(qa["dir"]) / "dense.qrels")
    facts = judge_run(qa["dense.run"], qa["answers.jsonl"], qa["docs.jsonl"], qa["lookup.sqlite"], sorted(QUESTIONS),
                      None, judgments)
    assert Path(judgments).read_text().splitlines() == ["dev-0 0 dense 1", "dev-0 0 near 0", "dev-1 0 cafe 0",
                                                        "dev-1 0 near 0"]
    assert facts == {"questions": 3, "judged": 4, "answered_in_run": 1}
    evaluation = {"dense_metrics": ["Success@1", "Success@2"], "answers": "dpr"}
    by_answers = evaluation_summary(qa["dense.run"], judgments, qa["folds.json"], "1", evaluation)
    assert by_answers["queries"] == 3 and by_answers["missing_from_run"] == ["dev-2"]
    assert by_answers["per_query"]["dev-0"] == {"Success@1": 0.0, "Success@2": 1.0}
    assert by_answers["mean"] == {"Success@1": 0.0, "Success@2": pytest.approx(1 / 3)}
    by_qrels = evaluation_summary(qa["dense.run"], qa["qrels.txt"], qa["folds.json"], "1",
                                  {"dense_metrics": ["Success@2"]})
    assert by_qrels["mean"]["Success@2"] == 0.0 and by_qrels["queries"] == 2   # the bias the answers remove


def test_judging_refuses_a_test_question_without_answers(qa):
    Path(qa["answers.jsonl"]).write_text(json.dumps({"id": "dev-0", "answers": ["Paris"]}) + "\n")
    with pytest.raises(ValueError, match=r"no answers for test questions \['dev-1', 'dev-2'\]"):
        judge_run(qa["dense.run"], qa["answers.jsonl"], qa["docs.jsonl"], qa["lookup.sqlite"], sorted(QUESTIONS),
                  None, str(Path(qa["dir"]) / "out.qrels"))
    Path(qa["answers.jsonl"]).write_text('{"id": "dev-0", "answers": ["Paris"]}\n{"id": "dev-1"}\n')
    with pytest.raises(MalformedFileError, match=r"answers.jsonl, line 2: expected"):
        judge_run(qa["dense.run"], qa["answers.jsonl"], qa["docs.jsonl"], qa["lookup.sqlite"], sorted(QUESTIONS),
                  None, str(Path(qa["dir"]) / "out.qrels"))


class _Questions:
    """A dpr-w100 split's queries as ir_datasets gives them (its own query class), without its 20 GB download."""

    def __init__(self, irds_id: str) -> None:
        self.irds_id = irds_id

    def queries_cls(self):
        import ir_datasets          # here: its datasets take IR_DATASETS_HOME when it is first imported (irds_home)
        return ir_datasets.load("dpr-w100/natural-questions/dev").queries_cls()

    def queries_iter(self):
        query = self.queries_cls()
        if self.irds_id.endswith("/train"):                # numbered from 0 too, as NQ's splits are
            yield query("0", "when did the eiffel tower open", ("1889",))
            yield query("1", "how tall is the eiffel tower", ("330 metres",))
            return
        yield query("0", "who built the eiffel tower", ("Gustave Eiffel", "Eiffel's company"))
        yield query("1", "where is the eiffel tower", ("Paris",))


def test_the_answers_are_exported_with_the_questions_ids(monkeypatch, tmp_path, irds_home):
    spec = {"irds": "dpr-w100", "splits": {"train": "dpr-w100/natural-questions/train",
                                           "test": "dpr-w100/natural-questions/dev"}}
    monkeypatch.setattr(export, "_load", _Questions)
    monkeypatch.setattr(split_queries, "_load", _Questions)
    assert export.export_answers(spec, tmp_path / "answers.jsonl") == 4
    lines = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert lines[0] == {"id": "train-0", "answers": ["1889"]}
    assert lines[2:] == [{"id": "dev-0", "answers": ["Gustave Eiffel", "Eiffel's company"]},
                         {"id": "dev-1", "answers": ["Paris"]}]          # prefixed as the export prefixes the queries
    monkeypatch.undo()
    with pytest.raises(ActionableError, match="vaswani: its queries have no answers"):
        export.export_answers({"irds": "vaswani"}, tmp_path / "none.jsonl")
    assert not (tmp_path / "none.jsonl").exists()


def test_answer_matching_on_a_dataset_without_answers_is_refused_before_any_job(irds_home, tmp_path):
    message = one_line_error(tmp_path, "datasets: {vaswani: {answers: dpr}}")
    assert "config key datasets.vaswani.answers = 'dpr': vaswani's queries have no answers" in message
    assert "config key datasets.vaswani.answers = 'exact': allowed: dpr" in one_line_error(
        tmp_path, "datasets: {vaswani: {answers: exact}}")

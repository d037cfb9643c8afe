"""Open-domain QA retrieval judged as DPR judges it: a passage is relevant to a question when it holds one of the
question's answers as a token sequence (``has_answer`` with ``match_type="string"`` in DPR's
``dpr/data/qa_validation.py``), whatever any qrels say.

ir_datasets' ``dpr-w100`` qrels grade a passage 1 when it holds the answer *and* BM25 retrieved it, so a dense
retriever's answer-bearing passages outside BM25's pool would count as misses; DPR's top-k accuracy (Condenser
Table 3's "Top-20 / Top-100") counts them. A run's judgments are written as TREC qrels of the passages it retrieved
(1: holds an answer, 0: does not), and every question with answers counts in the mean (``Success@k`` over them is
DPR's top-k accuracy), so ir_measures, the audit and the significance tests read them as any qrels.

Matching follows DPR's ``SimpleTokenizer``: the text NFD-normalised, cut into runs of letters, digits and marks
and single other non-space characters, lower-cased; an answer matches where its tokens occur in a row. The text
matched is the passage as the pipeline exports it (the configured ``doc_fields`` joined: title and text for
``dpr-w100``); DPR matches the text alone, so an answer only in a passage's title counts here and not there (named
in the dense retrieval page)."""
from __future__ import annotations

import json
import os
import unicodedata
from typing import Iterable, Mapping, Sequence

import regex

from ..data import trec
from .. import progress_log
from ..data.docstore import DocStore
from ..files import atomic_write

# DPR's SimpleTokenizer: ALPHA_NUM and NON_WS
TOKEN = regex.compile(r"([\p{L}\p{N}\p{M}]+)|([^\p{Z}\p{C}])", flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)
QUERY_GROUP = 256          # questions whose passages are fetched together


def words(text: str) -> list[str]:
    """The lower-cased tokens of ``text`` as DPR's ``SimpleTokenizer`` cuts it (after NFD normalisation)."""
    return [match.group().lower() for match in TOKEN.finditer(unicodedata.normalize("NFD", text))]


def has_answer(answers: Iterable[Sequence[str]], text: str) -> bool:
    """Whether one of the tokenised ``answers`` (``words`` of each) occurs as a token sequence in ``text``."""
    tokens = words(text)
    for answer in answers:
        width = len(answer)
        if width and any(tokens[start:start + width] == list(answer) for start in range(len(tokens) - width + 1)):
            return True
    return False


def read_answers(path: str | os.PathLike) -> dict[str, list[str]]:
    """Question id → its answer strings, from the JSON lines ``peftir.data.export.export_answers`` writes."""
    answers = {}
    for where, line in trec.numbered_lines(path):
        try:
            record = json.loads(line)
            answers[str(record["id"])] = [str(answer) for answer in record["answers"]]
        except (ValueError, KeyError, TypeError) as problem:
            raise trec.MalformedFileError(f"{where}: expected {{\"id\": ..., \"answers\": [...]}} ({problem})") \
                from None
    return answers


def judge_run(run_path: str, answers_path: str, docs: str, lookup: str, test: Sequence[str], depth: int | None,
              output: str) -> dict:
    """The judgments of ``run_path``'s top ``depth`` passages (all when None) for the ``test`` questions, as TREC
    qrels (``output``): 1 where a passage holds an answer, 0 where not; a test question without answers is refused
    (DPR's accuracy counts every question). Returns what was judged."""
    answers = read_answers(answers_path)
    unanswered = [qid for qid in test if not answers.get(qid)]
    if unanswered:
        raise ValueError(f"{answers_path}: no answers for test questions {unanswered[:5]} "
                         f"({len(unanswered)} in all); DPR's accuracy needs every question's answers")
    tokenised = {qid: [words(answer) for answer in answers[qid]] for qid in test}
    judged: dict[str, dict[str, int]] = {}
    run = trec.read_run(run_path, test, depth)
    progress_log.start("judging by answers", len(test), "questions")
    with DocStore(docs, lookup) as store:
        for start in range(0, len(test), QUERY_GROUP):
            group = test[start:start + QUERY_GROUP]
            texts = store.texts(sorted({doc for qid in group for doc in run.get(qid, {})}))
            for qid in group:
                judged[qid] = {doc: int(has_answer(tokenised[qid], texts[doc])) for doc in run.get(qid, {})}
            progress_log.advance("judging by answers", len(group))
    progress_log.finish("judging by answers")
    trec.write_qrels(output, judged)
    return {"questions": len(test), "judged": sum(map(len, judged.values())),
            "answered_in_run": sum(1 for grades in judged.values() if any(grades.values()))}


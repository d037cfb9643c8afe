"""A cross-lingual reranker composed at test time from modules (Litschko et al., §2 and Table 1).

A system (``peftir.clir.contract.CLIR_SYSTEMS``) names the ranking module kind and which language modules go under it:

- adapters: ``query`` / ``doc`` = ``Stack(LA of that language, RA)``; ``split`` = ``Stack(Split(LA_q, LA_d), RA)``
  with the split at the first token of the document: the length of ``[CLS] q [SEP]``, counted per pair on its
  attended tokens (padding, also of token type 0, is not the query's), the pairs of a batch that share a boundary
  scored together (truncation can shorten a query next to a long document); ``invertible: false`` deletes the
  language adapter's invertible adapter first (−INV, test time only); ``none`` = the RA alone;
- SFTMs: θ0 + RM + LM of the query's language, the document's, or both (their sum);
- ``full``: monoBERT, fine-tuned as a whole, no language module.

The ``depth`` best pre-ranked documents are rescored (the logit; the sigmoid the authors' CrossEncoder applies
does not change the order) and put first; the rest of the pre-ranking follows unchanged, so MAP covers it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch
from adapters.composition import Split, Stack

from ..data import trec
from .. import progress_log
from ..data.folds import read_folds, rotation
from ..execution.passes import Encoder, Shape
from ..execution.seam import Execution, Spec
from .contract import composed_languages, pair_languages
from . import modular
from .sparse_fine_tuning import SparseFineTuning
from .language_module import SFTM_FILE
from ..provenance.ir_metadata import ir_metadata, write_ir_metadata
from ..retrieval.rescored import texts_of
from .ranking_module import FULL_MODEL_FILE
from .contract import CLIR_FOLD


class ComposedReranker:
    """The encoder with the system's modules in place, scoring one query's documents a batch at a time."""

    def __init__(self, backbone: str, system: dict, ranking_module: str, language_modules: dict[str, str],
                 query_language: str, doc_language: str, pooler: bool, execution: Execution) -> None:
        self.model, self.tokenizer = modular.load_encoder(backbone, with_mlm_head=False, pooler=pooler)
        self.execution = execution
        self.system, self.split = system, None
        kind, languages = system["module"], {"query": query_language, "doc": doc_language}
        if kind == "adapter":
            ranking = self.model.load_adapter(ranking_module, load_as=modular.RANKING_ADAPTER, with_head=True)
            self.model.active_head = ranking
            if system["language"] is None:
                self.model.set_active_adapters(ranking)
            else:
                names = {lang: self.model.load_adapter(language_modules[lang], with_head=False,
                                                       load_as=modular.language_adapter_name(lang))
                         for lang in composed_languages(system["language"], query_language, doc_language)}
                loaded = {role: names[lang] for role, lang in languages.items() if lang in names}
                if not system["invertible"]:
                    for name in set(loaded.values()):
                        self.model.base_model.delete_invertible_adapter(name)
                if system["language"] == "split":
                    self.split = (loaded["query"], loaded["doc"], ranking)
                else:
                    self.model.set_active_adapters(Stack(loaded[system["language"]], ranking))
        else:
            modular.add_ranking_head(self.model, pooler)
            if kind == "full":
                self.model.load_state_dict(torch.load(Path(ranking_module) / FULL_MODEL_FILE, map_location="cpu",
                                                      weights_only=True))
            else:
                # LM_both = LM_q + LM_d (once when both are one language)
                for lang in composed_languages(system["language"], query_language, doc_language):
                    SparseFineTuning.load(Path(language_modules[lang]) / SFTM_FILE).apply(self.model, with_abs=False)
                SparseFineTuning.load(Path(ranking_module) / SFTM_FILE).apply(self.model, with_abs=True)
        execution.place(self.model).eval()

    def scores(self, query: str, docs: list[str], max_len: int) -> list[float]:
        """The reranking logit of each (query, document) pair, cut to ``max_len`` tokens."""
        encoded = self.tokenizer([query] * len(docs), docs, truncation="longest_first", max_length=max_len,
                                 padding=True, return_tensors="pt")
        if self.split is None:
            return self._logits(encoded)
        boundaries, length = query_tokens(encoded), encoded["input_ids"].shape[1]
        la_query, la_doc, ranking = self.split
        scores = [0.0] * len(docs)
        for boundary in sorted(set(boundaries)):
            rows = [row for row, at in enumerate(boundaries) if at == boundary]
            self.model.set_active_adapters(Stack(Split(la_query, la_doc, splits=[boundary, length - boundary]),
                                                 ranking))
            for row, score in zip(rows, self._logits({key: value[rows] for key, value in encoded.items()})):
                scores[row] = score
        return scores

    def _logits(self, encoded: dict[str, torch.Tensor]) -> list[float]:
        with torch.no_grad():
            return modular.ranking_logits(self.model, self.execution.inputs(encoded), self.execution).tolist()


def query_tokens(encoded: dict[str, torch.Tensor]) -> list[int]:
    """Per pair, the tokens before its document (``[CLS] q [SEP]``): attended tokens of type 0."""
    return ((encoded["token_type_ids"] == 0) & (encoded["attention_mask"] == 1)).sum(dim=1).tolist()


def reranked(head: dict[str, float], prerank: dict[str, float]) -> dict[str, float]:
    """Rescored documents first (their scores as they are), then the rest of the pre-ranking in its order."""
    if not head:
        return dict(prerank)
    floor = min(head.values()) - 1.0
    rest = [doc for doc, _ in trec.ranked(prerank) if doc not in head]
    return {**head, **{doc: floor - position for position, doc in enumerate(rest)}}


def composed_scores(backbone: str, system: dict, ranking_module: str, language_modules: list[str], pair: str,
                    queries: str, docs: str, prerank: str, folds: str, settings: dict, execution: Spec, threads: int,
                    sample: Callable[[list[str]], list[str]] | None = None
                    ) -> tuple[dict[str, dict[str, float]], Execution]:
    """One system's scores of one language pair's test queries (or the ``sample`` of them the audit's rescoring
    draws): each query's pre-ranking with its ``depth`` best documents rescored first; and where they ran.
    ``language_modules``: those of ``contract.composed_languages`` for the system, in its order. With
    ``settings['translated_query']`` the ``queries`` are the user's translations into the documents' language (NMT +
    BM25's, which the pre-ranking ranked), so the query side is the documents' language."""
    query_language, doc_language = pair_languages(pair)
    if settings.get("translated_query"):
        query_language = doc_language
    modules = dict(zip(composed_languages(system["language"], query_language, doc_language), language_modules,
                       strict=True))
    reranker = ComposedReranker(backbone, system, ranking_module, modules, query_language, doc_language,
                                settings["head_pooler"], Execution.of(execution, threads))
    qids = rotation(read_folds(folds), CLIR_FOLD)["test"]
    if sample is not None:
        qids = sample(qids)
    topics = trec.read_topics(queries, set(qids))
    candidates = trec.read_run(prerank, set(qids))
    tops = {qid: [doc for doc, _ in trec.ranked(candidates.get(qid, {}))][:settings["depth"]] for qid in topics}
    texts = texts_of(docs, {doc for top in tops.values() for doc in top})
    rows = reranker.execution.rows_per_pass("rerank", settings["batch_size"], settings["depth"],
                                            Encoder.of(reranker.model.config, reranker.model),
                                            Shape(settings["max_len"], False))
    results = {}
    progress_log.start("reranking the queries", len(topics), "queries")
    for qid in sorted(topics):
        head = {}
        for start in range(0, len(tops[qid]), rows):
            batch = tops[qid][start:start + rows]
            head.update(zip(batch, reranker.scores(topics[qid], [texts[d] for d in batch], settings["max_len"])))
        results[qid] = reranked(head, candidates.get(qid, {}))
        progress_log.advance("reranking the queries")
    progress_log.finish("reranking the queries")
    return results, reranker.execution


def rerank_clir(backbone: str, system: dict, ranking_module: str, language_modules: list[str], pair: str,
                queries: str, docs: str, prerank: str, folds: str, settings: dict, execution: Spec, threads: int,
                run: str, metadata: str) -> None:
    """The ``rerank_clir`` rule: one system's run on one language pair's test queries (``composed_scores``), where
    ``execution`` says, with its ir_metadata."""
    results, placed = composed_scores(backbone, system, ranking_module, language_modules, pair, queries, docs,
                                      prerank, folds, settings, execution, threads)
    trec.write_run(run, results, tag=system["name"])
    write_ir_metadata(metadata, ir_metadata(system["name"], {"reranker": system, **settings,
                                                             "execution": placed.used()},
                                            {"name": f"modular-clir/{pair}"}))

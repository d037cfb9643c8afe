"""ICT pretraining (the Condenser paper's ICT rows): the query/context pairs, the loss, the gradient cache
and a short run whose checkpoint a retriever loads."""
from __future__ import annotations

import json
import random

import pytest
import torch
from torch.nn import functional as F
from transformers import BertForMaskedLM, BertModel

from peftir.data import pretraining_text
from peftir.data.pretraining_text import split_sentences
from peftir.execution.seam import CPU
from peftir.dense.pretraining.condenser import HEAD_FILE
from peftir.dense.pretraining.contrastive import inverse_cloze_loss
from peftir.dense.pretraining.ict import KEEP_RATE, InverseCloze, Unmasked, cloze_pairs
from peftir.dense.pretraining.retrieval_pretraining import _batches, pretrain, pretraining_update
from test_pretraining import PASSAGES, PRETRAINING, _lm
from tiny import tiny_backbone


def _passages(count: int) -> list[list[list[int]]]:
    """Passages of 2-4 sentences whose ids say where they come from: sentence j of passage i is [1000 i + j] * 2."""
    return [[[1000 * i + j] * 2 for j in range(2 + i % 3)] for i in range(count)]


def test_the_query_sentence_leaves_its_context_except_at_the_keep_rate():
    passages = _passages(2000)
    rows = cloze_pairs(passages, random.Random(7))
    assert len(rows) == 2 * len(passages)
    kept = 0
    for sentences, query, context in zip(passages, rows[0::2], rows[1::2]):
        assert query in sentences
        others = [piece for sentence in sentences if sentence != query for piece in sentence]
        whole = [piece for sentence in sentences for piece in sentence]
        assert context in (others, whole)                # the other sentences in order, or the whole passage
        kept += context == whole
    assert 0.08 * len(passages) < kept < 0.12 * len(passages) and KEEP_RATE == 0.1
    assert cloze_pairs(passages, random.Random(7)) == rows                                # seeded
    assert cloze_pairs(passages, random.Random(8)) != rows
    never = cloze_pairs(passages, random.Random(7), keep_rate=0.0)
    assert all(query[0] not in context for query, context in zip(never[0::2], never[1::2]))


def test_a_quoted_dpr_passage_still_splits_into_its_sentences():
    """psgs_w100.tsv quotes every passage and ir_datasets keeps the quotes; pysbd alone keeps a quotation whole."""
    passage = 'Aaron "Aaron is a prophet and the brother of ""Moses"". He is a high priest. The Bible relates."'
    assert split_sentences(passage) == ['Aaron "Aaron is a prophet and the brother of ""Moses"".',
                                        "He is a high priest.", 'The Bible relates."']


def test_ict_rows_are_cropped_and_padded_without_masks():
    tokenizer = tiny_backbone().tokenizer
    batch = Unmasked(tokenizer, max_len=5)([[7, 8, 9, 10], [11]])
    cls, sep, pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
    assert batch["input_ids"].tolist() == [[cls, 7, 8, 9, sep], [cls, 11, sep, pad, pad]]
    assert batch["attention_mask"].tolist() == [[1] * 5, [1, 1, 1, 0, 0]] and "labels" not in batch


def test_ict_batches_pair_each_drawn_passage_with_a_sentence_of_its_own(tmp_path):
    pieces = pretraining_text.Pieces.write(_passages(6), tmp_path / "pieces")
    batch = next(_batches("ict", pieces, 4, Unmasked(tiny_backbone().tokenizer, 16), seed=1))
    ids = batch["input_ids"]
    assert len(ids) == 8 and "labels" not in batch                                     # unmasked: no MLM
    assert [int(query[1]) // 1000 for query in ids[0::2]] == [int(context[1]) // 1000 for context in ids[1::2]]
    lengths = batch["attention_mask"].sum(1)
    assert lengths[1::2].sum() > lengths[0::2].sum()            # contexts: the rest of their passage, not one sentence


def test_each_query_must_find_its_own_context_among_the_contexts():
    cls = torch.randn(8, 4, generator=torch.Generator().manual_seed(0))
    queries, contexts = cls[0::2], cls[1::2]
    expected = F.cross_entropy(queries @ contexts.T, torch.arange(4))                  # targets on the diagonal
    assert torch.isclose(inverse_cloze_loss(cls), expected)
    matched = 10 * torch.eye(4).repeat_interleave(2, dim=0)            # query i equals context i, the others orthogonal
    assert inverse_cloze_loss(matched) < 1e-3
    assert inverse_cloze_loss(matched[[0, 3, 2, 1, 4, 5, 6, 7]]) > 10                  # two contexts swapped
    with pytest.raises(ValueError, match="even number of rows"):
        inverse_cloze_loss(cls[:3])


def test_the_gradient_cache_gives_ict_the_full_batch_gradient():
    """Chunks of 2 rows (one query, one context) with cached [CLS] gradients = one pass over the whole batch."""
    def build():
        return InverseCloze(_lm())

    ids = torch.randint(5, 60, (6, 7), generator=torch.Generator().manual_seed(1))
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    direct = build()
    full = inverse_cloze_loss(direct(**batch)[1])
    full.backward()
    cached = build()
    assert pretraining_update("ict", cached, CPU, chunk=2)(batch) == pytest.approx(full.item(), rel=1e-5)
    grads = [(name, a.grad, b.grad) for (name, a), (_, b) in zip(direct.named_parameters(), cached.named_parameters())
             if a.grad is not None]
    assert grads
    for name, a, b in grads:
        assert torch.allclose(a, b, atol=1e-5), name


def test_an_ict_run_writes_a_backbone_a_retriever_loads_and_trains_no_mlm(tmp_path):
    loaded = tiny_backbone()
    start = BertForMaskedLM(loaded.model.config)
    start.save_pretrained(tmp_path / "lm")
    loaded.tokenizer.save_pretrained(tmp_path / "lm")
    facts = pretrain("ict", str(tmp_path / "lm"), PASSAGES, PRETRAINING, str(tmp_path / "ict"),
                     str(tmp_path / "ict.json"), CPU)
    assert len(facts["losses"]) == 2 and facts["training_units"] == len(PASSAGES)     # each has ≥ 2 sentences
    assert json.loads((tmp_path / "ict.json").read_text())["objective"] == "ict"
    backbone = BertModel.from_pretrained(tmp_path / "ict", add_pooling_layer=False)
    assert not torch.equal(backbone.encoder.layer[0].attention.self.query.weight,
                           start.bert.encoder.layer[0].attention.self.query.weight)
    trained = BertForMaskedLM.from_pretrained(tmp_path / "ict")
    assert torch.equal(trained.cls.predictions.transform.dense.weight, start.cls.predictions.transform.dense.weight)
    assert not (tmp_path / "ict" / HEAD_FILE).exists()
    with pytest.raises(ValueError, match="only a coCondenser does"):
        pretrain("ict", str(tmp_path / "lm"), PASSAGES, PRETRAINING, str(tmp_path / "x"), str(tmp_path / "x.json"),
                 CPU, warm_start=str(tmp_path / "ict"))

"""Retrieval pretraining: the Condenser head, coCondenser's and RIP's contrastive loss, the gradient cache."""
from __future__ import annotations

import random

import pytest
import torch
from torch.nn import functional as F
from transformers import BertConfig, BertForMaskedLM, BertModel

from peftir.data import pretraining_text
from peftir.data.pretraining_text import split_sentences
from peftir.dense.pretraining.condenser import HEAD_FILE, Condenser
from peftir.execution.seam import CPU
from peftir.dense.pretraining.contrastive import pair_contrastive_loss
from peftir.dense.pretraining.retrieval_pretraining import Masking, _documents, pretrain, pretraining_update
from peftir.dense.pretraining.rip import RetrievalOrientedLM
from tiny import tiny_backbone

IGNORED = -100


def _lm(dropout: float = 0.0) -> BertForMaskedLM:
    torch.manual_seed(0)
    return BertForMaskedLM(BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=4, num_attention_heads=2,
                                      intermediate_size=32, max_position_embeddings=32, hidden_dropout_prob=dropout,
                                      attention_probs_dropout_prob=dropout))


def _batch(rows: int = 4, length: int = 7) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 60, (rows, length), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, -2:] = 0
    labels = torch.full_like(ids, IGNORED)
    labels[:, 2] = ids[:, 2]
    labels[:, 4] = ids[:, 4]
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def test_the_late_layers_reach_the_condenser_head_only_through_cls():
    """The head reads [late CLS; early tokens]: the head's loss has a gradient on the last layer's CLS only."""
    condenser = Condenser(_lm(), skip_from=2, head_layers=2, late_mlm=False)
    batch = _batch()
    kept = {}
    condenser.lm.bert.encoder.layer[-1].register_forward_hook(
        lambda module, args, output: kept.setdefault("late", output[0] if isinstance(output, tuple) else output).retain_grad())
    loss, cls = condenser(**batch)
    loss.backward()
    grad = kept["late"].grad
    assert grad[:, 0].abs().sum() > 0 and torch.all(grad[:, 1:] == 0)
    assert torch.equal(cls, kept["late"][:, 0])


def test_condenser_loss_is_head_mlm_plus_late_mlm_through_one_output_projection():
    lm, batch = _lm(), _batch()
    full = Condenser(lm, skip_from=2, head_layers=1, late_mlm=True)
    head_only = Condenser(lm, skip_from=2, head_layers=1, late_mlm=False)
    head_only.head.load_state_dict(full.head.state_dict())
    late = lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
    assert torch.isclose(full(**batch)[0], head_only(**batch)[0] + late, atol=1e-6)
    # the head has transformer layers only: its predictions go through the backbone's MLM head (lm.cls)
    assert {name.split(".")[2] for name, _ in full.head.named_parameters()} == {"attention", "intermediate", "output"}


def test_a_condenser_is_saved_as_a_plain_checkpoint_with_its_head_beside_it(tmp_path):
    loaded = tiny_backbone()
    lm = BertForMaskedLM(loaded.model.config)
    condenser = Condenser(lm, skip_from=1, head_layers=2)
    condenser.save(tmp_path, loaded.tokenizer)
    backbone = BertModel.from_pretrained(tmp_path, add_pooling_layer=False)
    assert torch.equal(backbone.embeddings.word_embeddings.weight, lm.bert.embeddings.word_embeddings.weight)
    warm = Condenser(BertForMaskedLM.from_pretrained(tmp_path), skip_from=1, head_layers=2)
    assert not torch.equal(warm.head.layers[0].output.dense.weight, condenser.head.layers[0].output.dense.weight)
    warm.load_head(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(warm.head.state_dict().values(), condenser.head.state_dict().values()))


def test_condenser_head_adds_two_bert_layers_to_bert_base():
    """Paper A.2: about 100M parameters in fine-tuning, about 120M with the pretraining head."""
    with torch.device("meta"):
        condenser = Condenser(BertForMaskedLM(BertConfig()), skip_from=6, head_layers=2)
    backbone = sum(p.numel() for p in condenser.lm.bert.parameters())
    head = sum(p.numel() for p in condenser.head.parameters())
    assert round(backbone / 1e6) == 109 and head == 2 * 7_087_872
    assert round((backbone + head) / 1e6) == 123          # "roughly 120 M"


def test_the_split_must_leave_early_and_late_layers():
    with pytest.raises(ValueError, match="skip_from = 4"):
        Condenser(_lm(), skip_from=4, head_layers=2)


def test_each_piece_must_find_its_partner_among_all_other_pieces():
    cls = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    scores = cls @ cls.T
    scores.fill_diagonal_(float("-inf"))
    expected = F.cross_entropy(scores, torch.tensor([1, 0, 3, 2]))
    assert torch.isclose(pair_contrastive_loss(cls), expected)
    assert pair_contrastive_loss(cls) < pair_contrastive_loss(cls[[0, 2, 1, 3]])
    with pytest.raises(ValueError, match="even number of rows"):
        pair_contrastive_loss(cls[:3])


@pytest.mark.parametrize("objective", ["rip", "cocondenser"])
def test_the_gradient_cache_gives_the_full_batch_gradient(objective):
    """Chunks of 2 rows with cached [CLS] gradients = one backward pass over the whole batch."""
    def build():
        lm = _lm()
        torch.manual_seed(3)
        return RetrievalOrientedLM(lm) if objective == "rip" else Condenser(lm, skip_from=2, head_layers=1)

    batch = _batch(rows=6)
    direct = build()
    mlm, cls = direct(**batch)
    (mlm + pair_contrastive_loss(cls)).backward()
    cached = build()
    loss = pretraining_update(objective, cached, CPU, chunk=2)(batch)
    chunk_mlm = sum(cached(**{k: v[i:i + 2] for k, v in batch.items()})[0].item() / 3 for i in (0, 2, 4))
    assert loss == pytest.approx(chunk_mlm + pair_contrastive_loss(cls).item(), rel=1e-5)
    # every row has two masked tokens, so the chunks' MLM means weighted by rows are the batch's mean
    for (name, a), (_, b) in zip(direct.named_parameters(), cached.named_parameters()):
        assert torch.allclose(a.grad, b.grad, atol=1e-5), name


def test_condenser_accumulates_the_full_batch_gradient_over_chunks():
    """Condenser's two MLM losses are means over the batch: chunks weighted by their rows give the same gradient."""
    def build():
        torch.manual_seed(3)
        return Condenser(_lm(), skip_from=2, head_layers=1)

    batch = _batch(rows=6)
    direct = build()
    full = direct(**batch)[0]
    full.backward()
    chunked = build()
    assert pretraining_update("condenser", chunked, CPU, chunk=4)(batch) == pytest.approx(full.item(), rel=1e-5)
    for (name, a), (_, b) in zip(direct.named_parameters(), chunked.named_parameters()):
        assert torch.allclose(a.grad, b.grad, atol=1e-5), name


TEXT = ("Dense retrieval encodes text. It needs structure, e.g. a CLS vector that aggregates meaning. "
        "Condenser pretrains it! Does it help at small scale?")


def test_sentences_are_packed_greedily_into_blocks_with_room_for_special_tokens():
    tokenizer = tiny_backbone().tokenizer
    assert len(split_sentences(TEXT)) == 4                       # "e.g." does not end a sentence
    lengths = [len(ids) for ids in tokenizer(split_sentences(TEXT), add_special_tokens=False)["input_ids"]]
    found = list(pretraining_text.blocks(tokenizer, [TEXT], max_len=2 + lengths[0] + lengths[1],
                                         short_probability=0.0, seed=1))
    assert [len(block) for block in found] == [lengths[0] + lengths[1], lengths[2] + lengths[3]]
    cropped = list(pretraining_text.blocks(tokenizer, [TEXT], max_len=5, short_probability=0.0, seed=1))
    assert all(len(block) <= 3 for block in cropped) and len(cropped) == 4        # long sentences cropped


@pytest.mark.parametrize("window", [None, 3])
def test_byte_level_bpe_units_are_cut_from_the_whole_texts_pieces_with_their_leading_space(tmp_path, window):
    """RoBERTa's tokenizer marks a word after a space (``ĠIt``): each sentence tokenised alone would start with the
    unmarked form. Cut from the whole text, the units' pieces are the text's pieces, in order, for sentences and for
    the word windows that stand in for them; every sentence after a space starts with a marked word."""
    from scale_model import _bpe_tokenizer

    tokenizer = _bpe_tokenizer(tmp_path / "bpe")
    texts = [TEXT, "retrieval of passages  with   two spaces\nand a line break in it", " leading space. Then"]
    for text in texts + ["lower case words  only as in vaswani"] * (window is not None):
        units = pretraining_text._tokenised(tokenizer, text, window)
        assert [piece for unit in units for piece in unit] == tokenizer(text, add_special_tokens=False)["input_ids"]
        assert len(units) > 1
    sentences = pretraining_text._tokenised(tokenizer, TEXT, window)
    assert len(sentences) == 4 and all(tokenizer.convert_ids_to_tokens(unit[0]).startswith("Ġ")
                                       for unit in sentences[1:])
    alone = tokenizer(split_sentences(TEXT)[1], add_special_tokens=False)["input_ids"]
    assert not tokenizer.convert_ids_to_tokens(alone[0]).startswith("Ġ")     # what tokenising it alone gave


def test_wordpiece_units_are_the_pieces_each_sentence_has_alone():
    """BERT's WordPiece splits at whitespace before it finds pieces: the whole-text cut gives every sentence the
    pieces it has tokenised alone, so no embedded table moves."""
    tokenizer = tiny_backbone().tokenizer
    for text in (TEXT, "Retrieval. Dense ones!  Then sparse ones?\nNone.",
                 '"Aaron is a prophet. He spoke, "for Moses", in Egypt." Then.'):     # DPR's quoted passages
        assert pretraining_text._tokenised(tokenizer, text) == tokenizer(split_sentences(text),
                                                                         add_special_tokens=False)["input_ids"]


def test_short_blocks_appear_at_the_configured_rate():
    """A document whose target is drawn short is split; at rate 0.5 about half as many as at rate 1."""
    tokenizer = tiny_backbone().tokenizer

    def split(rate: float) -> int:              # the whole text fits one long block: the blocks beyond one each
        return len(list(pretraining_text.blocks(tokenizer, [TEXT] * 400, max_len=64, short_probability=rate,
                                                seed=3))) - 400

    assert split(0.0) == 0
    always = split(1.0)
    assert always > 200 and 0.35 * always < split(0.5) < 0.65 * always


def test_rip_and_cocondenser_keep_texts_that_give_a_pair_and_sample_two_distinct_pieces():
    tokenizer = tiny_backbone().tokenizer
    passages = list(pretraining_text.sentences(tokenizer, [TEXT, "One sentence only."], max_len=32))
    assert len(passages) == 1 and len(passages[0]) == 4
    spans = list(pretraining_text.spans(tokenizer, [TEXT, "One sentence only."], max_len=12))
    assert len(spans) == 1 and len(spans[0]) >= 2
    rows = pretraining_text.pairs(passages * 3, random.Random(0))
    assert len(rows) == 6 and all(rows[i] != rows[i + 1] for i in range(0, 6, 2))


def test_a_cocondenser_on_sentences_keeps_the_passages_that_are_one_span():
    """MS MARCO's shape: a passage of two sentences, shorter than a span, gives coCondenser no pair of spans."""
    tokenizer = tiny_backbone().tokenizer
    passage = ["The cat sat on the mat. It was warm there."]
    settings = {"max_len": 64, "short_probability": 0.0, "seed": 1, "window_words": None}
    assert list(_documents("cocondenser", tokenizer, passage, settings)) == []                  # spans: dropped
    sentences = list(_documents("cocondenser", tokenizer, passage, {**settings, "units": "sentences"}))
    assert len(sentences) == 1 and len(sentences[0]) == 2                                       # DPTDR's pairs


def test_pieces_on_disk_give_back_every_document_and_row(tmp_path):
    documents = [[[1, 2, 3], [4]], [[5, 6]], [], [[70000, 8], [9], [10, 11, 12]]]
    pieces = pretraining_text.Pieces.write(iter(documents), tmp_path / "pieces")
    assert len(pieces) == 4 and pieces.rows == 6
    assert [pieces.document(i) for i in range(4)] == documents and pieces.row(3) == [70000, 8]
    reopened = pretraining_text.Pieces(tmp_path / "pieces")
    assert reopened.document(3) == documents[3]


PASSAGES = [TEXT, "Retrieval needs sentences. Each passage gives two of them. Spans come from blocks.",
            "Pretraining on vaswani abstracts. It is short. It runs on two cores."] * 2
PRETRAINING = {"max_len": 16, "short_probability": 0.1, "batch_size": 2, "chunk": 2, "steps": 2, "lr": 1e-4,
               "warmup_ratio": 0.1, "weight_decay": 0.01, "max_grad_norm": 1.0, "seed": 1, "skip_from": 1,
               "head_layers": 1, "late_mlm": True}


def test_masking_hides_whole_words_and_pads_with_an_attention_mask():
    tokenizer = tiny_backbone().tokenizer
    rows = [tokenizer("unbelievably tokenisation retrieval condenser", add_special_tokens=False)["input_ids"], [7592]]
    continuation = [piece.startswith("##") for piece in tokenizer.convert_ids_to_tokens(rows[0])]
    assert any(continuation)
    for seed in range(20):
        batch = Masking(tokenizer, seed)(rows)
        assert batch["attention_mask"].tolist()[1] == [1, 1, 1] + [0] * (len(rows[0]) - 1)
        labelled = (batch["labels"][0, 1:-1] != IGNORED).tolist()
        for index, is_continuation in enumerate(continuation):
            if is_continuation:                      # a word's pieces are masked together or not at all
                assert labelled[index] == labelled[index - 1]


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_whole_word_masks_are_the_released_collators_on_the_same_seed(tmp_path, family):
    """The masking rule is DataCollatorForWholeWordMask's (deprecated by transformers 4.57): while transformers
    still ships it, three batches in a row of rows of unequal lengths get the same inputs and labels from both, with
    BERT's WordPiece and RoBERTa's byte-level BPE (DPTDR's RoBERTa-large)."""
    import warnings

    import transformers

    from scale_model import _bpe_tokenizer

    if not hasattr(transformers, "DataCollatorForWholeWordMask"):
        pytest.skip("this transformers no longer has the collator to compare with")
    tokenizer = tiny_backbone().tokenizer if family == "bert" else _bpe_tokenizer(tmp_path / "bpe")
    text = "unbelievably tokenisation retrieval condenser pretrains dense encoders on passages of text"
    pieces = tokenizer(text, add_special_tokens=False)["input_ids"]
    batches = [[pieces, pieces[:5], pieces[3:]], [pieces[::-1], pieces[:9]], [pieces * 2, pieces[1:2]]]
    for seed in (1, 7, 2024):
        ours = Masking(tokenizer, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            released = transformers.DataCollatorForWholeWordMask(tokenizer, mlm_probability=0.15,
                                                                 return_tensors="pt", seed=seed)
        for rows in batches:
            wrapped = [[tokenizer.cls_token_id, *row, tokenizer.sep_token_id] for row in rows]
            expected, got = released([{"input_ids": ids} for ids in wrapped]), ours(rows)
            assert torch.equal(got["input_ids"], expected["input_ids"])
            assert torch.equal(got["labels"], expected["labels"])


def test_pretraining_runs_write_backbones_any_stage_can_load(tmp_path):
    loaded = tiny_backbone()
    BertForMaskedLM(loaded.model.config).save_pretrained(tmp_path / "lm")
    loaded.tokenizer.save_pretrained(tmp_path / "lm")
    runs = {}
    for objective in ("condenser", "cocondenser", "rip"):
        warm = str(runs["condenser"]) if objective == "cocondenser" else None
        runs[objective] = tmp_path / objective
        facts = pretrain(objective, str(tmp_path / "lm"), PASSAGES, PRETRAINING, str(runs[objective]),
                         str(tmp_path / f"{objective}.json"), CPU, warm_start=warm)
        assert len(facts["losses"]) == 2 and facts["training_units"] > 0
        assert BertModel.from_pretrained(runs[objective], add_pooling_layer=False).config.num_hidden_layers == 2
    assert (runs["condenser"] / HEAD_FILE).is_file() and not (runs["rip"] / HEAD_FILE).is_file()
    with pytest.raises(ValueError, match="starts from a Condenser run"):
        pretrain("cocondenser", str(tmp_path / "lm"), PASSAGES, PRETRAINING, str(tmp_path / "x"),
                 str(tmp_path / "x.json"), CPU)
    with pytest.raises(ValueError, match="fewer than a batch of 64"):
        pretrain("rip", str(tmp_path / "lm"), PASSAGES, {**PRETRAINING, "batch_size": 64}, str(tmp_path / "x"),
                 str(tmp_path / "x.json"), CPU)
    with pytest.raises(ValueError, match="one of condenser, cocondenser, rip, ict"):
        pretrain("orqa", str(tmp_path / "lm"), PASSAGES, PRETRAINING, str(tmp_path / "x"), str(tmp_path / "x.json"),
                 CPU)


def test_a_runs_units_reach_the_job(tmp_path):
    """``pretrain_run`` hands the run's ``units`` (from its params) to ``pretrain``: DPTDR's coCondenser trains on
    sentences and its Table 7 run on spans; without them every run fell back to its objective's default."""
    import json

    from peftir.dense.pretraining.retrieval_pretraining import pretrain_run

    loaded = tiny_backbone()
    BertForMaskedLM(loaded.model.config).save_pretrained(tmp_path / "lm")
    loaded.tokenizer.save_pretrained(tmp_path / "lm")
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "contents": text}) + "\n"
                                                 for i, text in enumerate(PASSAGES)))
    counted = {}
    for units in ("sentences", "spans"):
        spec = {**PRETRAINING, "objective": "rip", "units": units, "backbone": str(tmp_path / "lm"),
                "window_words": None, "execution": {"device": "cpu", "precision": "fp32"}}
        facts = pretrain_run(spec, str(tmp_path / "docs.jsonl"), str(tmp_path / units), str(tmp_path / f"{units}.json"),
                             1, start=str(tmp_path / "lm"))
        assert facts["units"] == units
        counted[units] = facts["training_units"]
    tokenizer = loaded.tokenizer
    assert counted == {units: len(list(_documents("rip", tokenizer, PASSAGES, {**PRETRAINING, "units": units,
                                                                                "window_words": None})))
                       for units in ("sentences", "spans")}
    assert counted["sentences"] != counted["spans"]


def test_cocondenser_spans_are_windows_of_every_document_not_the_prefixes_of_short_ones():
    """Spans cut each document's tokens end to end, regardless of sentences, with no short target: every passage long
    enough for two spans gives them (Condenser's short target, drawn for a tenth of the documents, left before only
    those with two: sentence prefixes cropped to it)."""
    tokenizer = tiny_backbone().tokenizer
    rng = random.Random(0)
    words = "the cat sat on a warm mat near an open door while rain fell over quiet streets all night".split()
    passages = [" ".join(rng.choice(words) for _ in range(rng.randint(50, 60))) + "." for _ in range(200)]
    documents = list(pretraining_text.spans(tokenizer, passages, max_len=34))
    assert len(documents) == 200 and all(2 <= len(document) <= 2 for document in documents)
    for passage, document in zip(passages, documents):
        ids = tokenizer(passage, add_special_tokens=False)["input_ids"]
        assert [len(span) for span in document][0] == 32 and len(document[-1]) >= 16
        assert sum(document, []) == ids[:sum(map(len, document))]       # contiguous, from the start

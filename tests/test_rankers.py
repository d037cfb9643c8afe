"""Rankers: input layout, pooling, MaxSim, chunking, and encode-once reranking."""
import math

import pytest
import torch

from peftir.semi_siamese import rankers
from peftir.models.inputs import RankingData
from peftir.semi_siamese.rerank import rerank

from tiny import Pretokenized, tiny_backbone, tiny_ranker


def test_equal_chunks_splits_into_ceil_len_over_max_equal_pieces():
    chunks = rankers.equal_chunks(list(range(10)), 4)
    assert len(chunks) == math.ceil(10 / 4)
    assert [len(c) for c in chunks] == [4, 4, 2]
    assert sum(chunks, []) == list(range(10))
    assert [len(c) for c in rankers.equal_chunks(list(range(9)), 4)] == [3, 3, 3]
    assert rankers.equal_chunks([], 4) == [[]]


def test_maxsim_sums_the_best_match_of_each_query_vector():
    query = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    docs = torch.tensor([[[0.6, 0.8], [1.0, 0.0]],      # best for q1: 1.0, for q2: 0.8
                         [[0.0, 1.0], [0.0, 0.0]]])     # best for q1: 0.0, for q2: 1.0
    assert torch.allclose(rankers.maxsim(query, docs), torch.tensor([1.8, 1.0]))


def test_twinbert_mean_pooling_excludes_cls_sep_and_padding():
    ranker = tiny_ranker("twinbert").eval()
    texts = [[2000, 2001, 2002], [2003]]
    with torch.no_grad():
        pooled = ranker.encode(texts, rankers.DOCUMENT)
        for text, vector in zip(texts, pooled):
            seq = torch.tensor([[ranker.cls_id, *text, ranker.sep_id]])
            states = ranker.bert(input_ids=seq).last_hidden_state[0]
            assert torch.allclose(vector, states[1:-1].mean(0), atol=1e-5)


def test_twinbert_cls_pooling_takes_the_cls_vector():
    ranker = tiny_ranker("twinbert", twinbert={"pooling": "cls"}).eval()
    with torch.no_grad():
        vector = ranker.encode([[2000, 2001]], rankers.QUERY)[0]
        states = ranker.bert(input_ids=torch.tensor([[ranker.cls_id, 2000, 2001, ranker.sep_id]])).last_hidden_state
    assert torch.allclose(vector, states[0, 0], atol=1e-5)


def test_twinbert_score_is_linear_of_residual_of_elementwise_max():
    ranker = tiny_ranker("twinbert").eval()
    q, d = torch.randn(32), torch.randn(32)
    x = torch.maximum(q, d)
    expected = ranker.out(x + ranker.residual(x))
    assert torch.allclose(ranker.score_encoded(q, [d]), expected)


def test_colbert_query_has_markers_and_mask_padding_and_unit_vectors():
    ranker = tiny_ranker("colbert").eval()
    seen = {}
    ranker.bert.register_forward_hook(lambda module, args, kwargs, out: seen.update(kwargs), with_kwargs=True)
    with torch.no_grad():
        vectors = ranker.encode([[2000, 2001]], rankers.QUERY)[0]
    ids = seen["input_ids"][0].tolist()
    q_marker = ranker.q_marker
    # [CLS] [Q] q [SEP], padded with [MASK] to max_query_len + 1 = 7 positions (the released code's 21 for 20)
    assert ids == [ranker.cls_id, q_marker, 2000, 2001, ranker.sep_id] + [ranker.mask_id] * 2
    assert seen["attention_mask"][0].tolist() == [1] * 5 + [0] * 2                # the [MASK]s are not attended
    assert vectors.shape == (7, 8)                                                 # ... but their vectors count
    assert torch.allclose(vectors.norm(dim=-1), torch.ones(7), atol=1e-5)
    with torch.no_grad():
        long = ranker.encode([list(range(2000, 2010))], rankers.QUERY)[0]
    assert seen["input_ids"][0].tolist() == [ranker.cls_id, q_marker, 2000, 2001, 2002, 2003, ranker.sep_id]
    assert long.shape == (7, 8)                                                    # cropped, not padded further


def test_colbert_query_augmentation_vectors_enter_the_score():
    ranker = tiny_ranker("colbert").eval()
    with torch.no_grad():
        query = ranker.encode([[2000, 2001]], rankers.QUERY)[0]
        docs = ranker.encode([[2002, 2003, 2004], [2000, 2005]], rankers.DOCUMENT)
        full = ranker.score_encoded(query, docs)
        without_masks = ranker.score_encoded(query[:5], docs)
    assert not torch.allclose(full, without_masks)        # the two [MASK] positions add their maxima
    assert torch.allclose(full, without_masks + ranker.score_encoded(query[5:], docs))   # MaxSim sums rows


def test_colbert_zeroes_punctuation_and_keeps_words():
    loaded = tiny_backbone()
    ranker = rankers.build("colbert", loaded.model, loaded.tokenizer,
                           {"max_query_len": 6, "max_doc_len": 40, "max_seq_len": 24,
                            "monobert": {"dropout": 0.1}, "twinbert": {"pooling": "mean"}, "colbert": {"dim": 8}})
    comma = loaded.tokenizer.convert_tokens_to_ids(",")
    with torch.no_grad():
        doc = ranker.encode([[2000, comma, 2001]], rankers.DOCUMENT)[0]
    norms = doc.norm(dim=-1)
    assert doc.shape[0] == 6                          # [CLS] [D] w , w [SEP]
    assert norms[3] == 0 and torch.all(norms[[0, 1, 2, 4, 5]] > 0.99)


def test_monobert_averages_cls_over_document_chunks():
    ranker = tiny_ranker("monobert").eval()
    query, doc = [2000, 2001], list(range(3000, 3030))   # 30 tokens, chunk length 24-6-3 = 15 → 2 chunks
    with torch.no_grad():
        score = ranker.score_pairs([query], [doc])
        cls = []
        for chunk in rankers.equal_chunks(doc, 15):
            seq = [ranker.cls_id, *query, ranker.sep_id, *chunk, ranker.sep_id]
            types = [0] * 4 + [1] * (len(chunk) + 1)
            cls.append(ranker.bert(input_ids=torch.tensor([seq]),
                                   token_type_ids=torch.tensor([types])).last_hidden_state[0, 0])
        expected = ranker.out(torch.stack(cls).mean(0))
    assert torch.allclose(score, expected, atol=1e-5)


def test_twinbert_chunks_documents_as_monobert_does_and_averages_their_tokens():
    """Released code: TwinBERT's document chunks are monoBERT's, max_seq_len − max_query_len − 3 (489 at 512)."""
    ranker = tiny_ranker("twinbert").eval()
    doc = list(range(3000, 3020))       # 20 tokens: chunk length 24-6-3 = 15 → 2 chunks (one of 24-2 would hold all)
    seen = []
    ranker.bert.register_forward_hook(lambda module, args, kwargs, out: seen.append(kwargs), with_kwargs=True)
    with torch.no_grad():
        vector = ranker.encode([doc], rankers.DOCUMENT)[0]
        states = [ranker.bert(input_ids=torch.tensor([[ranker.cls_id, *chunk, ranker.sep_id]])).last_hidden_state[0, 1:-1]
                  for chunk in rankers.equal_chunks(doc, 15)]
    assert [row.sum().item() for row in seen[0]["attention_mask"]] == [10 + 2, 10 + 2]
    assert torch.allclose(vector, torch.cat(states).mean(0), atol=1e-5)


@pytest.mark.parametrize("name", ["twinbert", "colbert", "monobert"])
def test_reranking_scores_equal_pairwise_scores(name):
    """Bi-encoders encode each document once; the scores must match scoring every pair directly."""
    ranker = tiny_ranker(name).eval()
    data = RankingData(queries=Pretokenized({"q1": [2000, 2001], "q2": [2002]}),
                       docs=Pretokenized({"a": [3000, 3001, 3002], "b": [3003], "c": list(range(3100, 3130))}),
                       candidates={"q1": {"a": 1.0, "b": 0.5, "c": 0.1}, "q2": {"b": 1.0, "c": 0.2}}, qrels={})
    run = rerank(ranker, data, ["q1", "q2"], batch_size=2)
    with torch.no_grad():
        for qid, docs in data.candidates.items():
            direct = ranker.score_pairs([data.queries[qid]] * len(docs), [data.docs[d] for d in docs])
            assert torch.allclose(torch.tensor([run[qid][d] for d in docs]), direct, atol=1e-5)


@pytest.mark.parametrize("name", ["twinbert", "monobert"])
def test_reranking_a_group_of_queries_at_a_time_gives_the_same_scores(name, monkeypatch):
    """Memory is bounded by scoring groups of queries; the grouping must not change a score."""
    import peftir.semi_siamese.rerank as reranking

    ranker = tiny_ranker(name).eval()
    data = RankingData(queries=Pretokenized({f"q{i}": [2000 + i] for i in range(5)}),
                       docs=Pretokenized({f"d{j}": list(range(3000 + j, 3003 + 7 * j)) for j in range(6)}),
                       candidates={f"q{i}": {f"d{j}": 1.0 for j in range(i, i + 3) if j < 6} for i in range(5)},
                       qrels={})
    qids = sorted(data.candidates)
    whole = rerank(ranker, data, qids, batch_size=4)
    assert list(reranking.query_groups(qids, data.candidates, 5)) == [["q0"], ["q1"], ["q2"], ["q3", "q4"]]
    monkeypatch.setattr(reranking, "GROUP_PAIRS", 5)
    grouped = rerank(ranker, data, qids, batch_size=4)
    assert grouped.keys() == whole.keys()
    for qid in qids:
        assert grouped[qid] == pytest.approx(whole[qid], abs=1e-5)


def test_colbert_batch_padding_never_enters_the_max():
    """A document's score must not depend on the longer documents it is batched with."""
    ranker = tiny_ranker("colbert")
    query = torch.tensor([[1.0, 0.0]])
    short = torch.tensor([[-1.0, 0.0]])                      # every similarity negative
    long = torch.tensor([[-1.0, 0.0], [-0.5, 0.0], [0.0, -1.0]])
    alone = ranker.score_encoded(query, [short])
    batched = ranker.score_encoded(query, [short, long])
    assert alone.item() == pytest.approx(-1.0)
    assert batched[0].item() == pytest.approx(-1.0) and batched[1].item() == pytest.approx(0.0)


@pytest.mark.parametrize("max_doc_len, kept", [(5, 5), (100, 24 - 3)])
def test_colbert_documents_stop_at_the_document_or_sequence_limit(max_doc_len, kept):
    ranker = tiny_ranker("colbert", max_doc_len=max_doc_len).eval()
    with torch.no_grad():
        (encoded,) = ranker.encode([list(range(3000, 3050))], rankers.DOCUMENT)
    assert encoded.shape[0] == 1 + 1 + kept + 1          # [CLS] [D] words [SEP]


def test_more_layers_than_the_backbone_has_are_refused_not_added_at_random():
    from peftir.errors import ActionableError
    from peftir.models.backbone import load
    from peftir.contract.backbones import EMBEDDED

    assert len(load(EMBEDDED, layers=6).model.encoder.layer) == 6
    with pytest.raises(ActionableError, match="backbone.layers = 7: embedded:all-MiniLM-L6-v2 has 6 pretrained"):
        load(EMBEDDED, layers=7)


QUERIES = [[2000, 2001], [2002], list(range(2003, 2012))]
POSITIVES = [[3000, 3001, 3002], list(range(3003, 3040)), [3040]]          # the second: two chunks in TwinBERT
NEGATIVES = [[3041], [3042, 3043], list(range(3044, 3070))]


ON_A_GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=ON_A_GPU)])
@pytest.mark.parametrize("name, method", [("twinbert", None), ("colbert", None), ("twinbert", "ss_lora"),
                                          ("colbert", "ss_prefix")])
def test_a_batch_of_candidates_scores_as_each_pair_alone(name, method, device):
    """Every score of ``score_candidates`` (the queries encoded once, the documents in one pass, MaxSim and the
    residual layer on batched tensors) equals the same pair scored alone: padding and batching change nothing,
    and role-aware (semi-Siamese) modules see each role; on the CPU and on a GPU."""
    from peftir.execution.seam import Execution
    from tiny import apply_method

    ranker = tiny_ranker(name)
    if method:
        apply_method(ranker, method)
    Execution(torch.device(device)).place(ranker).eval()
    with torch.no_grad():
        batched = ranker.score_candidates(QUERIES, [POSITIVES, NEGATIVES])
        alone = torch.tensor([[ranker.score_encoded(ranker.encode([query], rankers.QUERY)[0],
                                                    ranker.encode([doc], rankers.DOCUMENT)).item()
                               for doc in docs] for query, docs in zip(QUERIES, zip(POSITIVES, NEGATIVES))])
        pairs = ranker.score_pairs(QUERIES, NEGATIVES)
    batched, pairs = batched.cpu(), pairs.cpu()
    assert batched.shape == (3, 2)
    assert torch.allclose(batched, alone, atol=1e-5) and torch.allclose(pairs, alone[:, 1], atol=1e-5)


def test_monobert_scores_candidates_as_pairs():
    ranker = tiny_ranker("monobert").eval()
    with torch.no_grad():
        batched = ranker.score_candidates(QUERIES, [POSITIVES, NEGATIVES])
        pairs = torch.stack([ranker.score_pairs(QUERIES, POSITIVES), ranker.score_pairs(QUERIES, NEGATIVES)], dim=1)
    assert torch.allclose(batched, pairs, atol=1e-6)


def test_a_bi_encoder_encodes_each_query_of_a_batch_once():
    ranker = tiny_ranker("twinbert")
    calls = []
    ranker.bert.register_forward_hook(lambda module, args, out: calls.append(out.last_hidden_state.shape[0]))
    ranker.score_candidates(QUERIES, [POSITIVES, NEGATIVES])
    chunks = sum(len(rankers.equal_chunks(doc[:ranker.max_doc_len], ranker.chunk_len)) for doc in POSITIVES + NEGATIVES)
    assert calls == [3, chunks] and chunks == 9     # the queries, then the six documents' chunks: one pass a role

"""Dense retrieval parts: deep prompts through peft, the dual encoder's loss, training groups, faiss search."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch.nn import functional as F
from transformers import RobertaConfig, RobertaModel

from peftir.dense.deep_prompt import deep_prompts, prompt_values, trainable
from peftir.retrieval import faiss_index
from peftir.retrieval.dense_retriever import PASSAGE, QUERY, DenseRetriever, contrastive_loss
from peftir.execution import seam
from peftir.execution.seam import CPU, Execution
from peftir.training.passage_groups import PassageGroups
from peftir.dense.train import training_groups
from tiny import tiny_backbone

TEXTS = ["what is information retrieval", "dense passage retrieval with deep prompts"]


def _roberta_large() -> RobertaModel:
    """RoBERTa-large's shape (DPTDR's backbone) on the meta device: counted, never computed."""
    with torch.device("meta"):
        return RobertaModel(RobertaConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                          intermediate_size=4096, max_position_embeddings=514))


@pytest.mark.parametrize("length, paper", [(8, 393_216), (32, 1_572_864), (128, 6_291_456)])
def test_deep_prompt_parameters_are_the_papers_at_roberta_large(length, paper):
    """2 · 24 layers · 1024 · length prompt values: 0.11 % (8), 0.44 % (32), 1.8 % (128) of RoBERTa-large."""
    model = deep_prompts(_roberta_large(), length, reparametrise=False, mlp_hidden=512, dropout=0.1)
    assert prompt_values(model) == trainable(model) == paper
    assert round(100 * paper / 355_358_720, 2) == {8: 0.11, 32: 0.44, 128: 1.77}[length]


def test_reparametrised_prompts_train_an_mlp_but_keep_the_same_prompt_values():
    model = deep_prompts(_roberta_large(), 32, reparametrise=True, mlp_hidden=512, dropout=0.1)
    assert prompt_values(model) == 1_572_864
    assert trainable(model) == 32 * 1024 + (1024 * 512 + 512) + (512 * 2 * 24 * 1024 + 2 * 24 * 1024)


def test_deep_prompts_steer_a_frozen_encoder_and_only_the_prompts_learn():
    loaded = tiny_backbone()
    retriever = DenseRetriever(loaded.model, loaded.tokenizer, q_max_len=8, p_max_len=16)
    before = retriever.encode(TEXTS, PASSAGE).detach()
    frozen = {name: p.detach().clone() for name, p in loaded.model.named_parameters()}
    prompted = DenseRetriever(deep_prompts(loaded.model, 4, False, 16, dropout=0.0), loaded.tokenizer, 8, 16)
    after = prompted.encode(TEXTS, PASSAGE)
    assert after.shape == before.shape and not torch.allclose(after, before)
    after.sum().backward()
    learned = [name for name, p in prompted.named_parameters() if p.grad is not None]
    assert learned == ["encoder.prompt_encoder.default.embedding.weight"]
    assert all(torch.equal(p, frozen[name]) for name, p in loaded.model.named_parameters())


def test_prompt_dropout_acts_in_training_only():
    """P-tuning v2's dropout on the prompts, which peft's prefix tuning lacks, is added by the method."""
    loaded = tiny_backbone()
    retriever = DenseRetriever(deep_prompts(loaded.model, 4, False, 16, dropout=0.5), loaded.tokenizer, 8, 16)
    retriever.eval()
    assert torch.equal(retriever.encode(TEXTS, QUERY), retriever.encode(TEXTS, QUERY))
    retriever.train()
    torch.manual_seed(0)
    assert not torch.equal(retriever.encode(TEXTS, QUERY), retriever.encode(TEXTS, QUERY))


def test_a_prompt_longer_than_the_positions_is_refused():
    with pytest.raises(ValueError, match="prompt length 127"):
        deep_prompts(tiny_backbone().model, 127, False, 16, dropout=0.0)


def test_queries_and_passages_are_cropped_to_their_own_lengths():
    loaded = tiny_backbone()
    retriever = DenseRetriever(loaded.model, loaded.tokenizer, q_max_len=3, p_max_len=5)
    long = "one two three four five six seven eight"
    cropped = loaded.tokenizer("one two three", return_tensors="pt")      # [CLS] one two three [SEP]
    expected = loaded.model(input_ids=cropped["input_ids"][:, [0, 1, 2, 3, 4]]).last_hidden_state[:, 0]
    assert torch.allclose(retriever.encode([long], PASSAGE), expected, atol=1e-6)
    query = loaded.model(input_ids=cropped["input_ids"][:, [0, 1, 4]]).last_hidden_state[:, 0]   # [CLS] one [SEP]
    assert torch.allclose(retriever.encode([long], QUERY), query, atol=1e-6)


def test_contrastive_loss_scores_each_query_against_every_passage_of_the_batch():
    torch.manual_seed(0)
    queries, passages = torch.randn(2, 4), torch.randn(6, 4)      # groups of 3: positives at rows 0 and 3
    scores = queries @ passages.T
    expected = (-F.log_softmax(scores, dim=1)[0, 0] - F.log_softmax(scores, dim=1)[1, 3]) / 2
    assert torch.isclose(contrastive_loss(queries, passages), expected)
    with pytest.raises(ValueError, match="do not split into groups"):
        contrastive_loss(queries, passages[:5])


def test_groups_put_the_positive_first_and_walk_the_negative_pool_epoch_by_epoch():
    groups = PassageGroups(positives={"q1": ["d1", "d2"], "q2": ["d9"], "q3": []},
                           negatives={"q1": [f"n{i}" for i in range(7)], "q2": ["m1"], "q3": ["x"]},
                           passages=4, seed=1)
    assert groups.qids == ["q1", "q2"]                              # q3 has no positive
    rng = random.Random(0)
    first, second = groups.group("q1", 0, rng), groups.group("q1", 1, rng)
    assert first[1][0] == "d1" and second[1][0] == "d2"            # positives rotate
    assert len(set(first[1][1:])) == 3 and not set(first[1][1:]) & set(second[1][1:])   # next window
    assert groups.group("q2", 0, rng)[1] == ["d9", "m1", "m1", "m1"]                   # with replacement
    batches = groups.batches(batch_size=2)
    assert sorted(qid for qid, _ in next(batches)) == ["q1", "q2"]
    with pytest.raises(ValueError, match="only 2 training queries"):
        next(groups.batches(batch_size=3))


def test_dprs_recipe_trains_on_the_gold_passage_and_answer_free_bm25_negatives(tmp_path):
    """dpr-w100's grades: 2 the gold passage, 1 an answer-bearing BM25 passage, 0 a BM25 passage without the
    answer, −1 a random one. BM25's run also ranks an unjudged passage that may hold the answer."""
    qrels = {"q1": {"gold": 2, "has-answer": 1, "bm25-neg": 0, "random": -1}}
    (tmp_path / "bm25.run").write_text("q1 Q0 unjudged 1 9 bm25\nq1 Q0 has-answer 2 8 bm25\nq1 Q0 bm25-neg 3 7 bm25\n")
    settings = {"negatives": "bm25", "negative_depth": 10, "passages": 2}
    marco = training_groups(qrels, ["q1"], [str(tmp_path / "bm25.run")], settings, seed=1)
    assert marco.positives["q1"] == ["gold", "has-answer"] and sorted(marco.pool("q1")) == ["bm25-neg", "unjudged"]
    dpr = training_groups(qrels, ["q1"], [str(tmp_path / "bm25.run")],
                          {**settings, "positive_grade": 2, "judged_negatives": True}, seed=1)
    assert dpr.positives["q1"] == ["gold"] and dpr.pool("q1") == ["bm25-neg"]


def test_flat_search_over_shards_is_exact_and_survives_writing(tmp_path):
    rng = np.random.default_rng(0)
    vectors, queries = rng.normal(size=(50, 8)).astype(np.float32), rng.normal(size=(3, 8)).astype(np.float32)
    ids = [f"d{i}" for i in range(50)]
    shards = [(vectors[start:start + 20], ids[start:start + 20]) for start in (0, 20, 40)]     # 20, 20, 10
    facts = faiss_index.write(tmp_path / "index", iter(shards))
    assert facts == {"kind": "flat", "documents": 50, "dimension": 8, "shards": 3}
    assert sorted(path.name for path in (tmp_path / "index").iterdir()) == ["docid", "index.json", "shards"]
    index = faiss_index.read(tmp_path / "index", threads=1)
    scores = queries @ vectors.T
    for depth in (5, 15):                            # deeper than the last shard holds
        for row, hits in zip(scores, index.search(queries, depth=depth)):
            top = np.argsort(-row)[:depth]
            assert list(hits) == [ids[i] for i in top]
            assert np.allclose(list(hits.values()), row[top], atol=1e-5)
    assert len(index.search(queries, depth=80)[0]) == 50        # a depth beyond the corpus returns all of it


def test_exact_search_on_a_device_ranks_as_faiss_does_across_shards(tmp_path):
    rng = np.random.default_rng(2)
    vectors, queries = rng.normal(size=(50, 8)).astype(np.float32), rng.normal(size=(4, 8)).astype(np.float32)
    faiss_index.write(tmp_path / "index", [(vectors[s:s + 20], [f"d{i}" for i in range(s, min(s + 20, 50))])
                                          for s in (0, 20, 40)])
    index = faiss_index.read(tmp_path / "index", threads=1)
    for depth in (5, 15):                            # deeper than the last shard holds
        scores, rows = index.on_device(queries, depth)           # the GPU path, run here on the CPU
        expected = np.argsort(-(queries @ vectors.T), axis=1)[:, :depth]
        assert np.array_equal(rows, expected)
        assert np.allclose(scores, np.take_along_axis(queries @ vectors.T, expected, axis=1), atol=1e-5)


def test_exact_search_asks_for_full_fp32_products_whatever_the_process_set(tmp_path, monkeypatch):
    """TF32 is PyTorch's process-wide flag: a search after (or inside) a training step that turned it on must still
    compute its products in fp32, so the device path turns it off for its span and restores it after."""
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(30, 8)).astype(np.float32)
    faiss_index.write(tmp_path / "index", [(vectors, [f"d{i}" for i in range(30)])])
    index = faiss_index.read(tmp_path / "index", threads=1)
    seen, read = [], faiss_index.DenseIndex._vectors
    monkeypatch.setattr(faiss_index.DenseIndex, "_vectors",
                        lambda self, shard: seen.append(torch.backends.cuda.matmul.allow_tf32) or read(self, shard))
    with seam.tf32(True):
        index.on_device(vectors[:2], 3)
        assert torch.backends.cuda.matmul.allow_tf32
    assert seen == [False]


def _tf32_swaps() -> tuple[np.ndarray, np.ndarray]:
    """Queries and documents whose order TF32 reverses: document 0 scores 1 + 3·2⁻¹³ in fp32, document 1
    1 + 2⁻¹²; TF32 rounds document 0's first component to 1.0 (ten bits of mantissa) and keeps document 1's exact
    2⁻¹², so it ranks document 1 first. The rest score near 0; 4,096 documents and 64 queries so the GPU's
    library takes its tensor-core kernels."""
    rng = np.random.default_rng(4)
    documents = (rng.normal(size=(4096, 64)) * 1e-3).astype(np.float32)
    documents[0], documents[1] = 0, 0
    documents[0, 0], documents[1, 0], documents[1, 1] = 1 + 3 * 2 ** -13, 1.0, 2 ** -12
    queries = np.zeros((64, 64), dtype=np.float32)
    queries[:, :2] = 1.0
    return queries, documents


@pytest.mark.skipif(not torch.cuda.is_available(), reason="TF32 is a CUDA matrix-product mode")
def test_exact_search_on_a_gpu_ranks_as_fp32_when_a_training_step_left_tf32_on(tmp_path):
    queries, documents = _tf32_swaps()
    execution = Execution.of({"device": "cuda", "precision": "bf16"})     # the paper configurations' setting
    on_gpu = torch.from_numpy(queries).cuda(), torch.from_numpy(documents).cuda()
    with seam.tf32(True):
        if int((on_gpu[0] @ on_gpu[1].T).argmax(dim=1)[0]) != 1:
            pytest.skip("this GPU computes fp32 products without TF32 (before Ampere): nothing to tell apart")
    faiss_index.write(tmp_path / "index", [(documents, [f"d{i}" for i in range(len(documents))])])
    index = faiss_index.read(tmp_path / "index", threads=1, execution=execution)
    with seam.tf32(True):                     # what a training step in the same process sets
        hits = index.search(queries, 2)
    assert all(list(hit) == ["d0", "d1"] for hit in hits)


def test_an_approximate_index_reports_its_recall_against_exact_search(tmp_path):
    rng = np.random.default_rng(1)
    vectors, queries = rng.normal(size=(300, 16)).astype(np.float32), rng.normal(size=(20, 16)).astype(np.float32)
    ids = [f"d{i}" for i in range(300)]
    faiss_index.write(tmp_path / "hnsw", [(vectors[:150], ids[:150]), (vectors[150:], ids[150:])], kind="hnsw",
                      hnsw_m=4, ef_search=4)
    approximate = faiss_index.read(tmp_path / "hnsw", threads=1)
    exact = approximate.exact()
    assert approximate.graph.ntotal == 300 and exact is not approximate and exact.graph is None
    recall = faiss_index.recall_against_exact(approximate.search(queries, 10), exact.search(queries, 10))
    assert 0.0 < recall <= 1.0
    assert faiss_index.recall_against_exact(exact.search(queries, 10), exact.search(queries, 10)) == 1.0
    with pytest.raises(ValueError, match="one of flat, hnsw"):
        faiss_index.write(tmp_path / "ivf", [(vectors, ids)], kind="ivf")
    assert not (tmp_path / "ivf").exists()


RETRIEVER = {"q_max_len": 8, "p_max_len": 16, "passages": 3, "negative_depth": 8, "batch_size": 2, "chunk": 4,
             "steps": 3, "warmup_ratio": 0.1, "weight_decay": 0.0, "max_grad_norm": 1.0}
METHODS = {"ft": {"name": "ft", "lr": 1e-3},
           "dpt": {"name": "dpt", "lr": 1e-2, "length": 4, "reparametrise": False, "mlp_hidden": 16, "dropout": 0.1}}


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("backbone")
    loaded = tiny_backbone()
    loaded.model.save_pretrained(path)
    loaded.tokenizer.save_pretrained(path)
    return str(path)


@pytest.mark.parametrize("name", ["ft", "dpt"])
def test_a_trained_retriever_is_saved_and_loaded_back_as_it_encodes(name, tiny_checkpoint, english_relevance, tmp_path):
    from peftir.dense.train import load_retriever, train_retriever

    collection, run = english_relevance
    facts = train_retriever(tiny_checkpoint, None, METHODS[name], RETRIEVER, collection, [str(run)], ["q1", "q2"],
                            seed=1, execution=CPU, output=str(tmp_path / "retriever"),
                            summary=str(tmp_path / "facts.json"))
    assert len(facts["losses"]) == 3 and facts["training_queries"] == 2
    saved = sorted(path.name for path in (tmp_path / "retriever").iterdir())
    if name == "dpt":       # only the prompts are saved: the backbone stays where it is
        assert "adapter_config.json" in saved and "config.json" not in saved
        assert facts["kept_parameters"] == facts["trainable_parameters"] == 2 * 2 * 32 * 4
    else:
        assert facts["kept_parameters"] == facts["encoder_parameters"] == facts["trainable_parameters"]
    untrained = load_retriever(tiny_checkpoint, None, {"name": "ft"}, RETRIEVER, tiny_checkpoint)
    trained = load_retriever(tiny_checkpoint, None, METHODS[name], RETRIEVER, str(tmp_path / "retriever"))
    with torch.no_grad():
        moved = trained.encode(TEXTS, PASSAGE) - untrained.encode(TEXTS, PASSAGE)
    assert moved.abs().max() > 1e-4                      # training changed what it encodes, and that was saved


def test_encoding_a_corpus_in_length_sorted_batches_keeps_each_texts_vector_in_place():
    from peftir.retrieval.dense_retriever import encode_all

    loaded = tiny_backbone()
    texts = ["a", "a much longer text about dense retrieval and search", "mid length text", "b c"]
    for encoder in (loaded.model, deep_prompts(tiny_backbone().model, 4, False, 16, dropout=0.1)):
        retriever = DenseRetriever(encoder, loaded.tokenizer, q_max_len=8, p_max_len=16).eval()
        with torch.no_grad():
            one_by_one = torch.cat([retriever.encode([text], PASSAGE) for text in texts]).numpy()
        assert np.allclose(encode_all(retriever, texts, PASSAGE, batch_size=2), one_by_one, atol=1e-5)


def test_negative_pools_join_the_runs_tops_without_the_judged_relevant(tmp_path):
    from peftir.training.passage_groups import NegativePools

    (tmp_path / "bm25").write_text("q1 Q0 d1 1 3 bm25\nq1 Q0 d2 2 2 bm25\nq1 Q0 d3 3 1 bm25\n"
                                   "q3 Q0 d1 1 3 bm25\nq9 Q0 d7 1 1 bm25\n")
    (tmp_path / "dense").write_text("q1 Q0 d4 1 9 dpt\nq1 Q0 d1 2 8 dpt\nq1 Q0 d5 3 7 dpt\n")
    pools = NegativePools([str(tmp_path / "bm25"), str(tmp_path / "dense")], {"q1": {"d1": 1, "d2": 0},
                                                                             "q3": {"d1": 1}}, ["q1", "q2", "q3"], depth=2)
    # d1 is relevant; d3 and d5 lie below depth 2; q3's only candidate is relevant; q9 was not asked for
    assert dict(pools) == {"q1": ["d2", "d4"]} and "q3" not in pools and "q9" not in pools


def test_a_run_index_reads_one_query_back_and_refuses_a_query_split_in_two(tmp_path):
    from peftir.data.run_index import RunIndex
    from peftir.data.trec import MalformedFileError

    (tmp_path / "run").write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 5 t\nq2 Q0 c 1 1 t\n\nq3 Q0 d 1 1 t\n")
    seen = {}
    index = RunIndex(tmp_path / "run", {"q1", "q3"}, visit=lambda qid, documents: seen.setdefault(qid, documents))
    assert seen == {"q1": [("b", 5.0), ("a", 3.0)], "q3": [("d", 1.0)]} and "q2" not in index
    assert index.top("q1", 1) == [("b", 5.0)] and index.top("q3") == [("d", 1.0)] and index.top("q2") == []
    (tmp_path / "split").write_text("q1 Q0 a 1 3 t\nq2 Q0 c 1 1 t\nq1 Q0 b 2 5 t\n")
    with pytest.raises(MalformedFileError, match="query q1 are not together"):
        RunIndex(tmp_path / "split")


def test_a_reparametrised_prompt_row_counts_the_prompts_it_keeps_and_names_what_trained(tmp_path):
    """DPTDR Table 5's MLP row: the MLP that generates the prompts is thrown away after training, so the row counts
    the 1.6M prompt values kept (the paper's 0.1-0.4 % convention, as the Semi-Siamese tables count prefixes), and
    says what trained beside them."""
    import json

    from peftir.reports.retrieval_tables import _printed_count, _trained

    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"trainable_parameters": 25_772_544, "kept_parameters": 1_572_864,
                                   "encoder_parameters": 355_359_744 + 25_772_544}))
    assert _trained(str(summary)) == (1_572_864, None, 25_772_544)
    assert _printed_count(*_trained(str(summary))) == "1.6M; 26M trained"
    summary.write_text(json.dumps({"trainable_parameters": 1_572_864, "kept_parameters": 1_572_864}))
    assert _printed_count(*_trained(str(summary))) == "1.6M"

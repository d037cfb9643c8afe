"""monoBERT, TwinBERT and ColBERT on a shared BERT encoder (REFERENCE.md §1); names from
``peftir.semi_siamese.contract``.

Every ranker scores (query, document) pairs given as lists of word-piece ids
(no special tokens), and a query against several candidates each
(``score_candidates``: a training triple's positive and negative), every score of
a call from one pass through the encoder per role, without a Python loop over
pairs: a bi-encoder encodes each query of the call once. Bi-encoders also expose
``encode`` and ``score_encoded`` so reranking encodes each candidate document
once, not once per query. Encoding goes through ``Ranker.encoder(role=...)`` so
that methods which treat queries and documents differently (semi-Siamese) can
switch their modules by role; Siamese methods ignore the role.

Inputs are built on the host once per call (``pad``, ``owners``) and handed to
the device by the execution, so a step queues its kernels without waiting.
"""
from __future__ import annotations

import math
import string
from typing import Any, Callable, Sequence

import torch
from torch import Tensor, nn
from transformers.models.bert.modeling_bert import BertModel

from ..execution.seam import CPU
from .contract import RANKERS

Ids = Sequence[int]
QUERY, DOCUMENT, PAIR = "query", "document", "pair"
ROLES = (QUERY, DOCUMENT)          # what a bi-encoder encodes separately


def equal_chunks(ids: Ids, max_len: int) -> list[list[int]]:
    """Split into ceil(len/max_len) chunks of equal size (CEDR's sub-batching); one empty chunk for an empty text."""
    ids = list(ids)
    count = max(1, math.ceil(len(ids) / max_len))
    size = max(1, math.ceil(len(ids) / count))
    return [ids[i * size:(i + 1) * size] for i in range(count)]


def pad(seqs: list[list[int]], pad_id: int, types: list[list[int]] | None = None,
        attended: list[int] | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Right-pad to a batch: input ids, attention mask (1 on the first ``attended[row]`` positions of each row, the
    whole sequence by default), token type ids; each made by one tensor call from lists padded on the host."""
    width = max(len(s) for s in seqs)
    lengths = [len(seq) for seq in seqs]
    ids = torch.tensor([[*seq, *[pad_id] * (width - len(seq))] for seq in seqs], dtype=torch.long)
    mask = torch.tensor([[1] * n + [0] * (width - n) for n in (attended or lengths)], dtype=torch.long)
    token_types = torch.tensor([[*row, *[0] * (width - len(row))] for row in types] if types is not None
                               else [[0] * width] * len(seqs), dtype=torch.long)
    return ids, mask, token_types


def owners(owner: list[int], count: int) -> tuple[Tensor, Tensor]:
    """The index of each sequence's owner (document chunks → document) and each owner's number of sequences, made
    on the host: counted on a GPU (``torch.bincount``), the number of owners would have to be read back first."""
    index = torch.tensor(owner, dtype=torch.long)
    return index, torch.bincount(index, minlength=count)


def chunk_mean(vectors: Tensor, index: Tensor, counts: Tensor) -> Tensor:
    """Average rows of ``vectors`` that belong to the same owner (``owners``' index and counts, on their device)."""
    sums = torch.zeros((len(counts), vectors.shape[-1]), dtype=vectors.dtype,
                       device=vectors.device).index_add(0, index, vectors)
    return sums / counts.unsqueeze(1).to(vectors.dtype)


class Ranker(nn.Module):
    """Common parts: the encoder, special token ids, length limits and role hooks."""

    bi_encoder = False

    def __init__(self, bert: BertModel, tokenizer, max_query_len: int, max_doc_len: int,
                 max_seq_len: int) -> None:
        super().__init__()
        self.bert = bert
        self.hidden = bert.config.hidden_size
        self.max_query_len, self.max_doc_len, self.max_seq_len = max_query_len, max_doc_len, max_seq_len
        self.cls_id, self.sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
        self.pad_id, self.mask_id = tokenizer.pad_token_id, tokenizer.mask_token_id
        self.role_hooks: list[Callable[[str], None]] = []
        self.peft = nn.ModuleDict()   # modules a method adds beside BERT (prompts, prefixes)
        self.execution = CPU          # where it runs and in which precision: ``Execution.place`` sets it

    def batch(self, seqs: list[list[int]], types: list[list[int]] | None = None,
              attended: list[int] | None = None, owner: list[int] | None = None,
              count: int = 0) -> tuple[Tensor, ...]:
        """Padded ids, mask and token types (``pad``), and with ``owner`` the chunks' ``owners`` among ``count``
        texts, on the ranker's device through its execution (one handing-over per call)."""
        made = pad(seqs, self.pad_id, types, attended) + (owners(owner, count) if owner is not None else ())
        return self.execution.inputs(made)

    @property
    def chunk_len(self) -> int:
        """Document tokens per chunk: what is left of a sequence beside a full query, ``[CLS]`` and two
        ``[SEP]`` (489 at 512 / 20, CEDR's and the released code's), for TwinBERT's documents too."""
        return self.max_seq_len - self.max_query_len - 3

    @property
    def chunks_per_document(self) -> int:
        """Chunks of the longest document (``max_doc_len`` tokens, ``equal_chunks`` of at most ``chunk_len``)."""
        return max(1, math.ceil(self.max_doc_len / self.chunk_len))

    def tokens_per_text(self, role: str) -> int:
        """Most tokens one query, document or (monoBERT) pair puts through the encoder: what a pass's memory is
        sized by (``peftir.execution.passes``)."""
        raise NotImplementedError

    def triple_tokens(self) -> int:
        """Most tokens one training triple (query, positive, negative) puts through the encoder."""
        if self.bi_encoder:
            return self.tokens_per_text(QUERY) + 2 * self.tokens_per_text(DOCUMENT)
        return 2 * self.tokens_per_text(PAIR)

    def head_parameters(self) -> list[nn.Parameter]:
        """Ranker-specific layers on top of BERT: always trained, at the ranker learning rate."""
        return [p for name, p in self.named_parameters() if not name.startswith(("bert.", "peft."))]

    def encoder(self, ids: Tensor, mask: Tensor, token_types: Tensor, role: str) -> Tensor:
        """Last-layer hidden states, after telling role-aware methods which input this is.

        The encoder (and the methods' modules inside it) runs in the execution's precision (bf16 on GPUs); its
        output and everything after it (pooling, heads, MaxSim, the loss) are fp32, so a score keeps
        the resolution that ranking needs (bf16 holds three significant digits: ties everywhere).
        """
        for hook in self.role_hooks:
            hook(role)
        with self.execution.precision():
            states = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=token_types).last_hidden_state
        return states.float()

    def score_pairs(self, queries: list[Ids], docs: list[Ids]) -> Tensor:
        raise NotImplementedError

    def score_candidates(self, queries: list[Ids], candidates: list[list[Ids]]) -> Tensor:
        """Scores [len(queries), len(candidates)]: ``candidates[j][i]`` is the ``j``-th document scored for query
        ``i`` (training: ``[positives, negatives]``)."""
        raise NotImplementedError


class MonoBERT(Ranker):
    """Cross-encoder: [CLS] q [SEP] chunk [SEP]; CLS averaged over chunks → dropout → linear."""

    def __init__(self, *args, dropout: float = 0.1, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(self.hidden, 1)

    def score_pairs(self, queries: list[Ids], docs: list[Ids]) -> Tensor:
        seqs, types, owner = [], [], []
        for index, (query, doc) in enumerate(zip(queries, docs)):
            query = list(query[:self.max_query_len])
            for chunk in equal_chunks(doc[:self.max_doc_len], self.chunk_len):
                seqs.append([self.cls_id, *query, self.sep_id, *chunk, self.sep_id])
                types.append([0] * (len(query) + 2) + [1] * (len(chunk) + 1))
                owner.append(index)
        ids, mask, token_types, index, counts = self.batch(seqs, types, owner=owner, count=len(queries))
        cls = self.encoder(ids, mask, token_types, PAIR)[:, 0]
        return self.out(self.dropout(chunk_mean(cls, index, counts))).squeeze(-1)

    def score_candidates(self, queries: list[Ids], candidates: list[list[Ids]]) -> Tensor:
        """Every (query, candidate) pair in one call of ``score_pairs``: the query is part of each pair's input."""
        scores = self.score_pairs(list(queries) * len(candidates), [doc for column in candidates for doc in column])
        return scores.view(len(candidates), len(queries)).T

    def tokens_per_text(self, role: str) -> int:
        return self.chunks_per_document * self.max_seq_len


class BiEncoder(Ranker):
    """Queries and documents encoded separately; subclasses define the representation (``represent``: the texts of
    one role in one pass) and the score (``score_represented``: every query against its candidates at once)."""

    bi_encoder = True

    def represent(self, texts: list[Ids], role: str) -> Any:
        raise NotImplementedError

    def score_represented(self, queries: Any, docs: Any, columns: int) -> Tensor:
        """Scores [queries, columns] from ``represent``'s queries and its ``columns × queries`` documents (column
        after column)."""
        raise NotImplementedError

    def encode(self, texts: list[Ids], role: str) -> list[Tensor]:
        raise NotImplementedError

    def score_encoded(self, query: Tensor, docs: list[Tensor]) -> Tensor:
        raise NotImplementedError

    def score_candidates(self, queries: list[Ids], candidates: list[list[Ids]]) -> Tensor:
        """Each query encoded once, all candidates in one pass, every score from batched tensors."""
        represented = self.represent(queries, QUERY)
        docs = self.represent([doc for column in candidates for doc in column], DOCUMENT)
        return self.score_represented(represented, docs, len(candidates))

    def score_pairs(self, queries: list[Ids], docs: list[Ids]) -> Tensor:
        return self.score_candidates(queries, [docs])[:, 0]


class TwinBERT(BiEncoder):
    """Pooled query and document vectors, element-wise max, residual layer, linear score.

    Documents are chunked as monoBERT's are (``chunk_len``), as in the released code. Mean pooling
    averages the real tokens only (CLS, SEP and padding left out): the released code averages over
    the padded width too, which makes a document's vector depend on the longest text it is batched
    with; a named deviation (README).
    """

    def __init__(self, *args, pooling: str = "mean", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if pooling not in ("mean", "cls"):
            raise ValueError(f"TwinBERT pooling must be 'mean' or 'cls', got {pooling!r}")
        self.pooling = pooling
        self.residual = nn.Linear(self.hidden, self.hidden)
        self.out = nn.Linear(self.hidden, 1)

    def represent(self, texts: list[Ids], role: str) -> Tensor:
        """The texts' pooled vectors [len(texts), hidden], a document's averaged over its chunks."""
        limit = self.max_query_len if role == QUERY else self.max_doc_len
        seqs, owner = [], []
        for index, text in enumerate(texts):
            pieces = [list(text[:limit])] if role == QUERY else equal_chunks(text[:limit], self.chunk_len)
            for piece in pieces:
                seqs.append([self.cls_id, *piece, self.sep_id])
                owner.append(index)
        ids, mask, token_types, index, counts = self.batch(seqs, owner=owner, count=len(texts))
        states = self.encoder(ids, mask, token_types, role)
        if self.pooling == "cls":
            return chunk_mean(states[:, 0], index, counts)
        content = mask.clone()
        content[:, 0] = 0                                          # CLS
        content[torch.arange(len(seqs), device=mask.device), mask.sum(1) - 1] = 0      # SEP
        sums = chunk_mean((states * content.unsqueeze(-1)).sum(1), index, counts)
        tokens = chunk_mean(content.sum(1, keepdim=True).to(states.dtype), index, counts)
        return sums / tokens.clamp(min=1)

    def encode(self, texts: list[Ids], role: str) -> list[Tensor]:
        return list(self.represent(texts, role))

    def score(self, query: Tensor, docs: Tensor) -> Tensor:
        """Element-wise max of the query's and each document's vector (``docs`` [..., hidden], broadcast), then the
        residual layer and the linear score."""
        combined = torch.maximum(query, docs)
        return self.out(combined + self.residual(combined)).squeeze(-1)

    def score_represented(self, queries: Tensor, docs: Tensor, columns: int) -> Tensor:
        return self.score(queries.unsqueeze(1), docs.view(columns, len(queries), -1).transpose(0, 1))

    def score_encoded(self, query: Tensor, docs: list[Tensor]) -> Tensor:
        return self.score(query.unsqueeze(0), torch.stack(docs))

    def tokens_per_text(self, role: str) -> int:
        if role == QUERY:
            return self.max_query_len + 2
        return self.chunks_per_document * (self.chunk_len + 2)


class ColBERT(BiEncoder):
    """Late interaction: [Q]/[D] markers, [MASK]-padded queries, 128-d normalised vectors, MaxSim.

    A query is ``[CLS] [Q] q [SEP]`` padded with ``[MASK]`` to ``max_query_len + 1`` positions (the
    released code's 21 for a query length of 20, the query's own tokens cropped to fit); the masks
    are not attended to (attention mask 0) but their output vectors take part in MaxSim: ColBERT's
    query augmentation, as in the released code (REFERENCE.md §1).
    """

    def __init__(self, *args, tokenizer=None, dim: int = 128, **kwargs) -> None:
        super().__init__(*args, tokenizer=tokenizer, **kwargs)
        self.q_marker, self.d_marker = tokenizer.convert_tokens_to_ids(["[unused0]", "[unused1]"])
        skip = set(tokenizer.convert_tokens_to_ids(list(string.punctuation))) - {tokenizer.unk_token_id}
        # placed with the model: looked up on its device, not copied there at every call
        self.register_buffer("skip", torch.tensor(sorted(skip), dtype=torch.long), persistent=False)
        self.project = nn.Linear(self.hidden, dim, bias=False)

    def _vectors(self, texts: list[Ids], role: str) -> tuple[Tensor, Tensor, list[int]]:
        """Normalised 128-d vectors of every position [N, width, dim], the positions MaxSim may use [N, width]
        (all of a query's, [MASK] padding included; a document's own, punctuation zeroed) and their counts."""
        if role == QUERY:
            width = self.max_query_len + 1
            attended = [[self.cls_id, self.q_marker, *q[:width - 3], self.sep_id] for q in texts]
            seqs = [seq + [self.mask_id] * (width - len(seq)) for seq in attended]
        else:
            limit = min(self.max_doc_len, self.max_seq_len - 3)   # no chunking: one sequence per document
            seqs = [[self.cls_id, self.d_marker, *d[:limit], self.sep_id] for d in texts]
        # the [MASK] padding of a query is not attended to
        ids, mask, token_types = self.batch(seqs, attended=[len(seq) for seq in attended] if role == QUERY else None)
        vectors = nn.functional.normalize(self.project(self.encoder(ids, mask, token_types, role)), dim=-1)
        if role == QUERY:
            return vectors, torch.ones_like(mask, dtype=torch.bool), [len(seq) for seq in seqs]
        keep = mask.bool() & ~torch.isin(ids, self.skip)
        return vectors * keep.unsqueeze(-1), mask.bool(), [len(seq) for seq in seqs]

    def represent(self, texts: list[Ids], role: str) -> tuple[Tensor, Tensor]:
        vectors, valid, _ = self._vectors(texts, role)
        return vectors, valid

    def encode(self, texts: list[Ids], role: str) -> list[Tensor]:
        vectors, _, lengths = self._vectors(texts, role)
        return [vectors[row, :length] for row, length in enumerate(lengths)]

    def score_represented(self, queries: tuple[Tensor, Tensor], docs: tuple[Tensor, Tensor], columns: int) -> Tensor:
        (query, _), (vectors, valid) = queries, docs
        rows = len(query)
        return maxsim(query.unsqueeze(1), vectors.view(columns, rows, *vectors.shape[1:]).transpose(0, 1),
                      valid.view(columns, rows, -1).transpose(0, 1))

    def score_encoded(self, query: Tensor, docs: list[Tensor]) -> Tensor:
        width = max(d.shape[0] for d in docs)
        padded = torch.stack([nn.functional.pad(d, (0, 0, 0, width - d.shape[0])) for d in docs])
        lengths = torch.tensor([d.shape[0] for d in docs], device=padded.device)
        return maxsim(query, padded, torch.arange(width, device=padded.device) < lengths.unsqueeze(1))

    def tokens_per_text(self, role: str) -> int:
        if role == QUERY:
            return self.max_query_len + 1
        return min(self.max_doc_len, self.max_seq_len - 3) + 3


def maxsim(query: Tensor, docs: Tensor, valid: Tensor | None = None) -> Tensor:
    """Σ over query vectors of the max similarity over each document's vectors: [..., Lq, d] × [..., Ld, d] → [...],
    broadcast (one query [Lq, d] against [N, Ld, d] documents; a batch's queries [B, 1, Lq, d] against their
    candidates [B, k, Ld, d]).

    ``valid`` [..., Ld] marks real document positions: batch padding must not enter the max, or a
    document's score would depend on the other documents it is batched with.
    """
    similarity = query @ docs.transpose(-1, -2)
    if valid is not None:
        similarity = similarity.masked_fill(~valid.unsqueeze(-2), float("-inf"))
    return similarity.max(dim=-1).values.sum(dim=-1)


def build(name: str, bert: BertModel, tokenizer, settings: dict) -> Ranker:
    """Construct ranker ``name`` with the length limits and ranker-specific options in ``settings``."""
    common = dict(max_query_len=settings["max_query_len"], max_doc_len=settings["max_doc_len"],
                  max_seq_len=settings["max_seq_len"])
    if name == "monobert":
        return MonoBERT(bert, tokenizer, dropout=settings["monobert"]["dropout"], **common)
    if name == "twinbert":
        return TwinBERT(bert, tokenizer, pooling=settings["twinbert"]["pooling"], **common)
    if name == "colbert":
        return ColBERT(bert, tokenizer=tokenizer, dim=settings["colbert"]["dim"], **common)
    raise ValueError(f"unknown ranker {name!r}; allowed: {', '.join(RANKERS)}")

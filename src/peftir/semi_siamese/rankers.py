"""monoBERT, TwinBERT and ColBERT on a shared BERT encoder (REFERENCE.md §1); names from
``peftir.semi_siamese.contract``.

Every ranker scores (query, document) pairs given as lists of word-piece ids
(no special tokens); bi-encoders also expose ``encode`` and ``score_encoded``
so reranking encodes each candidate document once, not once per query.
Encoding goes through ``Ranker.encoder(role=...)`` so that methods which treat
queries and documents differently (semi-Siamese) can switch their modules by
role; Siamese methods ignore the role.
"""
from __future__ import annotations

import math
import string
from typing import Callable, Sequence

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
    whole sequence by default), token type ids."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    token_types = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, seq in enumerate(seqs):
        ids[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, :len(seq) if attended is None else attended[row]] = 1
        if types is not None:
            token_types[row, :len(seq)] = torch.tensor(types[row], dtype=torch.long)
    return ids, mask, token_types


def chunk_mean(vectors: Tensor, owner: list[int], count: int) -> Tensor:
    """Average rows of ``vectors`` that belong to the same owner (document chunks → document)."""
    index = torch.tensor(owner, dtype=torch.long, device=vectors.device)
    sums = torch.zeros((count, vectors.shape[-1]), dtype=vectors.dtype, device=vectors.device).index_add(0, index, vectors)
    return sums / torch.bincount(index, minlength=count).unsqueeze(1).to(vectors.dtype)


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
              attended: list[int] | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Padded ids, mask and token types (``pad``) on the ranker's device, through its execution."""
        return self.execution.inputs(pad(seqs, self.pad_id, types, attended))

    @property
    def chunk_len(self) -> int:
        """Document tokens per chunk: what is left of a sequence beside a full query, ``[CLS]`` and two
        ``[SEP]`` (489 at 512 / 20, CEDR's and the released code's), for TwinBERT's documents too."""
        return self.max_seq_len - self.max_query_len - 3

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
        ids, mask, token_types = self.batch(seqs, types)
        cls = self.encoder(ids, mask, token_types, PAIR)[:, 0]
        return self.out(self.dropout(chunk_mean(cls, owner, len(queries)))).squeeze(-1)


class BiEncoder(Ranker):
    """Queries and documents encoded separately; subclasses define the representation and the score."""

    bi_encoder = True

    def encode(self, texts: list[Ids], role: str) -> list[Tensor]:
        raise NotImplementedError

    def score_encoded(self, query: Tensor, docs: list[Tensor]) -> Tensor:
        raise NotImplementedError

    def score_pairs(self, queries: list[Ids], docs: list[Ids]) -> Tensor:
        q_reps, d_reps = self.encode(queries, QUERY), self.encode(docs, DOCUMENT)
        return torch.cat([self.score_encoded(q, [d]) for q, d in zip(q_reps, d_reps)])


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

    def encode(self, texts: list[Ids], role: str) -> list[Tensor]:
        limit = self.max_query_len if role == QUERY else self.max_doc_len
        seqs, owner = [], []
        for index, text in enumerate(texts):
            pieces = [list(text[:limit])] if role == QUERY else equal_chunks(text[:limit], self.chunk_len)
            for piece in pieces:
                seqs.append([self.cls_id, *piece, self.sep_id])
                owner.append(index)
        ids, mask, token_types = self.batch(seqs)
        states = self.encoder(ids, mask, token_types, role)
        if self.pooling == "cls":
            return list(chunk_mean(states[:, 0], owner, len(texts)))
        content = mask.clone()
        content[:, 0] = 0                                          # CLS
        content[torch.arange(len(seqs), device=mask.device), mask.sum(1) - 1] = 0      # SEP
        sums = chunk_mean((states * content.unsqueeze(-1)).sum(1), owner, len(texts))
        counts = chunk_mean(content.sum(1, keepdim=True).to(states.dtype), owner, len(texts))
        return list(sums / counts.clamp(min=1))

    def score_encoded(self, query: Tensor, docs: list[Tensor]) -> Tensor:
        combined = torch.maximum(query.unsqueeze(0), torch.stack(docs))
        return self.out(combined + self.residual(combined)).squeeze(-1)


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
        self.skip = set(tokenizer.convert_tokens_to_ids(list(string.punctuation))) - {tokenizer.unk_token_id}
        self.project = nn.Linear(self.hidden, dim, bias=False)

    def encode(self, texts: list[Ids], role: str) -> list[Tensor]:
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
        if role == DOCUMENT:
            keep = mask.bool() & ~torch.isin(ids, torch.tensor(sorted(self.skip), device=ids.device))
            vectors = vectors * keep.unsqueeze(-1)
        return [vectors[row, :len(seq)] for row, seq in enumerate(seqs)]

    def score_encoded(self, query: Tensor, docs: list[Tensor]) -> Tensor:
        width = max(d.shape[0] for d in docs)
        padded = torch.stack([nn.functional.pad(d, (0, 0, 0, width - d.shape[0])) for d in docs])
        lengths = torch.tensor([d.shape[0] for d in docs], device=padded.device)
        return maxsim(query, padded, torch.arange(width, device=padded.device) < lengths.unsqueeze(1))


def maxsim(query: Tensor, docs: Tensor, valid: Tensor | None = None) -> Tensor:
    """Σ over query vectors of the max similarity over each document's vectors: [Lq,d] × [N,Ld,d] → [N].

    ``valid`` [N,Ld] marks real document positions: batch padding must not enter the max, or a
    document's score would depend on the other documents it is batched with.
    """
    similarity = torch.einsum("qe,nde->nqd", query, docs)
    if valid is not None:
        similarity = similarity.masked_fill(~valid.unsqueeze(1), float("-inf"))
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

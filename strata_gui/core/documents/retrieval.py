"""Hybrid retrieval: FTS5 (bm25) ranks and vector ranks fused by reciprocal rank fusion.

Vectors are searched exactly: every chunk's unit vector against the question's, with numpy (one
matrix product: ~5 ms for 10,000 chunks of 768 dimensions). The collections a conversation has
are small (a 300-page book is ~1,000 chunks), so an approximate index would buy nothing and lose
hits; sqlite-vec would need ``sqlite3``'s extension loading, which some Python builds (this
project's Linux CPython among them) are compiled without. numpy is imported the first time a
vector search runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RRF_K = 60
"""The constant of reciprocal rank fusion (Cormack et al., 2009): 1 / (k + rank)."""
CANDIDATES = 50
"""Hits taken from each ranking before they are fused."""

# Words that carry no topic: left out of the full-text query so that a question's form ("what is
# the ...") does not outrank its subject.
STOPWORDS = frozenset(["a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "may", "might", "must", "of", "on", "or", "our", "shall", "should", "so", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "was", "we", "were", "what", "when", "where", "which", "who", "whom", "whose", "why", "will", "with", "would", "you", "your", "about", "after", "before", "between", "does", "doing", "during", "each", "few", "more", "most", "other", "some", "such", "only", "own", "same", "too", "very", "s", "t", "just", "don", "now", "tell", "me", "please", "use", "used", "using"])


def full_text_query(question: str) -> str:
    """An FTS5 query for ``question``: its words (stop words left out), any of them, each quoted
    (so no word is read as FTS5 syntax)."""
    words = [w for w in re.findall(r"\w+", question.lower()) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    if not words:
        words = re.findall(r"\w+", question.lower())
    seen: dict[str, None] = dict.fromkeys(words)
    return " OR ".join(f'"{w}"' for w in seen)


_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]{3,}")


def cjk_query(question: str) -> str:
    """An FTS5 query for the trigram index: every three-character piece of the question's runs of
    Chinese, Japanese or Korean (any of them); "" when it has no run of three such characters."""
    grams: dict[str, None] = {}
    for run in _CJK_RUN.findall(question):
        for i in range(len(run) - 2):
            grams[run[i:i + 3]] = None
    return " OR ".join(f'"{g}"' for g in grams)


def fuse(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Reciprocal rank fusion of ranked id lists: the ids by the sum of 1 / (k + rank), best first."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda i: (-score[i], i))


@dataclass
class VectorMatrix:
    """The unit vectors of a set of chunks as one float32 matrix (numpy), for exact search."""

    ids: list[int]
    matrix: Any  # numpy.ndarray (n, dims)

    @classmethod
    def of(cls, rows: Sequence[tuple[int, bytes]]) -> VectorMatrix | None:
        """The matrix of (chunk id, float32 bytes) rows; None when there are none (or sizes differ)."""
        if not rows:
            return None
        import numpy as np

        dims = len(rows[0][1]) // 4
        kept = [(cid, blob) for cid, blob in rows if len(blob) == dims * 4 and dims > 0]
        if not kept:
            return None
        matrix = np.frombuffer(b"".join(blob for _, blob in kept), dtype=np.float32).reshape(len(kept), dims)
        return cls([cid for cid, _ in kept], matrix)

    def nearest(self, query: Sequence[float], limit: int = CANDIDATES) -> list[int]:
        """Chunk ids by cosine similarity to the unit vector ``query``, best first."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32)
        if q.shape[0] != self.matrix.shape[1]:
            return []
        scores = self.matrix @ q
        n = min(limit, len(self.ids))
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top])]
        return [self.ids[int(i)] for i in top]


def pack(vector: Sequence[float]) -> bytes:
    """A vector as float32 bytes (what ``docs_vectors`` keeps)."""
    import array

    return array.array("f", vector).tobytes()

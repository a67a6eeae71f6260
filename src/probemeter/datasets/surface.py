"""Surface floors of labelled texts: features that read only a text's surface, the baselines a
probe of a model's representation must beat before it says anything about the model.

Each floor is declared once in :data:`SURFACE_FLOORS` (its name, one line of help and the
function that builds it); experiment files ask for them with ``[task] controls = [...]``
(:mod:`probemeter.runs.kinds.surface`). Every floor reads the *raw* text of each row (never a
template around it: a template's words are the same in every row and would only hide that) as
a list of tokens (:data:`Tokenize`: the words of scikit-learn's default token pattern,
:func:`word_tokens`, or a model's tokenizer), and everything it learns of the vocabulary it
learns from the pool's texts alone, then applies to the test texts:

* ``bag-of-words``: the count of each pool token in the text, x_{i,w} = #{t ∈ tokens(i) : t =
  w} (scikit-learn's ``CountVectorizer``), sparse;
* ``tf-idf``: those counts weighted by the pool's smoothed inverse document frequency,
  idf(w) = ln((1 + n) / (1 + df(w))) + 1, each row scaled to unit L2 norm (``TfidfVectorizer``'s
  defaults; Salton & Buckley 1988), sparse;
* ``length``: the number of tokens of the text, one column;
* ``first-token`` and ``last-token``: the identity of the text's first (last) token, one-hot over
  the first (last) tokens the pool's texts have (scikit-learn's ``OneHotEncoder``): a test text
  whose first token no pool text begins with gets an all-zero row (no column for the unknown);
  a text without tokens has the token ``""`` (no token), sparse.

A token the pool never holds gets no column: a word found only in the test texts changes no
feature. Sparse floors are scipy CSR matrices, which loss-data curves and online codes train on
as they are (docs: "Sparse features").

These are the controls Hewitt & Liang (2019) ask of a probe's accuracy, turned on the input:
whatever a probe of a model reaches, a probe of the bare surface may reach too — lmprobe's
baseline battery and Holmes's controls (Waldis et al. 2024) report such floors beside probes.

References:
    Hewitt, J. & Liang, P. (2019). Designing and Interpreting Probes with Control Tasks.
    EMNLP-IJCNLP. arXiv:1909.03368

    Waldis, A., Perlitz, Y., Choshen, L., Hou, Y. & Gurevych, I. (2024). Holmes: A Benchmark to
    Assess the Linguistic Competence of Language Models. TACL. arXiv:2404.18923

    Salton, G. & Buckley, C. (1988). Term-weighting approaches in automatic text retrieval.
    *Information Processing & Management* 24(5), 513–523. doi:10.1016/0306-4573(88)90021-0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = [
    "NO_TOKEN",
    "SURFACE_FLOORS",
    "WORD_TOKENS",
    "SurfaceFloor",
    "Tokenize",
    "surface_features",
    "word_tokens",
]

#: a text's tokens
Tokenize = Callable[[str], list[str]]
#: the tokenization without a model: scikit-learn's default token pattern, lowercased
WORD_TOKENS = "words"
#: the first (last) token of a text without tokens
NO_TOKEN = ""
#: scikit-learn's default token pattern (``CountVectorizer(token_pattern=...)``), named in keys
_WORD_PATTERN = r"(?u)\b\w\w+\b"


def word_tokens(text: str) -> list[str]:
    """The words of ``text`` as scikit-learn's ``CountVectorizer()`` finds them: lowercased,
    runs of two or more word characters (``(?u)\\b\\w\\w+\\b``; one-letter words such as "a" are
    no tokens)."""
    return _word_analyzer()(text)


def _word_analyzer() -> Tokenize:
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(token_pattern=_WORD_PATTERN).build_analyzer()


Builder = Callable[[Sequence[str], Sequence[str], Tokenize], Any]


@dataclass(frozen=True)
class SurfaceFloor:
    """One surface floor: its name (``[task] controls``), one line of help, and ``build(pool,
    texts, tokenize)``: the features of every text of ``texts`` (CSR or a dense array, one row
    each), all that it learns learnt from the ``pool`` texts alone; ``settings``: what else its
    features depend on, for keys."""

    name: str
    help: str
    build: Builder
    settings: dict[str, Any]


def _vectorised(pool: Sequence[str], texts: Sequence[str], tokenize: Tokenize, tf_idf: bool) -> Any:
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    if not any(tokenize(text) for text in pool):  # scikit-learn's words would blame stop words
        raise ValueError("the pool's texts hold no token")
    vectoriser = (TfidfVectorizer if tf_idf else CountVectorizer)(analyzer=tokenize)
    vectoriser.fit(list(pool))
    return sp.csr_matrix(vectoriser.transform(list(texts)), dtype=np.float32)


def _bag_of_words(pool: Sequence[str], texts: Sequence[str], tokenize: Tokenize) -> Any:
    return _vectorised(pool, texts, tokenize, tf_idf=False)


def _tf_idf(pool: Sequence[str], texts: Sequence[str], tokenize: Tokenize) -> Any:
    return _vectorised(pool, texts, tokenize, tf_idf=True)


def _length(pool: Sequence[str], texts: Sequence[str], tokenize: Tokenize) -> np.ndarray:
    return np.array([[len(tokenize(text))] for text in texts], dtype=np.float32)


def _token_at(position: int) -> Builder:
    def build(pool: Sequence[str], texts: Sequence[str], tokenize: Tokenize) -> Any:
        from sklearn.preprocessing import OneHotEncoder

        def token(text: str) -> str:
            tokens = tokenize(text)
            return tokens[position] if tokens else NO_TOKEN

        encoder = OneHotEncoder(handle_unknown="ignore", dtype=np.float32)
        encoder.fit(np.array([[token(text)] for text in pool], dtype=object))
        found = encoder.transform(np.array([[token(text)] for text in texts], dtype=object))
        return sp.csr_matrix(found, dtype=np.float32)

    return build


#: every surface floor, by name, in the order the docs list them
SURFACE_FLOORS: dict[str, SurfaceFloor] = {
    floor.name: floor
    for floor in (
        SurfaceFloor(
            "bag-of-words",
            "each pool token's count in the text (scikit-learn's CountVectorizer fitted on the "
            "pool), sparse",
            _bag_of_words,
            {"vectoriser": "CountVectorizer"},
        ),
        SurfaceFloor(
            "tf-idf",
            "the counts weighted by the pool's smoothed idf, rows of unit L2 norm "
            "(TfidfVectorizer fitted on the pool), sparse",
            _tf_idf,
            {"vectoriser": "TfidfVectorizer", "norm": "l2", "smooth_idf": True},
        ),
        SurfaceFloor("length", "the text's length in tokens (one column)", _length, {}),
        SurfaceFloor(
            "first-token",
            "the text's first token, one-hot over the pool's first tokens (an unseen one: a "
            "row of zeros)",
            _token_at(0),
            {"unknown": "zeros"},
        ),
        SurfaceFloor(
            "last-token",
            "the text's last token, one-hot over the pool's last tokens (an unseen one: a row "
            "of zeros)",
            _token_at(-1),
            {"unknown": "zeros"},
        ),
    )
}


def surface_features(
    floor: str, texts: Sequence[str], pool: Sequence[int], tokenize: Tokenize = word_tokens
) -> Any:
    """The features of floor ``floor`` of every text of ``texts`` (one row each, in order), its
    vocabulary learnt from the texts at the ``pool`` indices alone.

    Args:
        floor: a name of :data:`SURFACE_FLOORS`.
        texts: the raw texts (no template).
        pool: indices of the pool's texts.
        tokenize: a text's tokens (default: :func:`word_tokens`).

    Returns:
        A float32 CSR matrix, or a float32 array (``length``), of ``len(texts)`` rows.

    Raises:
        ValueError: an unknown floor; a pool without texts, or whose texts hold no token.
    """
    if floor not in SURFACE_FLOORS:
        raise ValueError(f"unknown surface floor {floor!r} (known: {', '.join(SURFACE_FLOORS)})")
    rows = np.asarray(pool, dtype=np.int64)
    if not rows.size:
        raise ValueError("the pool holds no text")
    pool_texts = [texts[row] for row in rows]
    return SURFACE_FLOORS[floor].build(pool_texts, list(texts), tokenize)

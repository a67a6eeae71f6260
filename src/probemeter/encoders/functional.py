"""Adapters that turn a plain function or a fitted scikit-learn transformer into an Encoder.

Both check what they return: a finite, numeric, 2-D array with one row per input and a fixed
number of columns, cast to float32 as the :class:`~probemeter.encoders.Encoder` protocol asks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from probemeter._validation import check_scalar, text

__all__ = ["CallableEncoder", "SklearnEncoder"]


def _check_features(output: Any, n_inputs: int, dimension: int | None, name: str) -> np.ndarray:
    """``output`` as float32 ``(n_inputs, dimension)``, or a ValueError naming encoder ``name``."""
    if hasattr(output, "toarray"):  # scipy sparse matrices
        output = output.toarray()
    features = np.asarray(output)
    if features.ndim != 2 or not np.issubdtype(features.dtype, np.number):
        raise ValueError(
            f"encoder {name!r} must return a 2-D numeric array; got shape {features.shape}, "
            f"dtype {features.dtype}"
        )
    if features.shape[0] != n_inputs:
        raise ValueError(
            f"encoder {name!r} must return one row per input: {n_inputs} inputs gave "
            f"{features.shape[0]} rows"
        )
    if dimension is not None and features.shape[1] != dimension:
        raise ValueError(
            f"encoder {name!r} must return {dimension} columns; got {features.shape[1]}"
        )
    if not np.isfinite(features).all():
        raise ValueError(f"encoder {name!r} returned NaN or infinite features")
    return features.astype(np.float32, copy=False)


class CallableEncoder:
    """Wraps ``function(inputs) -> (len(inputs), dimension)`` array as an Encoder.

    Args:
        function: called with the whole batch of inputs (anything with a length).
        name: label for results and cache keys.
        dimension: expected number of columns; when ``None`` it is taken from the first
            :meth:`encode` call (``dimension`` is ``None`` until then) and enforced afterwards.
    """

    def __init__(
        self, function: Callable[[Any], Any], name: str, dimension: int | None = None
    ) -> None:
        if not callable(function):
            raise ValueError(f"function must be callable; got {type(function).__name__}")
        if dimension is not None:
            check_scalar(dimension, "dimension", int, min_val=1)
        self.function = function
        self.name = text()(name, "name")
        self.dimension = None if dimension is None else int(dimension)

    def encode(self, inputs: Any) -> np.ndarray:
        """``function(inputs)`` checked and cast to float32 ``(len(inputs), dimension)``."""
        features = _check_features(self.function(inputs), len(inputs), self.dimension, self.name)
        if self.dimension is None:
            self.dimension = int(features.shape[1])
        return features


class SklearnEncoder:
    """Wraps a fitted scikit-learn transformer (PCA, random projection, ...) as an Encoder.

    Args:
        transformer: a fitted estimator with ``transform``; its output width is ``dimension``.
        name: label for results and cache keys.

    Raises:
        ValueError: when ``transformer`` has no ``transform`` method or is not fitted.
    """

    def __init__(self, transformer: Any, name: str) -> None:
        if not callable(getattr(transformer, "transform", None)):
            raise ValueError(
                f"transformer must have a transform method; got {type(transformer).__name__}"
            )
        try:
            check_is_fitted(transformer)
        except NotFittedError as error:
            raise ValueError(
                f"transformer must be fitted before wrapping; call "
                f"{type(transformer).__name__}.fit(...) first"
            ) from error
        self.transformer = transformer
        self.name = text()(name, "name")
        self.dimension = self._output_dimension(transformer)

    @staticmethod
    def _output_dimension(transformer: Any) -> int:
        """Output width: from ``get_feature_names_out``, else by transforming one zero row."""
        try:
            return len(transformer.get_feature_names_out())
        except (AttributeError, TypeError, ValueError):
            n_features = getattr(transformer, "n_features_in_", None)
            if n_features is None:
                raise ValueError(
                    "transformer must expose get_feature_names_out() or n_features_in_ so its "
                    "output dimension can be found"
                ) from None
            probe = transformer.transform(np.zeros((1, int(n_features))))
            return int(np.shape(probe)[1])

    def encode(self, inputs: Any) -> np.ndarray:
        """``transformer.transform(inputs)`` checked and cast to float32 ``(n, dimension)``."""
        output = self.transformer.transform(inputs)
        return _check_features(output, len(inputs), self.dimension, self.name)

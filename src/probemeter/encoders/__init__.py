"""Encoders that turn raw inputs into frozen features for probing, and a cache for them.

``transformers`` is imported only when a :class:`TransformerEncoder` is built, so
``import probemeter`` works without the ``encoders`` extra; likewise GloVe is loaded only by
:func:`glove_6b_50d` and spaCy only by :class:`SpacyTokenVectors`.
"""

from probemeter.encoders.base import Encoder
from probemeter.encoders.cache import FeatureCache
from probemeter.encoders.functional import CallableEncoder, SklearnEncoder
from probemeter.encoders.hf import TransformerEncoder, minilm_path
from probemeter.encoders.image_models import TrainedImageEncoder, train_cnn, train_vae
from probemeter.encoders.in_memory import ModelEncoder
from probemeter.encoders.spacy_vectors import SpacyTokenVectors
from probemeter.encoders.static import StaticWordVectors, glove_6b_50d

__all__ = [
    "CallableEncoder",
    "Encoder",
    "FeatureCache",
    "ModelEncoder",
    "SklearnEncoder",
    "SpacyTokenVectors",
    "StaticWordVectors",
    "TrainedImageEncoder",
    "TransformerEncoder",
    "glove_6b_50d",
    "minilm_path",
    "train_cnn",
    "train_vae",
]

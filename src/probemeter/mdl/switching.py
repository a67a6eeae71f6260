"""A switching code over probe families: fixed share (Herbster & Warmuth 1998) with the
decreasing switching rate α_t = 1/t.

The online code (Voita & Titov 2020, §2.2.2) depends on the probe family it trains (linear,
MLP-1, MLP-2, widths); Whitney et al. (§7) and Blier & Ollivier (2018, §3.4) suggest coding with
a *switch* between families instead, after the switch distribution of van Erven, Grünwald & de
Rooij (2012, "Catching up faster by switching sooner", JRSS B 74(3),
doi:10.1111/j.1467-9868.2011.01025.x): a code never much longer than the best family — or the
best sequence of families — chosen in hindsight.

Rounds t = 1..T (the transmitted examples in their order, or the online code's blocks); family
k ∈ 1..K codes round t at ``ℓ_{k,t} = −log p_k(y_t | past)``. A *switching sequence*
``s = (s_1, ..., s_T)`` codes round t with family ``s_t``. This module's prior on sequences is
**fixed share** (Herbster & Warmuth 1998, "Tracking the best expert", Machine Learning 32(2),
doi:10.1023/A:1007424614876), a Markov chain with a uniform prior π = 1/K over families and
switching rate α_t::

    P(s_1) = π(s_1),    P(s_t | s_{t−1}) = (1 − α_t) 1[s_t = s_{t−1}] + α_t π(s_t)   (t ≥ 2)

with ``α_t = 1/t`` by default (``rate="harmonic"``: after t−1 rounds a switch has probability
1/t, in place of Herbster & Warmuth's constant α; the overhead over the best sequence is then
logarithmic in T, bound below), a constant α (``rate=α``, their fixed share) or ``rate=0``,
the Bayesian mixture with no switching.

It is **not** van Erven et al.'s switch distribution, whose prior is over the number of
switches m, the switch times and the families switched to,
``π(s) = π_M(m) π_K(k_1) Π_{i=2..m} π_T(t_i | t_i > t_{i−1}) π_K(k_i)``, with priors π_M,
π_T, π_K of one's choice, not a Markov chain with rate 1/t. Both mix over switching
sequences and stay within a number of bits logarithmic in T of the best sequence with a few
switches, but the priors, and so the codelengths, differ: the numbers here are fixed share's.

The switching code is the mixture over all sequences::

    L_switch = −log2 Σ_s P(s) Π_t p_{s_t}(y_t | past),

computed exactly in O(T K) by the forward algorithm in log space: with ``w_1 = π``,

    P_t = Σ_k w_t(k) e^{−ℓ_{k,t}},   v_t(k) = w_t(k) e^{−ℓ_{k,t}} / P_t   (posterior),
    w_{t+1}(k) = (1 − α_{t+1}) v_t(k) + α_{t+1} π(k),     L_switch = −Σ_t log2 P_t.

Each round is coded with what the receiver already has (past rounds and their losses), so this
is a prequential code like the online code it mixes.

**Bound.** For every sequence s, ``L_switch ≤ L_s − log2 P(s)`` (one term of the sum). For s
with k switches at rounds t_1 < ... < t_k, ``−log2 P(s) ≤ B_k`` with

* harmonic rate: ``B_k = (k + 1) log2 K + log2 T + k log2(T − 1)`` — the non-switch factors
  ``1 − 1/t + 1/(tK) ≥ (t − 1)/t`` telescope to ``1/T`` times ``Π_j t_j/(t_j − 1)``, and each
  switch factor is ``1/(t_j K)``;
* constant α: ``B_k = (k + 1) log2 K + k log2(1/α) + (T − 1 − k) log2(1/(1 − α))``;
* α = 0: ``B_0 = log2 K``, and no sequence with a switch has prior mass.

``B_k`` grows with k, so ``L_switch ≤ min_{s: ≤ k switches} L_s + B_k``: with k = 0 against the
best single family in hindsight, and with k ≥ 1 against the best sequence with at most k
switches (:func:`best_sequences`, a dynamic programme over (round, switches used, family)).

Units: inputs and outputs in bits; the recursion runs in nats.

References:
    Herbster, M. & Warmuth, M. K. (1998). Tracking the best expert. *Machine Learning* 32(2),
    151–178. doi:10.1023/A:1007424614876

    van Erven, T., Grünwald, P. & de Rooij, S. (2012). Catching up faster by switching sooner.
    *Journal of the Royal Statistical Society: Series B* 74(3). doi:10.1111/j.1467-9868.2011.01025.x

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368

    Blier, L. & Ollivier, Y. (2018). The description length of deep learning models. *NeurIPS 2018*.
    arXiv:1802.07044
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from probemeter._validation import check_scalar

__all__ = [
    "SwitchForward",
    "best_sequences",
    "overhead_bound",
    "switch_forward",
    "switching_rates",
]

_LN2 = math.log(2.0)


def switching_rates(n_rounds: int, rate: str | float = "harmonic") -> np.ndarray:
    """The switching rate α_t of each round t = 1..T (α_1 = 0: the first round has no
    predecessor): ``1/t`` for ``rate="harmonic"``, a constant α in [0, 1) otherwise (0: the
    Bayesian mixture).

    Raises:
        ValueError: ``n_rounds`` below 1, or ``rate`` neither ``"harmonic"`` nor in [0, 1).
    """
    check_scalar(n_rounds, "n_rounds", int, min_val=1)
    rates = np.zeros(n_rounds)
    if isinstance(rate, str):
        if rate != "harmonic":
            raise ValueError(f"rate must be 'harmonic' or a number in [0, 1); got {rate!r}")
        rates[1:] = 1.0 / np.arange(2, n_rounds + 1)
    else:
        alpha = check_scalar(rate, "rate", float, min_val=0, max_val=1, include_boundaries="left")
        rates[1:] = alpha
    return rates


def _check_losses(losses_bits: np.ndarray) -> np.ndarray:
    losses = np.asarray(losses_bits, dtype=np.float64)
    if losses.ndim != 2 or losses.shape[0] < 1 or losses.shape[1] < 1:
        raise ValueError(
            "losses_bits must be a 2-D array (rounds T >= 1, families K >= 1); "
            f"got shape {losses.shape}"
        )
    if not np.all(np.isfinite(losses)) or losses.min() < 0:
        raise ValueError("losses_bits must be finite and non-negative (codelengths in bits)")
    return losses


@dataclass(frozen=True)
class SwitchForward:
    """The forward pass of the switching code over T rounds and K families.

    Attributes:
        round_bits: (T,) ``−log2 P_t``, the switching code of each round, in bits.
        posterior: (T, K) ``v_t``, the posterior over families after round t.
        rates: (T,) the switching rates α_t used (α_1 = 0).
    """

    round_bits: np.ndarray
    posterior: np.ndarray
    rates: np.ndarray

    @property
    def total_bits(self) -> float:
        """``L_switch``, in bits."""
        return float(self.round_bits.sum())


def switch_forward(losses_bits: np.ndarray, rate: str | float = "harmonic") -> SwitchForward:
    """The switching code of ``losses_bits`` (T rounds × K families, each ``−log2 p_k(y_t)``)
    by the forward algorithm in log space (module docstring), uniform prior over families.

    The recursion is sequential in t; it runs on Python floats (about 1 µs per family and
    round), far faster than numpy calls on K-element arrays.

    Examples:
        Two families over 8 rounds: the first codes each of the first four labels in 0.1 bits
        and the rest in 3 bits, the second the other way round. Either family alone costs
        12.4 bits; the best sequence, one switch after round 4, 0.8 bits; the switching code
        stays within the bound B_1 of that sequence, and its posterior follows the switch.

        >>> import numpy as np
        >>> from probemeter.mdl import best_sequences, overhead_bound, switch_forward
        >>> losses = np.array([[0.1, 3.0]] * 4 + [[3.0, 0.1]] * 4)
        >>> code = switch_forward(losses)
        >>> round(code.total_bits, 2), best_sequences(losses, 1).round(2).tolist()
        (5.79, [12.4, 0.8])
        >>> round(overhead_bound(8, 2, switches=1), 2)
        7.81
        >>> code.posterior[[3, 7]].round(2).tolist()
        [[0.98, 0.02], [0.01, 0.99]]

    Raises:
        ValueError: ``losses_bits`` not a finite non-negative (T, K) array, or a bad ``rate``.
    """
    losses = _check_losses(losses_bits) * _LN2  # nats
    n_rounds, n_families = losses.shape
    rates = switching_rates(n_rounds, rate)
    with np.errstate(divide="ignore"):  # log 0 = -inf for alpha = 0: no mass moves
        log_stays = np.log1p(-rates).tolist()
        log_moves = (np.log(rates) - math.log(n_families)).tolist()
    round_nats = np.empty(n_rounds)
    log_posterior = np.empty((n_rounds, n_families))
    log_v = [-math.log(n_families)] * n_families  # before round 1: the prior (alpha_1 = 0)
    for t, row in enumerate(losses.tolist()):
        log_w = _share(log_v, log_stays[t], log_moves[t])
        joint = [w - loss for w, loss in zip(log_w, row, strict=True)]
        top = max(joint)
        log_p = top + math.log(math.fsum([math.exp(j - top) for j in joint]))
        log_v = [j - log_p for j in joint]
        round_nats[t] = -log_p
        log_posterior[t] = log_v
    return SwitchForward(round_nats / _LN2, np.exp(log_posterior), rates)


def _share(log_v: list[float], log_stay: float, log_move: float) -> list[float]:
    """``log((1 − α) v + α π)`` per family, from ``log v``, ``log(1 − α)`` and ``log(α π)``
    (a log-sum-exp of two terms; ``log_move = −inf``: no switch, ``log v`` itself)."""
    if log_move == -math.inf:
        return log_v
    shared = []
    for value in log_v:
        value += log_stay
        high, low = (value, log_move) if value > log_move else (log_move, value)
        shared.append(high + math.log1p(math.exp(low - high)))
    return shared


def best_sequences(losses_bits: np.ndarray, max_switches: int) -> np.ndarray:
    """``min_{s: at most k switches} Σ_t ℓ_{s_t,t}`` for k = 0..``max_switches``, in bits: the
    best switching sequences in hindsight (k = 0: the best single family), by dynamic
    programming over (round, switches used, current family) in O(T K max_switches).

    Raises:
        ValueError: bad ``losses_bits`` (see :func:`switch_forward`) or a negative
            ``max_switches``.
    """
    losses = _check_losses(losses_bits)
    check_scalar(max_switches, "max_switches", int, min_val=0)
    n_switches = max_switches + 1
    # best[j, k]: least loss of rounds 1..t over sequences with j switches ending in family k
    best = np.full((n_switches, losses.shape[1]), np.inf)
    best[0] = losses[0]
    switched = np.full_like(best, np.inf)
    for row in losses[1:]:
        switched[1:] = best[:-1].min(axis=1, keepdims=True)
        best = np.minimum(best, switched) + row
    return np.minimum.accumulate(best.min(axis=1))


def overhead_bound(
    n_rounds: int, n_families: int, switches: int, rate: str | float = "harmonic"
) -> float:
    """``B_k`` in bits (module docstring): ``−log2 P(s)`` of any sequence with ``switches``
    switches is at most this, so ``L_switch ≤ L_s + B_k``. ``inf`` when the prior gives such
    sequences no mass (``rate=0`` with a switch, or more switches than rounds allow).

    Raises:
        ValueError: ``n_rounds`` or ``n_families`` below 1, negative ``switches``, or a bad
            ``rate``.
    """
    check_scalar(n_rounds, "n_rounds", int, min_val=1)
    check_scalar(n_families, "n_families", int, min_val=1)
    check_scalar(switches, "switches", int, min_val=0)
    switching_rates(1, rate)  # validates rate
    if switches > n_rounds - 1 or (switches and n_families == 1):
        return math.inf
    per_family = (switches + 1) * math.log2(n_families)
    if isinstance(rate, str):
        return per_family + math.log2(n_rounds) + switches * math.log2(max(n_rounds - 1, 1))
    if rate == 0:
        return per_family if switches == 0 else math.inf
    return (
        per_family
        + switches * -math.log2(rate)
        + (n_rounds - 1 - switches) * -math.log2(1.0 - rate)
    )

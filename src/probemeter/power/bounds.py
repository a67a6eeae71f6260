"""Generalisation bounds and the training data they ask for (Zhu et al., §3.3–3.4, App. B).

The finite-function-class bound (Zhu et al., §3.4; Liang 2016, Thm. 7): with probability at
least 1 − δ, the empirically optimal probe's risk is within

    B(n, δ) = B · sqrt( 2 · ln(2|F| / δ) / n )

of the best risk in the class F, for n i.i.d. training examples and a risk bounded by B
(B = 1 for accuracy). Variants (``variant``):

* ``"standard"`` — Eq. 1: accuracy, precision/recall/F1, cross-entropy with its bound B, and
  variational MDL (Theorem 2: same bound as Eq. 1);
* ``"control"`` — Theorem 1: a control-task difference (selectivity) is bounded by 2·B(n, δ);
* ``"prequential"`` — Theorem 3: prequential MDL is bounded by (C·n / t₁)·B(n, δ), C a
  user constant and t₁ the first block. We take t₁ as a *fraction* of n
  (``first_block_fraction`` = t₁/n, 0.1 % in Voita & Titov): with t₁ a fixed count the factor
  n/t₁ grows like n and the bound grows like √n, so no training size satisfies it.

**Recommended N** (§3.2 steps 3–4, §3.4): set the bound equal to the target
ε = |R₁ − R₂| / ``factor`` (``factor`` = 2, the paper's heuristic) and solve the closed form

    N_train = ⌈ 2 · ln(2|F|/δ) · (m · B / ε)² ⌉,   m = 1, 2 or C/first_block_fraction,

then the total data with train/dev/test sizes η:1:1 is ⌈(1 + 2/η) · N_train⌉.

N_train counts i.i.d. training examples, as the bound does, and is reported as it is. Where
test examples are words clustered in sentences, no design effect is applied to it: Kish's
design effect is the ratio of an estimate's variance under cluster sampling to its variance
under simple random sampling, a property of the test set's estimate, and neither Kish nor Zhu
et al. relate it to the training size at which the bound holds. The test-set question — how
many test sentences a clustered comparison needs — is answered apart, by the power of the
decision (:func:`probemeter.power.clustered.sentences_needed`).

**How |F| is counted** (``counting``). The paper (§3.4) stores each of the D + 1 parameters of
a logistic regression in 32 bits, "so each weight parameter takes 2^32 possible values", and
writes |F| = 2^32 × (D + 1):

* ``"paper"`` (default) — ln|F| = bits · ln 2 + ln(n_parameters), the product as printed. This
  reading reproduces every number of the paper: the bound 0.039 at n = 65,536 for D = 4,096,
  N ≈ 40k for a bound of 0.05 (it gives 39,691), and all five rows of Table 2 (D = 768).
* ``"exact"`` — ln|F| = n_parameters · bits · ln 2: the real number of distinct parameter
  vectors, (2^bits)^n_parameters. It is the count the finite-class theorem needs, but at
  D = 4,096 it makes the bound 1.67 at n = 65,536 (vacuous for accuracy) and asks for
  N ≈ 72.7 million for a bound of 0.05.

The paper's text (a class of 2^32-valued parameters) and its numbers (the product) disagree;
we follow the numbers by default so recommendations are comparable with the paper's tables,
and offer the exact count for a bound that holds as stated. Logarithms are natural (nats):
with log₂ the D = 4,096 example would give 0.047, not 0.039.

**How parameters are counted** (:func:`probe_parameter_count`). Zhu et al. count a binary
probe's output as a *single* logit: "the D + 1 weight parameters" of the logistic regressor
(§3.4) and, §4.6 footnote 6, "the LogReg has D + 1 [...] parameters, while the MLP has
(D + 1)H + H + 1 = 15,401" (one hidden layer, H = 20, D = 768: 769·20 + 20 + 1 = 15,401; the
footnote's "D + 1 = 799" is a misprint of 769, which also reproduces Table 2). A softmax
probe trained with K = 2 outputs has 2(D + 1) weights, but two logits carry one free log-odds,
so the function class is that of D + 1 parameters. For K > 2 classes the paper gives no count;
we count the multinomial output layer, K logits: K(D + 1) for a linear probe.

References:
    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801

    Liang, P. (2016). CS229T/STAT231: Statistical learning theory. Lecture notes, Stanford
    University (no identifier).

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from probemeter._validation import check_delta, check_scalar, integer_list, one_of

__all__ = [
    "COUNTINGS",
    "VARIANTS",
    "Recommendation",
    "bound_multiplier",
    "generalization_bound",
    "log_function_class_size",
    "probe_parameter_count",
    "recommend_train_size",
    "required_train_size",
    "total_data_size",
]

COUNTINGS = ("paper", "exact")
VARIANTS = ("standard", "control", "prequential")


def _positive(name: str, value: object) -> float:
    """``value`` as a float, or a ValueError naming ``name`` unless it is finite and > 0."""
    return float(check_scalar(value, name, float, min_val=0, include_boundaries="neither"))


def probe_parameter_count(n_features: int, n_classes: int = 2, hidden: Sequence[int] = ()) -> int:
    """Parameters of a probe as Zhu et al. count them for the bound (§3.4; §4.6, footnote 6).

    A ReLU MLP ``D → H₁ → … → H_L → out`` has Σ (fan_in + 1)·fan_out weights and biases, with
    out = 1 logit for a binary task (K = 2) and out = K logits for K > 2 (the paper is silent
    on K > 2; we count the multinomial output layer). Hence, for a binary task:

    * linear probe (logistic regression, ``hidden=()``): D + 1 (§3.4: 769 at D = 768);
    * one hidden layer of H units: (D + 1)·H + H + 1 (fn. 6: 15,401 at D = 768, H = 20);

    and K(D + 1), (D + 1)·H + (H + 1)·K for K > 2.

    Args:
        n_features: D, the representation's dimension.
        n_classes: K ≥ 2, the number of classes.
        hidden: widths of the hidden layers; ``()`` for a linear probe.

    Raises:
        ValueError: D < 1, K < 2, or widths that are not positive integers.
    """
    check_scalar(n_features, "n_features", int, min_val=1)
    check_scalar(n_classes, "n_classes", int, min_val=2)
    widths = integer_list(1)(list(hidden), "hidden")
    outputs = 1 if n_classes == 2 else int(n_classes)
    layers = [int(n_features), *(int(w) for w in widths), outputs]
    return sum((fan_in + 1) * fan_out for fan_in, fan_out in itertools.pairwise(layers))


def log_function_class_size(
    n_parameters: int, bits_per_parameter: int = 32, counting: str = "paper"
) -> float:
    """ln|F| in nats for a probe with ``n_parameters`` parameters of ``bits_per_parameter``
    bits each: ``"paper"`` → ln(2^bits · n_parameters), ``"exact"`` → n_parameters · bits · ln 2
    (see the module docstring for why the two differ)."""
    check_scalar(n_parameters, "n_parameters", int, min_val=1)
    check_scalar(bits_per_parameter, "bits_per_parameter", int, min_val=1)
    one_of(*COUNTINGS)(counting, "counting")
    if counting == "paper":
        return bits_per_parameter * math.log(2) + math.log(n_parameters)
    return n_parameters * bits_per_parameter * math.log(2)


def bound_multiplier(
    variant: str = "standard", *, C: float = 1.0, first_block_fraction: float = 0.001
) -> float:
    """m in m · B(n, δ): 1 (Eq. 1, Thm. 2), 2 (Thm. 1, control tasks) or C / (t₁/n)
    (Thm. 3, prequential MDL)."""
    one_of(*VARIANTS)(variant, "variant")
    if variant == "standard":
        return 1.0
    if variant == "control":
        return 2.0
    C = _positive("C", C)
    fraction = float(
        check_scalar(
            first_block_fraction,
            "first_block_fraction",
            float,
            min_val=0,
            max_val=1,
            include_boundaries="right",
        )
    )
    return C / fraction


def generalization_bound(
    n: float,
    log_class_size: float,
    *,
    delta: float = 1e-8,
    scale: float = 1.0,
    variant: str = "standard",
    C: float = 1.0,
    first_block_fraction: float = 0.001,
) -> float:
    """m · scale · sqrt(2 · ln(2|F|/δ) / n) for ``log_class_size`` = ln|F| (nats); ``scale`` is
    the bound B on the risk (1 for accuracy). See the module docstring."""
    n = _positive("n", n)
    delta = check_delta(delta)
    scale = _positive("scale", scale)
    log_size = float(check_scalar(log_class_size, "log_class_size", float, min_val=0))
    multiplier = bound_multiplier(variant, C=C, first_block_fraction=first_block_fraction)
    return multiplier * scale * math.sqrt(2.0 * (math.log(2.0) + log_size - math.log(delta)) / n)


def required_train_size(
    target: float,
    log_class_size: float,
    *,
    delta: float = 1e-8,
    scale: float = 1.0,
    variant: str = "standard",
    C: float = 1.0,
    first_block_fraction: float = 0.001,
) -> int:
    """The smallest n with :func:`generalization_bound` ≤ ``target``: the closed form
    ⌈2 · ln(2|F|/δ) · (m · scale / target)²⌉."""
    target = _positive("target", target)
    delta = check_delta(delta)
    scale = _positive("scale", scale)
    multiplier = bound_multiplier(variant, C=C, first_block_fraction=first_block_fraction)
    log_term = math.log(2.0) + float(log_class_size) - math.log(delta)
    return max(1, math.ceil(2.0 * log_term * (multiplier * scale / target) ** 2))


def total_data_size(n_train: int, eta: float = 4.0) -> int:
    """Train + dev + test examples when their sizes are η:1:1 (Zhu et al., §3.2 step 4):
    ⌈(1 + 2/η) · N_train⌉."""
    check_scalar(n_train, "n_train", int, min_val=1)
    eta = _positive("eta", eta)
    return math.ceil(round((1.0 + 2.0 / eta) * n_train, 9))


@dataclass(frozen=True)
class Recommendation:
    """A recommended data size for a comparison problem (Zhu et al., §3.2, §3.4).

    Attributes:
        gap: the pilot's |R₁ − R₂|.
        factor: the bound is set to gap / factor (2 in the paper).
        target: gap / factor.
        n_train: recommended training examples N_train.
        n_total: train + dev + test at η:1:1.
        eta, delta, scale, variant, C, first_block_fraction: the bound's settings.
        n_parameters, bits_per_parameter, counting, log_class_size: how |F| was counted.
    """

    gap: float
    factor: float
    target: float
    n_train: int
    n_total: int
    eta: float
    delta: float
    scale: float
    variant: str
    C: float
    first_block_fraction: float
    n_parameters: int
    bits_per_parameter: int
    counting: str
    log_class_size: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"|R1-R2| = {self.gap:.4g} -> bound {self.target:.4g} ({self.variant}, "
            f"delta={self.delta:g}, |F| counted '{self.counting}' from {self.n_parameters} "
            f"parameters x {self.bits_per_parameter} bits): N_train = {self.n_train:,}, "
            f"total at {self.eta:g}:1:1 = {self.n_total:,}"
        )


def recommend_train_size(
    gap: float,
    n_parameters: int,
    *,
    factor: float = 2.0,
    delta: float = 1e-8,
    bits_per_parameter: int = 32,
    counting: str = "paper",
    scale: float = 1.0,
    variant: str = "standard",
    C: float = 1.0,
    first_block_fraction: float = 0.001,
    eta: float = 4.0,
) -> Recommendation:
    """Recommend N_train for a comparison whose pilot performances differ by ``gap`` = |R₁ − R₂|
    (Zhu et al., §3.2 step 3): the N at which the bound equals gap / ``factor``.

    For a comparison of two probe families pass the larger parameter count (the paper takes
    the larger recommendation, §4.6). Count a probe's parameters with
    :func:`probe_parameter_count` (a binary probe has one logit: D + 1 for logistic
    regression, as in the paper).

    Examples:
        Zhu et al.'s example (§3.4): a logistic regression on D = 4,096 features (D + 1
        parameters) and pilot accuracies 0.1 apart; the bound is set to 0.05, which asks for
        about 40k training examples, and 4:1:1 splits for the total.

        >>> from probemeter.power import probe_parameter_count, recommend_train_size
        >>> result = recommend_train_size(0.1, probe_parameter_count(4096))
        >>> result.target, result.n_train, result.n_total
        (0.05, 39691, 59537)

    Raises:
        ValueError: a zero gap (the comparison may have collapsed: §3.6 — recommending data
            for it is not meaningful, check it with
            :func:`probemeter.power.collapse.detect_collapse`),
            a gap outside (0, 1] (a difference of two accuracies), δ outside (0, 1),
            non-positive factor, η, C, etc.
    """
    check_scalar(gap, "gap", float, min_val=0, max_val=1)  # |R1 - R2| of two accuracies
    if gap == 0:
        raise ValueError(
            "gap is 0: the two configurations performed identically, so the comparison may "
            "have collapsed (Zhu et al. §3.6) and no amount of data separates them; the bound "
            "would ask for infinitely many examples. Check for a collapse (detect_collapse) "
            "instead of recommending a size"
        )
    factor = _positive("factor", factor)
    delta = check_delta(delta)
    log_size = log_function_class_size(n_parameters, bits_per_parameter, counting)
    target = float(gap) / factor
    n_train = required_train_size(
        target,
        log_size,
        delta=delta,
        scale=scale,
        variant=variant,
        C=C,
        first_block_fraction=first_block_fraction,
    )
    return Recommendation(
        gap=float(gap),
        factor=factor,
        target=target,
        n_train=n_train,
        n_total=total_data_size(n_train, eta),
        eta=float(eta),
        delta=delta,
        scale=float(scale),
        variant=variant,
        C=float(C),
        first_block_fraction=float(first_block_fraction),
        n_parameters=int(n_parameters),
        bits_per_parameter=int(bits_per_parameter),
        counting=counting,
        log_class_size=log_size,
    )

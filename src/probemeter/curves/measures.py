"""Representation-quality measures as pure functions of a loss-data curve.

Whitney et al., "Evaluating representations by the complexity of learning low-loss predictors":
validation performance (VA, §2), mutual information (MI, §2 eq. 5), minimum description length
(MDL, §2 eq. 7), surplus description length (SDL, §4.1 Def. 1–2, eq. 11; App. A) and ε sample
complexity (εSC, §4.2 Def. 3, eq. 12; App. B).

Conventions shared by every function:

* ``metric`` is the loss read from the curve: ``"loss"`` (test cross-entropy, nats),
  ``"loss_truncated"`` (cross-entropy clipped to [0, 1] nat, the bounded loss of App. A) or
  ``"error"`` (0–1 loss, 1 − accuracy).
* ``unit`` is the unit of every loss-valued input and output (ε, ``first_block``, results):
  ``"nats"`` (default) or ``"bits"`` (nats / ln 2) for the cross-entropy metrics, ``"errors"``
  (the only, and default, unit) for ``"error"``. Losses are converted once, from the curve's nats.
* L(n) is estimated by the mean of the metric over seeds at each measured size n.
* ``n`` limits the data to the first n points of the pool (:meth:`LossDataCurve.truncate`);
  by default the whole pool. Sums run over the pool's points 1..N, N = the (truncated) pool size.
* Areas are left-edge Riemann sums over the measured sizes n_1 < … < n_G ≤ N (App. C; Voita &
  Titov's online code): the first block (0, n_1] is sent with a fixed code (the uniform code by
  default), block (n_i, n_{i+1}] with the probe trained on n_i points, and (n_G, N] with the probe
  trained on n_G points::

      MDL = n_1·c_1 + Σ_{i=1}^{G} (n_{i+1} − n_i)·L(n_i),   n_{G+1} = N

  where c_1 is the first block's per-example cost.
* Measures that run out of data (SDL, εSC) return the value computed from the data at hand with
  ``lower_bound=True``; numbers stay numbers, and "> x" appears only in :meth:`format`.
* SDL and εSC refuse a cross-entropy tolerance ε at or above the loss of the uniform code
  (:func:`uniform_code_loss`: ln K nats, K·ln 2 for label sets; min(·, 1) for
  ``"loss_truncated"``): the uniform code meets such an ε without seeing any data, so every
  representation would get SDL 0 and εSC n_1, tight, and the measure would say nothing about
  the representation (Whitney et al. choose ε as a loss a good predictor reaches, §4).

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020). Evaluating
    representations by the complexity of learning low-loss predictors. arXiv:2009.07368

    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from probemeter._multilabel import uniform_nats
from probemeter._validation import check_delta, check_scalar, one_of

if TYPE_CHECKING:
    from probemeter.curves.curve import LossDataCurve

__all__ = [
    "METRICS",
    "RULES",
    "DescriptionLength",
    "MeasureResult",
    "MutualInformation",
    "SampleComplexity",
    "SurplusDescriptionLength",
    "ValidationPerformance",
    "check_epsilon",
    "description_length",
    "evaluations_per_size",
    "hoeffding_draws",
    "hoeffding_half_width",
    "mutual_information",
    "sample_complexity",
    "sample_complexity_for_accuracy",
    "sdl",
    "uniform_code_loss",
    "validation_performance",
]

#: losses a measure can be computed from
METRICS = ("loss", "loss_truncated", "error")
#: when SDL and εSC count the threshold ε as reached: L̂ ≤ ε ("last") or L̂ ≤ ε/2 ("half")
RULES = ("last", "half")

_BOUNDED_METRICS = ("loss_truncated", "error")
_UNIT_SCALES = {"nats": 1.0, "bits": math.log(2.0), "errors": 1.0}


@dataclass(frozen=True)
class MeasureResult:
    """Fields shared by every measure.

    Attributes:
        representation: name of the curve's representation.
        value: the measure, a number (in ``unit``).
        unit: unit of ``value``: ``"nats"``, ``"bits"``, ``"errors"`` or, for εSC,
            ``"examples"``.
        metric: the loss the measure was computed from (see :data:`METRICS`).
        n: the number of pool points the measure had at its disposal (N).
        lower_bound: True when the data ran out before the measure was determined, so the
            true value is larger than ``value``.
    """

    measure: ClassVar[str] = ""

    representation: str
    value: float
    unit: str
    metric: str
    n: int
    lower_bound: bool

    @property
    def label(self) -> str:
        """Row label as in Whitney et al., Table 1 (e.g. ``"SDL, ε=0.1"``)."""
        return self.measure

    def format(self, digits: int = 2) -> str:
        """The value as text, ``"> x"`` when it is a lower bound."""
        text = _format_number(self.value, digits)
        return f"> {text}" if self.lower_bound else text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary with the measure's name and every field."""
        return {"measure": self.measure, **dataclasses.asdict(self)}

    def __str__(self) -> str:
        status = " (lower bound)" if self.lower_bound else ""
        return (
            f"{self.label} of {self.representation!r} at n={self.n} ({self.metric}): "
            f"{self.format()} {self.unit}{status}"
        )


@dataclass(frozen=True)
class ValidationPerformance(MeasureResult):
    """VA: mean test loss and accuracy of the probes trained on ``n_measured`` points.

    Attributes:
        n_measured: the largest measured size ≤ n, where the values were read.
        accuracy: mean test accuracy there (a fraction).
    """

    measure: ClassVar[str] = "VA"

    n_measured: int
    accuracy: float


@dataclass(frozen=True)
class MutualInformation(MeasureResult):
    """MI proxy: mean test loss at the largest measured size.

    Attributes:
        label_entropy: H(Y) in ``unit``, when it was supplied.
        information_lower_bound: H(Y) − value, the test-set estimate of the variational lower
            bound on I(Y; φ(X)) (Whitney et al., eq. 4); ``None`` without ``label_entropy``.
    """

    measure: ClassVar[str] = "MI"

    label_entropy: float | None
    information_lower_bound: float | None


@dataclass(frozen=True)
class DescriptionLength(MeasureResult):
    """MDL: online codelength of the first n labels.

    Attributes:
        first_block: per-example cost charged to the first block (0, n_1], in ``unit``.
    """

    measure: ClassVar[str] = "MDL"

    first_block: float


@dataclass(frozen=True)
class SurplusDescriptionLength(MeasureResult):
    """SDL: surplus codelength above the tolerance ε.

    Attributes:
        epsilon: the loss tolerance ε, in ``unit``.
        rule: ``"last"`` (tight when the last measured loss ≤ ε) or ``"half"`` (≤ ε/2).
        final_loss: mean loss at the largest measured size, in ``unit``.
        first_block: per-example cost charged to the first block, in ``unit``.
        delta, n_samples, half_width: Hoeffding interval of Theorem 4 (``None`` when not
            requested): with probability ≥ 1 − δ the estimate is within ``half_width`` of the
            Riemann-sum SDL, given ``n_samples`` independent samples per estimated loss.
    """

    measure: ClassVar[str] = "SDL"

    epsilon: float
    rule: str
    final_loss: float
    first_block: float
    delta: float | None
    n_samples: int | None
    half_width: float | None

    @property
    def label(self) -> str:
        return f"SDL, ε={self.epsilon:g}"

    @property
    def interval(self) -> tuple[float, float] | None:
        """(value − half_width, value + half_width), the lower end clipped at 0 since SDL ≥ 0;
        ``None`` without a half-width."""
        if self.half_width is None:
            return None
        return max(0.0, self.value - self.half_width), self.value + self.half_width


@dataclass(frozen=True)
class SampleComplexity(MeasureResult):
    """εSC: the first measured n whose mean loss reaches the tolerance (``unit="examples"``).

    Attributes:
        epsilon: the loss tolerance ε, in ``loss_unit``.
        rule: ``"last"`` (first n with L̂(n) ≤ ε) or ``"half"`` (L̂(n) ≤ ε/2, Algorithm 2).
        loss_unit: unit of ``epsilon``.
    """

    measure: ClassVar[str] = "SC"

    epsilon: float
    rule: str
    loss_unit: str

    @property
    def label(self) -> str:
        return f"SC, ε={self.epsilon:g}"


def validation_performance(
    curve: LossDataCurve,
    n: int | None = None,
    *,
    metric: str = "loss",
    unit: str | None = None,
) -> ValidationPerformance:
    """VA: the mean test loss (and accuracy) of probes trained on n points (Whitney et al., §2).

    m_VA(φ, D, A, n) = L(A_φ, n), read at the largest measured size ≤ n (default: the largest
    measured size). Raises ValueError when n is below the smallest measured size.
    """
    unit, scale = _resolve_unit(metric, unit)
    limited = _limit(curve, n)
    losses = _mean_losses(limited, metric, scale)
    n_measured = int(losses.index[-1])
    return ValidationPerformance(
        representation=curve.name,
        value=float(losses.iloc[-1]),
        unit=unit,
        metric=metric,
        n=limited.pool_size,
        lower_bound=False,
        n_measured=n_measured,
        accuracy=float(limited.mean("accuracy").iloc[-1]),
    )


def mutual_information(
    curve: LossDataCurve,
    *,
    metric: str = "loss",
    unit: str | None = None,
    label_entropy: float | None = None,
) -> MutualInformation:
    """MI: the loss at the largest measured size, standing in for lim_{n→∞} L(A_φ, n).

    Whitney et al., §2 eq. 5: m_MI = lim_{n→∞} L(A_φ, n). With a finite curve this is read at
    the largest n, so for the cross-entropy it is an estimate of an *upper* bound on
    H(Y | φ(X)) (a cross-entropy is never below the conditional entropy). Given the label
    entropy H(Y) in nats (not recoverable from the curve), also report H(Y) − loss, the
    estimated variational lower bound on I(Y; φ(X)) of eq. 4 (``metric="loss"`` only).
    """
    unit, scale = _resolve_unit(metric, unit)
    losses = _mean_losses(curve, metric, scale)
    value = float(losses.iloc[-1])
    entropy = None
    information = None
    if label_entropy is not None:
        if metric != "loss":
            raise ValueError(
                f"label_entropy bounds I(Y; φ(X)) only through the cross-entropy; "
                f"use metric='loss', not {metric!r}"
            )
        check_scalar(label_entropy, "label_entropy", float, min_val=0)
        entropy = label_entropy / scale
        information = entropy - value
    return MutualInformation(
        representation=curve.name,
        value=value,
        unit=unit,
        metric=metric,
        n=int(losses.index[-1]),
        lower_bound=False,
        label_entropy=entropy,
        information_lower_bound=information,
    )


def description_length(
    curve: LossDataCurve,
    n: int | None = None,
    *,
    first_block: str | float = "uniform",
    metric: str = "loss",
    unit: str | None = None,
) -> DescriptionLength:
    """MDL: online (prequential) codelength of the first n labels (Whitney et al., §2 eq. 7).

    m_MDL(φ, D, A, n) = Σ_{i=1}^{n} L(A_φ, i), estimated by the left-edge Riemann sum over the
    measured sizes (App. C; Voita & Titov's block code)::

        MDL = n_1·c_1 + Σ_{i=1}^{G} (n_{i+1} − n_i)·L̂(n_i),   n_{G+1} = N

    where c_1 = log K (the uniform code over K classes; ``first_block="uniform"``) or the
    given per-example cost (nats for the cross-entropy metrics, an error rate for ``"error"``).
    For ``"loss_truncated"`` the uniform cost is min(log K, 1) and for ``"error"`` 1 − 1/K, the
    uniform predictor's loss under that metric. For a curve of label sets (multi-label
    targets, ``curve.multilabel``) the uniform code is K·log 2 (K fair coins) and its error
    1 − 2^−K (exact set match).

    Examples:
        A curve measured at n = 10, 100 and 1000 of a pool of 2000 binary labels: the first
        10 labels cost ln 2 each (the uniform code), the next 90 the loss of the probe trained
        on 10, and so on; 10·ln 2 + 90·0.6 + 900·0.3 + 1000·0.1 = 430.93 nats.

        >>> import pandas as pd
        >>> from probemeter.curves import LossDataCurve, description_length
        >>> losses = [0.6, 0.3, 0.1]  # mean test loss (nats) of probes trained on 10, 100, 1000
        >>> points = pd.DataFrame({"n": [10, 100, 1000], "seed": 0, "loss": losses,
        ...                        "loss_truncated": losses, "accuracy": [0.7, 0.9, 0.97]})
        >>> curve = LossDataCurve("toy", points, n_classes=2, pool_size=2000, n_test=500)
        >>> print(description_length(curve))
        MDL of 'toy' at n=2000 (loss): 430.93 nats
        >>> round(description_length(curve, unit="bits").value, 1)
        621.7
    """
    unit, scale = _resolve_unit(metric, unit)
    limited = _limit(curve, n)
    cost = _first_block_cost(limited, metric, first_block) / scale
    lengths, heights = _blocks(limited, _mean_losses(limited, metric, scale), cost)
    return DescriptionLength(
        representation=curve.name,
        value=float(lengths @ heights),
        unit=unit,
        metric=metric,
        n=limited.pool_size,
        lower_bound=False,
        first_block=cost,
    )


def sdl(
    curve: LossDataCurve,
    epsilon: float,
    n: int | None = None,
    *,
    rule: str = "last",
    first_block: str | float = "uniform",
    metric: str = "loss",
    unit: str | None = None,
    delta: float | None = None,
    n_samples: int | None = None,
    uniform_loss: float | None = None,
) -> SurplusDescriptionLength:
    """SDL: surplus description length above the tolerance ε (Whitney et al., §4.1, eq. 11).

    m_SDL(φ, D, A, ε) = Σ_{i=1}^{∞} [L(A_φ, i) − ε]_+, estimated over the first N = n points by
    the left-edge Riemann sum of :func:`description_length` with every block charged [L − ε]_+ (the
    first block [c_1 − ε]_+ per point; App. A and C)::

        SDL = n_1·[c_1 − ε]_+ + Σ_{i=1}^{G} (n_{i+1} − n_i)·[L̂(n_i) − ε]_+

    The sum is the full SDL only once the loss has reached ε: the result is tight when the last
    measured mean loss L̂(n_G) ≤ ε (``rule="last"``, the practice of App. A/Table 1) or ≤ ε/2
    (``rule="half"``, Algorithm 1, which with K ≥ log(1/δ)/(2ε²) guarantees L(n_G) ≤ ε with
    probability ≥ 1 − δ); otherwise it is a lower bound.

    With ``delta``, add the Hoeffding half-width of Theorem 4 (App. A),
    :func:`hoeffding_half_width` (N, G, K, δ), with G the number of measured sizes ≤ N and
    K = ``n_samples`` (default: the number of seeds, conservative as each seed's test loss is
    itself an average). It bounds |SDL_estimate − SDL_Riemann| for a loss in [0, 1], so it needs
    ``metric="loss_truncated"`` or ``"error"``; it holds when the sample complexity is ≤ N
    (which a tight result under ``rule="half"`` certifies with probability ≥ 1 − δ).

    ``uniform_loss`` (in ``unit``): the per-example loss of the code that uses no data, which a
    cross-entropy ε must stay below (module docstring); default :func:`uniform_code_loss` of
    the curve's K. Give it for curves whose examples are not single labels (the structural
    curves' sentences, whose uniform code is their ``first_block``).

    Examples:
        The curve of :func:`description_length`'s example at ε = 0.2 nats: only the losses
        above ε count, 10·(ln 2 − 0.2) + 90·0.4 + 900·0.1 = 130.93 nats; the last loss,
        0.1 ≤ ε, makes the value tight. At ε = 0.05 the curve never gets there: a lower bound.

        >>> import pandas as pd
        >>> from probemeter.curves import LossDataCurve, sdl
        >>> losses = [0.6, 0.3, 0.1]  # mean test loss (nats) of probes trained on 10, 100, 1000
        >>> points = pd.DataFrame({"n": [10, 100, 1000], "seed": 0, "loss": losses,
        ...                        "loss_truncated": losses, "accuracy": [0.7, 0.9, 0.97]})
        >>> curve = LossDataCurve("toy", points, n_classes=2, pool_size=2000, n_test=500)
        >>> print(sdl(curve, epsilon=0.2))
        SDL, ε=0.2 of 'toy' at n=2000 (loss): 130.93 nats
        >>> print(sdl(curve, epsilon=0.05))
        SDL, ε=0.05 of 'toy' at n=2000 (loss): > 330.93 nats (lower bound)

    Raises:
        ValueError: ε not a finite number > 0, ε ≥ 1 for ``"error"``, a cross-entropy ε at or
            above the uniform code's loss (naming both, in ``unit``), or a bad ``rule``,
            ``metric``, ``unit``, ``n``, ``first_block``, ``delta`` or ``n_samples``.
    """
    unit, scale = _resolve_unit(metric, unit)
    epsilon = check_epsilon(
        epsilon,
        curve.n_classes,
        metric=metric,
        unit=unit,
        multilabel=curve.multilabel,
        uniform_loss=uniform_loss,
    )
    one_of(*RULES)(rule, "rule")
    limited = _limit(curve, n)
    losses = _mean_losses(limited, metric, scale)
    cost = _first_block_cost(limited, metric, first_block) / scale
    lengths, heights = _blocks(limited, losses, cost)
    final_loss = float(losses.iloc[-1])
    half_width = None
    if delta is not None:
        delta = check_delta(delta)
        if metric not in _BOUNDED_METRICS:
            raise ValueError(
                "the Hoeffding interval (Whitney et al., Theorem 4) needs a loss bounded in "
                f"[0, 1]; use metric='loss_truncated' or 'error', not {metric!r}"
            )
        n_samples = limited.n_seeds if n_samples is None else n_samples
        bound = hoeffding_half_width(limited.pool_size, len(losses), n_samples, delta)
        n_samples = int(n_samples)
        half_width = bound / scale
    elif n_samples is not None:
        raise ValueError("n_samples is used only for the Hoeffding interval; also pass delta")
    return SurplusDescriptionLength(
        representation=curve.name,
        value=float(lengths @ np.maximum(heights - epsilon, 0.0)),
        unit=unit,
        metric=metric,
        n=limited.pool_size,
        lower_bound=not _reached(final_loss, epsilon, rule),
        epsilon=epsilon,
        rule=rule,
        final_loss=final_loss,
        first_block=cost,
        delta=delta,
        n_samples=n_samples,
        half_width=half_width,
    )


def sample_complexity(
    curve: LossDataCurve,
    epsilon: float,
    n: int | None = None,
    *,
    rule: str = "last",
    metric: str = "loss",
    unit: str | None = None,
    uniform_loss: float | None = None,
) -> SampleComplexity:
    """εSC: the number of samples needed to reach loss ε (Whitney et al., §4.2, eq. 12).

    m_εSC(φ, D, A, ε) = min{n : L(A_φ, n) ≤ ε}, estimated as the first measured size n ≤ N with
    L̂(n) ≤ ε (``rule="last"``, as reported in App. C) or L̂(n) ≤ ε/2 (``rule="half"``,
    Algorithm 2 of App. B: with :func:`hoeffding_draws` samples per estimate the result is
    ≥ m_εSC with probability ≥ 1 − δ). When no measured size reaches the threshold, the value is
    the largest measured size with ``lower_bound=True`` ("> n_G").

    A cross-entropy ε at or above ``uniform_loss`` (in ``unit``; default
    :func:`uniform_code_loss` of the curve's K) is refused, as in :func:`sdl`.

    Examples:
        The curve of :func:`description_length`'s example: its loss first reaches 0.2 nats
        at n = 1000, and never reaches 0.05 within the sizes measured.

        >>> import pandas as pd
        >>> from probemeter.curves import LossDataCurve, sample_complexity
        >>> losses = [0.6, 0.3, 0.1]  # mean test loss (nats) of probes trained on 10, 100, 1000
        >>> points = pd.DataFrame({"n": [10, 100, 1000], "seed": 0, "loss": losses,
        ...                        "loss_truncated": losses, "accuracy": [0.7, 0.9, 0.97]})
        >>> curve = LossDataCurve("toy", points, n_classes=2, pool_size=2000, n_test=500)
        >>> print(sample_complexity(curve, epsilon=0.2))
        SC, ε=0.2 of 'toy' at n=2000 (loss): 1000 examples
        >>> result = sample_complexity(curve, epsilon=0.05)
        >>> result.format(), result.lower_bound
        ('> 1000', True)

    Raises:
        ValueError: ε not a finite number > 0, ε ≥ 1 for ``"error"``, a cross-entropy ε at or
            above the uniform code's loss (naming both, in ``unit``), or a bad ``rule``,
            ``metric``, ``unit`` or ``n``.
    """
    loss_unit, scale = _resolve_unit(metric, unit)
    epsilon = check_epsilon(
        epsilon,
        curve.n_classes,
        metric=metric,
        unit=loss_unit,
        multilabel=curve.multilabel,
        uniform_loss=uniform_loss,
    )
    one_of(*RULES)(rule, "rule")
    limited = _limit(curve, n)
    losses = _mean_losses(limited, metric, scale)
    reached = [size for size, loss in losses.items() if _reached(loss, epsilon, rule)]
    value = reached[0] if reached else losses.index[-1]
    return SampleComplexity(
        representation=curve.name,
        value=int(value),
        unit="examples",
        metric=metric,
        n=limited.pool_size,
        lower_bound=not reached,
        epsilon=epsilon,
        rule=rule,
        loss_unit=loss_unit,
    )


def sample_complexity_for_accuracy(
    curve: LossDataCurve, accuracy: float, n: int | None = None, *, rule: str = "last"
) -> SampleComplexity:
    """εSC for a target accuracy a: ``sample_complexity`` of the 0–1 loss with ε = 1 − a
    (Whitney et al., §4.2, "objectives other than negative log-likelihood").

    For a below the float resolution at 1 (a < 2⁻⁵³, where 1 − a rounds to 1, an ε the 0–1 loss
    refuses), ε is the largest float below 1: any accuracy of at least 2⁻⁵³ reaches it, and an
    accuracy of 0 does not.
    """
    check_scalar(accuracy, "accuracy", float, min_val=0, max_val=1, include_boundaries="neither")
    epsilon = min(1.0 - accuracy, math.nextafter(1.0, 0.0))
    return sample_complexity(curve, epsilon, n, rule=rule, metric="error")


def uniform_code_loss(
    n_classes: int, *, metric: str = "loss", unit: str | None = None, multilabel: bool = False
) -> float:
    """The per-example loss, in ``unit``, of the uniform code over ``n_classes`` (K) classes
    under ``metric``: the loss of a predictor that has seen no data.

    ``"loss"``: ln K nats (log2 K bits); for label sets (``multilabel``) K·ln 2 nats (K bits),
    K independent fair coins. ``"loss_truncated"``: that, clipped at 1 nat. ``"error"``:
    1 − 1/K (1 − 2^−K for label sets, exact set match), the expected error of a uniform guess.

    Raises:
        ValueError: ``n_classes`` below 1 (2 without ``multilabel``), or a bad ``metric`` or
            ``unit``.
    """
    unit, scale = _resolve_unit(metric, unit)
    check_scalar(n_classes, "n_classes", int, min_val=1 if multilabel else 2)
    nats = uniform_nats(int(n_classes), multilabel)
    # label sets: the uniform guess gets a set right with probability 2^-K
    guessed = 0.5**n_classes if multilabel else 1.0 / n_classes
    losses = {"loss": nats, "loss_truncated": min(nats, 1.0), "error": 1.0 - guessed}
    return losses[metric] / scale


def check_epsilon(
    epsilon: float,
    n_classes: int,
    *,
    metric: str = "loss",
    unit: str | None = None,
    multilabel: bool = False,
    uniform_loss: float | None = None,
    name: str = "epsilon",
) -> float:
    """ε as SDL and εSC accept it, as a float: finite and > 0; below 1 for the 0–1 loss
    (``metric="error"``); for the cross-entropy metrics below the uniform code's loss over
    ``n_classes`` classes in ``unit`` (:func:`uniform_code_loss`; ``uniform_loss`` instead,
    when given), which a code meets without seeing data (module docstring).

    For checking an ε before anything is trained (the command line, experiment files);
    ``name`` is the argument as the caller knows it (e.g. ``"--epsilon"``).

    Raises:
        ValueError: one line naming ``name``, its value and unit and, for the cross-entropy,
            the uniform code's loss (``ln K``, ``K·ln 2`` for label sets) in the same unit.
    """
    unit, _ = _resolve_unit(metric, unit)
    upper = 1 if metric == "error" else None
    epsilon = float(
        check_scalar(epsilon, name, float, min_val=0, max_val=upper, include_boundaries="neither")
    )
    if metric == "error":
        return epsilon
    if uniform_loss is not None:
        limit = float(check_scalar(uniform_loss, "uniform_loss", float, min_val=0))
        named = f"uniform_loss = {limit:.4g} {unit}"
    else:
        k = n_classes
        limit = uniform_code_loss(k, metric=metric, unit=unit, multilabel=multilabel)
        if multilabel:
            formula = "K·ln 2" if unit == "nats" else "K"
            code = f"K = {k} labels of a label set, one fair coin each"
        else:
            formula = "ln K" if unit == "nats" else "log2 K"
            code = f"K = {k} classes"
        if metric == "loss_truncated":
            formula = f"min({formula}, {'1' if unit == 'nats' else '1/ln 2'})"
        named = f"{formula} = {limit:.4g} {unit}, the loss of the uniform code over {code}"
    if epsilon >= limit:
        raise ValueError(
            f"{name} = {epsilon:g} {unit} is at or above {named}: a code that uses no data "
            "meets it, so SDL and εSC would not measure the representation; give "
            f"{name} below {limit:.4g} {unit}"
        )
    return epsilon


def hoeffding_half_width(n_total: int, n_estimates: int, n_samples: int, delta: float) -> float:
    """Half-width of the SDL confidence interval of Whitney et al., Theorem 4 (App. A).

    N·sqrt(log(2G/δ) / (2K)) for a loss in [0, 1]: each of the G estimated losses is within
    sqrt(log(2G/δ)/(2K)) of its mean with probability ≥ 1 − δ/G (Hoeffding, K samples), so by a
    union bound all are, and a sum of N terms is then within N times that. With every n in 1..M
    measured (N = G = M) this is the paper's M·sqrt(log(2M/δ)/(2K)).
    """
    delta = check_delta(delta)
    for name, count in (
        ("n_total", n_total),
        ("n_estimates", n_estimates),
        ("n_samples", n_samples),
    ):
        check_scalar(count, name, int, min_val=1)
    return n_total * math.sqrt(math.log(2 * n_estimates / delta) / (2 * n_samples))


def hoeffding_draws(epsilon: float, delta: float, rounds: int) -> int:
    """Independent draws per loss estimate for Algorithm 2 (Whitney et al., Theorem 5, App. B).

    S = ⌈2·log(20k/δ) / ε²⌉ for k rounds of the 10-bin recursive grid search: each estimate is
    then within ε/2 of its mean with probability ≥ 1 − δ/(10k), and by a union bound all 10k
    estimates are, for a loss bounded in [0, 1] (:func:`evaluations_per_size` with M = 10k).
    """
    epsilon = _check_epsilon(epsilon, "error")
    check_scalar(rounds, "rounds", int, min_val=1)
    return evaluations_per_size(epsilon, delta, 10 * int(rounds))


def evaluations_per_size(epsilon: float, delta: float, n_estimates: int) -> int:
    """Theorem 5's S: independent draws per loss estimate so that all of ``n_estimates`` (M)
    estimates are within ε/2 of their means with probability ≥ 1 − δ (Whitney et al., App. B).

    S = ⌈2·ln(2M/δ) / ε²⌉: Hoeffding for a loss in [0, 1] gives
    P(|L̂ − L| ≥ ε/2) ≤ 2·exp(−S·ε²/2) ≤ δ/M, and a union bound over the M estimates gives δ.
    Algorithm 2 with k rounds of 10 bins consults M = 10k sizes, so S = 2·log(20k/δ)/ε²
    (:func:`probemeter.curves.measures.hoeffding_draws`).

    Raises:
        ValueError: ε ≤ 0 or not finite, δ outside (0, 1), or M < 1, naming the argument.
    """
    epsilon = float(
        check_scalar(epsilon, "epsilon", float, min_val=0, include_boundaries="neither")
    )
    delta = check_delta(delta)
    check_scalar(n_estimates, "n_estimates", int, min_val=1)
    return math.ceil(2.0 * math.log(2.0 * int(n_estimates) / delta) / epsilon**2)


def _resolve_unit(metric: str, unit: str | None) -> tuple[str, float]:
    """The output unit for ``metric`` and the divisor that converts the curve's values to it."""
    one_of(*METRICS)(metric, "metric")
    allowed = ("errors",) if metric == "error" else ("nats", "bits")
    unit = one_of(*allowed)(allowed[0] if unit is None else unit, f"unit for metric {metric!r}")
    return unit, _UNIT_SCALES[unit]


def _mean_losses(curve: LossDataCurve, metric: str, scale: float) -> pd.Series:
    """L̂(n), the mean over seeds at each measured n (ascending), in the output unit."""
    if metric == "error":
        return 1.0 - curve.mean("accuracy")
    return curve.mean(metric) / scale


def _limit(curve: LossDataCurve, n: int | None) -> LossDataCurve:
    """The curve restricted to the first n pool points (sizes ≤ n), with n checked."""
    if n is None:
        return curve
    check_scalar(n, "n", int)
    smallest = int(curve.sizes[0])
    if n < smallest:
        raise ValueError(f"n={n} is below the smallest measured size {smallest}")
    if n > curve.pool_size:
        raise ValueError(f"n={n} exceeds the pool size {curve.pool_size}")
    return curve.truncate(int(n))


def _blocks(
    curve: LossDataCurve, losses: pd.Series, first_cost: float
) -> tuple[np.ndarray, np.ndarray]:
    """Block lengths n_1, n_2 − n_1, …, N − n_G and their left-edge heights c_1, L̂(n_1), …,
    L̂(n_G) (Whitney et al., App. C)."""
    sizes = losses.index.to_numpy()
    lengths = np.diff(np.concatenate([[0], sizes, [curve.pool_size]])).astype(float)
    heights = np.concatenate([[first_cost], losses.to_numpy(dtype=float)])
    return lengths, heights


def _first_block_cost(curve: LossDataCurve, metric: str, first_block: str | float) -> float:
    """Per-example cost of the first block in the curve's unit (nats, or errors)."""
    if isinstance(first_block, str):
        if first_block != "uniform":
            raise ValueError(f"first_block must be 'uniform' or a number; got {first_block!r}")
        unit = "errors" if metric == "error" else "nats"
        return uniform_code_loss(
            curve.n_classes, metric=metric, unit=unit, multilabel=curve.multilabel
        )
    upper = 1 if metric in _BOUNDED_METRICS else None
    return float(check_scalar(first_block, "first_block", float, min_val=0, max_val=upper))


def _check_epsilon(epsilon: float, metric: str) -> float:
    """ε as a float > 0, and < 1 for the 0–1 loss (``metric="error"``)."""
    upper = 1 if metric == "error" else None
    return float(
        check_scalar(
            epsilon, "epsilon", float, min_val=0, max_val=upper, include_boundaries="neither"
        )
    )


def _reached(loss: float, epsilon: float, rule: str) -> bool:
    """Whether an estimated loss counts as reaching ε under ``rule``."""
    return loss <= (epsilon if rule == "last" else epsilon / 2)


def _format_number(value: float, digits: int) -> str:
    if isinstance(value, (int, np.integer)):
        return str(value)
    return f"{value:.{digits}f}"

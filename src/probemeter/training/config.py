"""How probes are trained, one frozen value per trainer family, passed whole to the trainer:

* :class:`TrainingConfig`: the batched engine's (:func:`~probemeter.training.engine.fit_evaluate`:
  loss-data curves, online codes, paired comparisons) and the Pareto linear probes';
* :class:`VariationalTraining`: the variational code's probes
  (:func:`~probemeter.mdl.variational.variational_codelength`);
* :class:`ParserTraining`: the biaffine parsers of Pareto probing
  (:func:`~probemeter.pareto.biaffine.fit_biaffine_parsers`);
* :class:`StructuralTraining`: Hewitt & Manning's structural probes
  (:mod:`probemeter.structural.training`);
* :class:`CCSTraining`: Burns et al.'s contrast-consistent search on contrast pairs
  (:mod:`probemeter.training.ccs`).

A trainer given no value trains with its method's default, declared once: the class's defaults
(loss-data curves, structural probes) or a constant next to the method (e.g.
:data:`probemeter.mdl.defaults.PAPER_TRAINING`), from which the experiment-file options take
their defaults too. This module imports no torch, so methods and the command line read the
defaults without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from probemeter._validation import boolean, check_scalar, one_of, positive

__all__ = [
    "AUTO_PRECISION",
    "BF16_MIN_ROWS",
    "GRID_OPTIONS",
    "NEWTON_MAX_ITER",
    "NEWTON_TOL",
    "PRECISIONS",
    "SOLVERS",
    "SOLVER_OPTIONS",
    "CCSTraining",
    "ParserTraining",
    "StructuralTraining",
    "TrainingConfig",
    "VariationalTraining",
    "c_for_weight_decay",
    "config_or_default",
    "grid_settings",
    "newton_option_problem",
    "weight_decay_for_c",
]

#: ``precision = "auto"``: bf16 where the device does it natively and measurably faster, else
#: f32, decided at start-up (:mod:`probemeter.training.precision`)
AUTO_PRECISION = "auto"
#: arithmetic precisions of training, and "auto", which resolves to one of them before training
PRECISIONS = ("f32", "bf16", AUTO_PRECISION)
#: in bf16 mode, chunks with narrower minibatches train in f32 (they are memory-bound)
BF16_MIN_ROWS = 64
#: how a :class:`TrainingConfig` trains its probes: Adam steps, or the exact Newton solver of
#: linear probes (:mod:`probemeter.training.newton`)
SOLVERS = ("adam", "newton")
#: the Newton solver's default tolerance on ‖∇J‖₂ and its iteration cap (see TrainingConfig)
NEWTON_TOL, NEWTON_MAX_ITER = 1e-5, 100
#: the methods' options of the solver, declared once (keyword arguments of
#: :func:`probemeter._declared.option`): the curve's, k-sparse's and the online code's
SOLVER_OPTIONS: dict[str, dict[str, Any]] = {
    "solver": {
        "default": "adam",
        "check": one_of(*SOLVERS),
        "help": "adam (the papers' protocols) or newton: a linear probe with weight_decay > 0 "
        "solved exactly, full batch, by Newton-CG to ||grad J||_2 <= tol (the Adam settings "
        "steps, lr, batch_size, precision and early stopping then do not act; a grid varies "
        "weight_decay only)",
        "key_omits": "adam",
    },
    "tol": {
        "default": NEWTON_TOL,
        "check": positive(),
        "help": "solver = newton: the gradient norm ||grad J||_2 at which each probe stops (the "
        "objective left is then at most about tol^2/(2 weight_decay))",
        "key_omits": NEWTON_TOL,
    },
}


def newton_option_problem(
    probe: Sequence[int], weight_decays: Sequence[float], *, lr_grid: bool, fitted: str
) -> tuple[str, str] | None:
    """Where a method's ``solver = "newton"`` cannot apply, as (the option to blame, one line),
    or None: a probe with ``probe`` hidden layers, a weight decay (or a grid's) of 0, a grid
    over the learning rate (``lr_grid``: the solver has none). ``fitted`` names what each probe
    fits (``"subset"``, ``"block"``) in the message; shared by the methods with
    :data:`SOLVER_OPTIONS`, which refuse with it before any work."""
    if probe:
        return (
            "solver",
            f"newton solves linear probes only; the probe has hidden layers {list(probe)} "
            "(set probe = [] or solver = adam)",
        )
    if min(weight_decays) <= 0:
        return (
            "weight_decay",
            f"solver = newton needs weight_decay > 0 (without the L2 penalty a separable "
            f"{fitted}'s objective has no minimiser)",
        )
    if lr_grid:
        return (
            "lr",
            "solver = newton does not use a learning rate: its grid varies weight_decay only",
        )
    return None


#: the :class:`TrainingConfig` settings a grid may vary (:func:`grid_settings`), in the order
#: its settings are listed: weight decay outer, learning rate inner
GRID_OPTIONS = ("weight_decay", "lr")


@dataclass(frozen=True)
class TrainingConfig:
    """How every probe of an engine call is trained: a fixed number of Adam updates on
    minibatches (default), or per-probe early stopping with learning-rate annealing
    (``early_stopping=True``). The defaults are the loss-data curve's protocol (Whitney et al.,
    App. C.1).

    Args:
        steps: Adam updates per probe, the same at every subset size (stopping rule: fixed).
        batch_size: minibatch size; a probe with n < batch_size trains full-batch on its n.
        lr: Adam learning rate (1e-4 in Whitney et al., App. C.1).
        precision: ``"f32"`` (default) or ``"bf16"``: bf16 matmuls with f32 master weights,
            f32 Adam state and f32 loss, for probes whose minibatches have at least 64 rows
            (narrower ones are bound by memory traffic, not arithmetic, and train in f32);
            evaluation is always f32. ``"auto"``: bf16 where the device does bf16 natively
            and a timed matmul of the engine's shapes runs at least 1.3× faster in it, else
            f32, measured once per process (:mod:`probemeter.training.precision`) and resolved
            before training; curves record the choice, its reason and both rates
            (``metadata["precision"]``). f32 is the default: its numbers are the same on every
            machine.
        early_stopping: instead of ``steps`` fixed updates, the protocol of Voita & Titov §3.1
            (Hewitt & Liang 2019), per probe, inside the batched run: ``dev_fraction`` of each
            probe's subset is its development set; after every epoch on the rest, an epoch
            without a new development minimum multiplies the probe's learning rate by
            ``lr_decay``; ``patience`` such epochs in a row (or ``max_epochs``) stop it; its
            best-development parameters are kept (:mod:`probemeter.training.early_stopping`). The
            paper uses ``lr=1e-3``.
        dev_fraction, lr_decay, patience, max_epochs: settings of ``early_stopping``.
        weight_decay: λ ≥ 0 of an L2 penalty on the probe's weight matrices (every layer's
            W; not its biases, nor a scalar mix's or span pooling's parameters), added to the
            mean training loss: each probe minimises
            ``(1/b) Σ_batch ℓ(x, y) + (λ/2) Σ_layers ‖W‖²``, so Adam's gradient of W is
            ``g + λ W`` (weight decay coupled to the gradient, ``torch.optim.Adam``'s, not
            AdamW's decoupled one). A linear probe trained full-batch at
            **λ = 1 / (C n) for K ≥ 3 classes and λ = 2 / (C n) for K = 2** minimises
            scikit-learn's ``LogisticRegression(C=C)`` objective on its n training examples
            (:func:`weight_decay_for_c`, which derives both; C from λ:
            :func:`c_for_weight_decay`). 0 (the default): no penalty, and no extra operation.
        solver: ``"adam"`` (default: the settings above, the papers' protocols) or
            ``"newton"``: a linear probe with ``weight_decay`` λ > 0 solved exactly, full batch,
            by stacked Newton–CG (:mod:`probemeter.training.newton`) until ‖∇J‖₂ ≤ ``tol`` for
            J = mean loss + (λ/2)‖W‖² (at most :data:`NEWTON_MAX_ITER` iterations; a probe
            that reaches them is reported). ``steps``, ``batch_size``, ``lr`` and ``precision``
            do not act on it (its key leaves them out); refused (one line, before any work)
            with ``early_stopping``, with λ = 0 (separable data have no minimiser), and by the
            engine for a probe with hidden layers, a mix or span stage, or a direction family.
        tol: the Newton solver's stopping tolerance on ‖∇J‖₂ (W and b, float64); the objective
            left to gain is then at most ≈ tol²/(2λ) (1e-5: ≤ 5e-11/λ nats).
    """

    steps: int = 1000
    batch_size: int = 256
    lr: float = 1e-4
    precision: str = "f32"
    early_stopping: bool = False
    dev_fraction: float = 0.1
    lr_decay: float = 0.5
    patience: int = 4
    max_epochs: int = 100
    weight_decay: float = 0.0
    solver: str = "adam"
    tol: float = NEWTON_TOL

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "patience", "max_epochs"):
            value = check_scalar(getattr(self, name), name, int, min_val=1)
            object.__setattr__(self, name, int(value))
        object.__setattr__(self, "lr", float(positive()(self.lr, "lr")))
        decay = check_scalar(self.weight_decay, "weight_decay", float, min_val=0)
        object.__setattr__(self, "weight_decay", float(decay))
        one_of(*PRECISIONS)(self.precision, "precision")
        boolean()(self.early_stopping, "early_stopping")
        one_of(*SOLVERS)(self.solver, "solver")
        object.__setattr__(self, "tol", float(positive()(self.tol, "tol")))
        if self.solver == "newton" and self.early_stopping:
            raise ValueError(
                "solver='newton' solves each probe's full-batch objective to tol: early_stopping "
                "does not apply to it (use solver='adam')"
            )
        if self.solver == "newton" and not self.weight_decay:
            raise ValueError(
                "solver='newton' needs weight_decay > 0: without the L2 penalty a separable "
                "subset's objective has no minimiser"
            )
        for name in ("dev_fraction", "lr_decay"):
            value = check_scalar(
                getattr(self, name), name, float, min_val=0, max_val=1, include_boundaries="neither"
            )
            object.__setattr__(self, name, float(value))

    def to_dict(self) -> dict:
        """The settings, plus the stopping rule stated explicitly (the early-stopping settings
        appear only when it is on, and ``weight_decay`` only when not 0, so that a configuration's
        key holds only the settings that act on its training)."""
        settings = asdict(self)
        del settings["solver"], settings["tol"]
        if self.solver == "newton":  # Adam's settings do not act on it
            for name in ("steps", "batch_size", "lr", "precision", "early_stopping"):
                del settings[name]
            for name in ("dev_fraction", "lr_decay", "patience", "max_epochs"):
                del settings[name]
            return {
                **settings,
                "solver": "newton",
                "tol": self.tol,
                "max_iter": NEWTON_MAX_ITER,
                "optimizer": "newton-cg, full batch (probemeter.training.newton)",
                "stopping": f"per probe, ||grad J||_2 <= {self.tol:g} or {NEWTON_MAX_ITER} "
                "iterations (reported)",
            }
        if not self.weight_decay:
            del settings["weight_decay"]
        if not self.early_stopping:
            for name in ("early_stopping", "dev_fraction", "lr_decay", "patience", "max_epochs"):
                del settings[name]
            return {**settings, "optimizer": "adam", "stopping": f"fixed {self.steps} steps"}
        del settings["steps"]
        stopping = (
            f"early stopping per probe on a {self.dev_fraction:g} dev split of its subset: "
            f"lr x{self.lr_decay:g} after an epoch without a new dev minimum, stop after "
            f"{self.patience} such epochs in a row or {self.max_epochs} epochs; best-dev "
            "parameters kept (Voita & Titov 2020, sec. 3.1)"
        )
        return {**settings, "optimizer": "adam (per-probe lr)", "stopping": stopping}

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any]) -> TrainingConfig:
        """The configuration :meth:`to_dict` described (its stated ``optimizer`` and
        ``stopping`` left out), e.g. from a result's metadata."""
        names = {item.name for item in fields(cls)}
        return cls(**{name: value for name, value in settings.items() if name in names})


def _check_positive(config: Any, *integers: str) -> None:
    """Each of ``integers`` an integer >= 1 and ``lr`` a positive number, named when not."""
    for name in integers:
        check_scalar(getattr(config, name), name, int, min_val=1)
    check_scalar(config.lr, "lr", float, min_val=0, include_boundaries="neither")


@dataclass(frozen=True)
class VariationalTraining:
    """How the variational code's probes train (Voita & Titov 2020, §3.1): Adam at a fixed
    learning rate, no annealing, for a fixed number of epochs over the whole pool.

    The paper trains for 200 epochs at lr 1e-3 ("long training is recommended to enable
    pruning"); the default, :data:`probemeter.mdl.defaults.VARIATIONAL_TRAINING`, trains 30
    epochs at lr 1e-2, which prunes in reach of a CPU.

    Attributes:
        epochs: passes over the pool.
        batch_size: minibatch size.
        lr: Adam's learning rate.
    """

    epochs: int
    batch_size: int
    lr: float

    def __post_init__(self) -> None:
        _check_positive(self, "epochs", "batch_size")

    def to_dict(self) -> dict[str, Any]:
        """The settings, with the optimiser, stopping rule and loss stated (results' metadata)."""
        return {
            "optimizer": "adam",
            "lr": float(self.lr),
            "batch_size": int(self.batch_size),
            "epochs": int(self.epochs),
            "stopping": f"fixed {self.epochs} epochs, no lr annealing (Voita & Titov sec. 3.1)",
            "loss": "KL(beta||alpha)/n + mean expected cross-entropy (eq. 3 / n)",
        }


@dataclass(frozen=True)
class ParserTraining:
    """How the biaffine parsers of Pareto probing train (Pimentel et al. 2020, App. B): Adam on
    minibatches of whole sentences for a fixed number of updates. The default is
    :data:`probemeter.pareto.defaults.PARSER_TRAINING`.

    Attributes:
        steps: Adam updates.
        batch_sentences: sentences per minibatch (all of them when there are fewer).
        lr: Adam's learning rate.
    """

    steps: int
    batch_sentences: int
    lr: float

    def __post_init__(self) -> None:
        _check_positive(self, "steps", "batch_sentences")


@dataclass(frozen=True)
class StructuralTraining:
    """How every structural probe is trained (Hewitt & Manning 2019, §3: Adam, lr 1e-3,
    minibatches of sentences). The defaults are the ``structural`` method's.

    Attributes:
        epochs: passes over each probe's own training sentences (the stopping rule: a fixed
            number of epochs, no early stopping).
        batch_size: sentences per minibatch (a probe with fewer sentences uses them all).
        lr: Adam's learning rate (β = (0.9, 0.999), ε = 1e-8).
        random_state: the global seed of initial weights and minibatch orders.
    """

    epochs: int = 30
    batch_size: int = 20
    lr: float = 1e-3
    random_state: int = 0

    def __post_init__(self) -> None:
        _check_positive(self, "epochs", "batch_size")
        check_scalar(self.random_state, "random_state", int, min_val=0)

    def to_dict(self) -> dict[str, object]:
        return {
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "lr": self.lr,
            "random_state": self.random_state,
            "optimizer": "Adam(betas=(0.9, 0.999), eps=1e-8)",
            "stopping": "fixed number of epochs",
        }


@dataclass(frozen=True)
class CCSTraining:
    """How contrast-consistent search trains (Burns et al. 2023, §2.2 and the authors' code):
    every probe full batch on its whole subset, from ``restarts`` random initialisations
    (nn.Linear's U(−1/√d, 1/√d)), each for ``epochs`` AdamW steps; the restart with the lowest
    unsupervised loss on the subset is kept.

    Attributes:
        epochs: full-batch steps per restart (the paper's 1000).
        lr: AdamW's learning rate (the paper's 1e-3; β = (0.9, 0.999), ε = 1e-8).
        weight_decay: AdamW's decoupled weight decay on θ and b (the authors' code: 0.01).
        restarts: random initialisations per probe (the authors' code: 10).
    """

    epochs: int = 1000
    lr: float = 1e-3
    weight_decay: float = 0.01
    restarts: int = 10

    def __post_init__(self) -> None:
        _check_positive(self, "epochs", "restarts")
        check_scalar(self.weight_decay, "weight_decay", (int, float), min_val=0)

    def to_dict(self) -> dict[str, object]:
        return {
            "epochs": self.epochs,
            "lr": self.lr,
            "weight_decay": self.weight_decay,
            "restarts": self.restarts,
            "optimizer": "AdamW(betas=(0.9, 0.999), eps=1e-8), full batch",
            "stopping": "fixed number of epochs; the restart of lowest unsupervised loss kept",
        }


def grid_settings(
    config: TrainingConfig, grid: Mapping[str, Sequence[float]] | None
) -> list[TrainingConfig]:
    """Every setting of a grid: ``config`` with each combination of the values ``grid`` gives
    of :data:`GRID_OPTIONS` (``{"weight_decay": [...], "lr": [...]}``; an option left out
    keeps ``config``'s value), weight decay outer, learning rate inner. ``[config]`` when
    ``grid`` is None.

    Raises:
        ValueError: naming ``grid``, a key that is not a grid option or a list of values that
            is empty or repeats one; naming the option, a value it refuses.
    """
    if grid is None:
        return [config]
    if not isinstance(grid, Mapping):
        raise ValueError(f"grid must map {list(GRID_OPTIONS)} to lists of values; got {grid!r}")
    unknown = set(grid) - set(GRID_OPTIONS)
    if unknown:
        raise ValueError(
            f"grid: {sorted(unknown)} cannot be varied; a grid varies {list(GRID_OPTIONS)}"
        )
    values = {}
    for name in GRID_OPTIONS:
        given = grid.get(name, [getattr(config, name)])
        if isinstance(given, (str, bytes)) or not isinstance(given, Sequence) or not given:
            raise ValueError(f"grid[{name!r}] must be a non-empty list of values; got {given!r}")
        if len(set(given)) != len(given):
            raise ValueError(f"grid[{name!r}] repeats a value: {list(given)}")
        values[name] = list(given)
    if config.solver == "newton" and len(values["lr"]) > 1:
        raise ValueError(
            "grid['lr']: solver='newton' does not use a learning rate; its grid varies "
            "weight_decay only"
        )
    return [
        replace(config, weight_decay=decay, lr=lr)
        for decay in values["weight_decay"]
        for lr in values["lr"]
    ]


def weight_decay_for_c(C: float, n: int, n_classes: int, *, multilabel: bool = False) -> float:
    """The ``weight_decay`` λ at which a linear probe minimises scikit-learn's
    ``LogisticRegression(C=C)`` objective on n training examples (intercepts unpenalised in
    both): λ = 1/(C·n) for K ≥ 3 classes, **λ = 2/(C·n)** for K = 2, and 1/(C·n) for
    multi-label probes (K sigmoids) at any K.

    A probe of K softmax columns (W, b) minimises, full-batch,
    ``J(W, b) = (1/n) Σ_i ℓ_i + (λ/2) ‖W‖²`` (every column penalised). scikit-learn minimises
    ``C Σ_i ℓ_i + ½ ‖w‖²``, i.e. ``(1/n) Σ_i ℓ_i + ‖w‖² / (2 C n)`` after dividing by C·n:

    * **K ≥ 3**: its multinomial model has K columns, all penalised, the probe's
      parameterisation: the same objective when λ/2 = 1/(2Cn), **λ = 1/(C n)**. (At the
      optimum of either, the gradient in W is Xᵀ(P − Y)/n + λW, whose product with the ones
      vector is λ·W·1 since each row of P − Y sums to 0, so the columns sum to zero: the
      minimiser is unique in W, the intercepts are unique up to a common constant.)
    * **K = 2**: scikit-learn's binary model has one log-odds vector v (and intercept c), the
      probe two columns w₀, w₁ whose log-odds are v = w₁ − w₀. For a given v the penalty
      ‖w₀‖² + ‖w₁‖² is smallest at w₁ = −w₀ = v/2 (the optimum's columns sum to zero, as
      above), where it is ‖v‖²/2: the probe pays (λ/2)·‖v‖²/2 = (λ/4)‖v‖², scikit-learn
      ‖v‖²/(2Cn), the same when **λ = 2/(C n)**. At 1/(C n) the probe's log-odds would be
      those of scikit-learn's at 2C: its weights differed by 14–32 % at C = 1, 0.1, 0.01
      (issue 40, item 1), by 6–42 % on the test's data.
    * **multi-label** (K sigmoids, binary cross-entropy summed over labels): the objective
      is a sum over labels of one binary logistic regression each, penalised (λ/2)‖w_k‖²,
      scikit-learn's binary model per label (``OneVsRestClassifier``) at λ = 1/(C n).

    Each holds for the full-batch objective; minibatches and a fixed number of steps
    approximate its minimiser as well as their training does.

    Args:
        C: scikit-learn's inverse regularisation strength, > 0.
        n: training examples of the probe, ≥ 1.
        n_classes: K, the probe's outputs (classes, or labels with ``multilabel``), ≥ 2.
        multilabel: K sigmoid outputs (float 0/1 targets) instead of a softmax.

    Returns:
        λ, float.

    Raises:
        ValueError: naming the argument, a value out of range.

    References:
        scikit-learn user guide, "Logistic regression" (the objectives of
        ``LogisticRegression``: binary ``C Σ_i ℓ_i + ½‖w‖²``, multinomial with a
        ``½‖W‖_F²`` penalty on all K columns, intercepts unpenalised).
        https://scikit-learn.org/stable/modules/linear_model.html#logistic-regression

        probemeter issue 40, item 1: the derivation for K = 2 and the measured 14–32 % at
        λ = 1/(C n); ``tests/training/test_weight_decay.py`` checks every case against
        scikit-learn at a converged optimum (K = 2, 3, 10 and two labels; C = 0.01, 0.1, 1).
    """
    C = check_scalar(C, "C", float, min_val=0, include_boundaries="neither")
    n = check_scalar(n, "n", int, min_val=1)
    n_classes = check_scalar(n_classes, "n_classes", int, min_val=2)
    boolean()(multilabel, "multilabel")
    scale = 2.0 if n_classes == 2 and not multilabel else 1.0
    return scale / (float(C) * int(n))


def c_for_weight_decay(
    weight_decay: float, n: int, n_classes: int, *, multilabel: bool = False
) -> float:
    """scikit-learn's C whose ``LogisticRegression(C=C)`` a linear probe trained at
    ``weight_decay`` λ > 0 on n examples minimises: C = 1/(λ n) for K ≥ 3 (and multi-label
    probes), C = 2/(λ n) for K = 2: the inverse of :func:`weight_decay_for_c` (λ = s/(C n) ⇔
    C = s/(λ n), the same map), whose docstring derives both.

    Raises:
        ValueError: naming the argument, a value out of range (λ = 0 has no C).
    """
    decay = check_scalar(
        weight_decay, "weight_decay", float, min_val=0, include_boundaries="neither"
    )
    # λ = s/(C n) ⇔ C = s/(λ n): the same map, applied to λ
    return weight_decay_for_c(decay, n, n_classes, multilabel=multilabel)


def config_or_default(config: Any, default: Any) -> Any:
    """A trainer's ``config`` argument: ``default`` when None, else ``config`` itself, which
    must be of ``default``'s class.

    Raises:
        ValueError: naming ``config``, a value of another class.
    """
    if config is None:
        return default
    if not isinstance(config, type(default)):
        raise ValueError(
            f"config must be a {type(default).__name__} (None: the default, {default}); got "
            f"{config!r}"
        )
    return config

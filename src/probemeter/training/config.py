"""How every probe is trained: :class:`TrainingConfig`, the optimisation settings shared by all
probes of one engine call."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from probemeter._validation import boolean, check_scalar, one_of, positive

__all__ = ["BF16_MIN_ROWS", "PRECISIONS", "TrainingConfig"]

#: arithmetic precisions of training
PRECISIONS = ("f32", "bf16")
#: in bf16 mode, chunks with narrower minibatches train in f32 (they are memory-bound)
BF16_MIN_ROWS = 64


@dataclass(frozen=True)
class TrainingConfig:
    """How every probe is trained: a fixed number of Adam updates on minibatches (default), or
    per-probe early stopping with learning-rate annealing (``early_stopping=True``).

    Args:
        steps: Adam updates per probe, the same at every subset size (stopping rule: fixed).
        batch_size: minibatch size; a probe with n < batch_size trains full-batch on its n.
        lr: Adam learning rate (1e-4 in Whitney et al., App. C.1).
        precision: ``"f32"`` (default) or ``"bf16"``: bf16 matmuls with f32 master weights,
            f32 Adam state and f32 loss, for probes whose minibatches have at least 64 rows
            (narrower ones are bound by memory traffic, not arithmetic, and train in f32);
            evaluation is always f32.
        early_stopping: instead of ``steps`` fixed updates, the protocol of Voita & Titov §3.1
            (Hewitt & Liang 2019), per probe, inside the batched run: ``dev_fraction`` of each
            probe's subset is its development set; after every epoch on the rest, an epoch
            without a new development minimum multiplies the probe's learning rate by
            ``lr_decay``; ``patience`` such epochs in a row (or ``max_epochs``) stop it; its
            best-development parameters are kept (:mod:`probemeter.training.early_stopping`). The
            paper uses ``lr=1e-3``.
        dev_fraction, lr_decay, patience, max_epochs: settings of ``early_stopping``.
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

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "patience", "max_epochs"):
            value = check_scalar(getattr(self, name), name, int, min_val=1)
            object.__setattr__(self, name, int(value))
        object.__setattr__(self, "lr", float(positive()(self.lr, "lr")))
        one_of(*PRECISIONS)(self.precision, "precision")
        boolean()(self.early_stopping, "early_stopping")
        for name in ("dev_fraction", "lr_decay"):
            value = check_scalar(
                getattr(self, name), name, float, min_val=0, max_val=1, include_boundaries="neither"
            )
            object.__setattr__(self, name, float(value))

    def to_dict(self) -> dict:
        """The settings, plus the stopping rule stated explicitly (the early-stopping settings
        appear only when it is on, so fixed-steps configurations keep their old keys)."""
        settings = asdict(self)
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

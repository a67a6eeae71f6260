"""Training probes: the batched engine (all probes at once, stacked on a probe axis) and per-probe
early stopping on a dev split.
"""

from probemeter._lazy import lazy_exports

_EXPORTS = {
    "BatchedAdam": ".early_stopping",
    "dev_split": ".early_stopping",
    "stacked_losses": ".early_stopping",
    "train_with_dev_stopping": ".early_stopping",
    "ProbeEvaluation": ".engine",
    "TrainingConfig": ".engine",
    "fit_evaluate": ".engine",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

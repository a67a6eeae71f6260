"""Training probes: the settings of every trainer (``config``), the batched engine (all probes
at once, stacked on a probe axis), its memory budget (``memory``), per-probe early stopping on a
development set, the worker processes' link to their parent (``workers``), features held in
shared memory for them (``shared_memory``), and contrast-consistent search on contrast pairs
(``ccs``).
"""

from probemeter._lazy import lazy_exports

_EXPORTS = {
    "BatchedAdam": ".early_stopping",
    "dev_split": ".early_stopping",
    "train_with_dev_stopping": ".early_stopping",
    "TrainingConfig": ".config",
    "VariationalTraining": ".config",
    "ParserTraining": ".config",
    "StructuralTraining": ".config",
    "CCSTraining": ".config",
    "CCSFits": ".ccs",
    "fit_ccs": ".ccs",
    "grid_settings": ".config",
    "weight_decay_for_c": ".config",
    "c_for_weight_decay": ".config",
    "ProbeEvaluation": ".engine",
    "fit_evaluate": ".engine",
    "warm_workers": ".engine",
    "MemoryEstimate": ".memory",
    "check_memory_budget": ".memory",
    "estimate_memory": ".memory",
    "share_data": ".shared_memory",
    "share_for_workers": ".shared_memory",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""k-sparse probes (Gurnee et al., *Finding Neurons in a Haystack: Case Studies with Sparse
Probing*, TMLR 2023): features — neurons or SAE latents — ranked on the training pool alone (the
difference of class means, or the order of entry on an L1 logistic-regression path), probes on
the top k for k = 1, 2, 4, …, a loss-data curve and an online code per k, the
complexity–accuracy frontier over k and its knee, chosen on a development split.

This package sits above the paper packages: it reuses the loss-data curve and measures of
:mod:`probemeter.curves`, the online code of :mod:`probemeter.mdl` and the frontiers of
:mod:`probemeter.pareto`.

References:
    Gurnee, W., Nanda, N., Pauly, M., Harvey, K., Troitskii, D. & Bertsimas, D. (2023).
    Finding Neurons in a Haystack: Case Studies with Sparse Probing. *Transactions on Machine
    Learning Research*. arXiv:2305.01610
"""

from probemeter._lazy import lazy_exports

_EXPORTS = {
    "KNEE_TOLERANCE": ".k_sparse",
    "KSparseMethod": ".method",
    "KSparseResult": ".k_sparse",
    "default_ks": ".k_sparse",
    "k_sparse_probes": ".k_sparse",
    "plot_k_sparse": ".k_sparse",
    "L1_GRID": ".ranking",
    "L1_SPAN": ".ranking",
    "RANKINGS": ".ranking",
    "mean_differences": ".ranking",
    "rank_features": ".ranking",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""Pareto probing (Pimentel et al., *Pareto Probing: Trading Off Accuracy for Complexity*):
nuclear-norm and rank linear probes (§4.1), the random MLP family (App. A), memorisation
complexity (§5), parsing tasks and the biaffine probe (App. B), baselines (App. C), Pareto
frontiers and hypervolumes (§3, Tables 2–3).

References:
    Pimentel, T., Saphra, N., Williams, A. & Cotterell, R. (2020). Pareto probing: trading off
    accuracy for complexity. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.254
    (arXiv:2010.02180)
"""

from probemeter._lazy import lazy_exports

_EXPORTS = {
    "lookup_arc_labels": ".baselines",
    "lookup_labels": ".baselines",
    "one_hot_features": ".baselines",
    "random_features": ".baselines",
    "ParserEvaluation": ".biaffine",
    "fit_biaffine_parsers": ".biaffine",
    "random_mlp_family": ".families",
    "HypervolumeTable": ".frontiers",
    "ParetoFrontiers": ".frontiers",
    "memorisation_points": ".frontiers",
    "pareto_dominant": ".frontiers",
    "pareto_frontier": ".frontiers",
    "pareto_hypervolume": ".frontiers",
    "LinearComplexityResult": ".linear_probes",
    "fit_nuclear_norm_probes": ".linear_probes",
    "fit_rank_probes": ".linear_probes",
    "matrix_rank": ".linear_probes",
    "nuclear_norm": ".linear_probes",
    "nuclear_norm_penalties": ".linear_probes",
    "nuclear_norm_subgradient": ".linear_probes",
    "MemorisationResult": ".memorisation",
    "memorisation_complexity": ".memorisation",
    "shuffle_within_sentences": ".memorisation",
    "arc_pairs": ".parsing",
    "attachment_score": ".parsing",
    "check_parse": ".parsing",
    "is_tree": ".parsing",
    "mst_heads": ".parsing",
    "sentence_offsets": ".parsing",
    "shuffle_heads": ".parsing",
    "LinearSweep": ".sweeps",
    "ParseSplit": ".sweeps",
    "least_constrained": ".sweeps",
    "linear_points": ".sweeps",
    "linear_sweep": ".sweeps",
    "mlp_family_points": ".sweeps",
    "parser_points": ".sweeps",
    "parser_sweep": ".sweeps",
    "treebank_tasks": ".sweeps",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""Minimum description length probing (Voita & Titov, *Information-Theoretic Probing with
Minimum Description Length*): the online code (§2.2, eq. 4), the variational code with
Bayesian-compression layers (§2.1, eq. 3), control tasks (§3.1) and the Table-2 layout; and a
switching code over probe families' online codes (a fixed-share mixture, Herbster & Warmuth
1998, with switching rate 1/t).

References:
    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description
    length. *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Hewitt, J. & Liang, P. (2019). Designing and interpreting probes with control tasks.
    *EMNLP-IJCNLP 2019*. arXiv:1909.03368

    Herbster, M. & Warmuth, M. K. (1998). Tracking the best expert. *Machine Learning* 32(2),
    151–178. doi:10.1023/A:1007424614876
"""

from probemeter._lazy import lazy_exports

_EXPORTS = {
    "BayesianMLP": ".bayesian",
    "StackedBayesianMLP": ".bayesian",
    "CONTROL_BEHAVIOURS": ".controls",
    "DependencyControl": ".controls",
    "OrthonormalRandomEncoder": ".controls",
    "control_task": ".controls",
    "control_task_labels": ".controls",
    "dependency_control": ".controls",
    "selectivity": ".controls",
    "shuffled_labels": ".controls",
    "BITS_PER_KBIT": ".online",
    "BITS_PER_NAT": ".online",
    "OnlineCode": ".online",
    "PAPER_PROBE": ".defaults",
    "PAPER_TIMESTEPS": ".defaults",
    "SeedResults": ".online",
    "STOPPING_SETS": ".online",
    "block_ends": ".online",
    "development_size": ".online",
    "development_split": ".online",
    "online_codelength": ".online",
    "online_codelengths": ".online",
    "paper_training": ".online",
    "transmitted_size": ".online",
    "uniform_codelength": ".online",
    "MDLEntry": ".table",
    "load_mdl_results": ".table",
    "mdl_frame": ".table",
    "mdl_frames": ".table",
    "mdl_table": ".table",
    "mdl_figure": ".table",
    "save_mdl_results": ".table",
    "GRANULARITIES": ".switching_code",
    "SwitchForward": ".switching",
    "SwitchingCode": ".switching_code",
    "best_sequences": ".switching",
    "overhead_bound": ".switching",
    "switch_forward": ".switching",
    "switching_code": ".switching_code",
    "switching_codelength": ".switching_code",
    "switching_rates": ".switching",
    "VariationalCode": ".variational",
    "variational_codelength": ".variational",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

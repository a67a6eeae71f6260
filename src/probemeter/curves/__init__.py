"""Loss-data curves and their measures (Whitney et al., *Evaluating representations by the
complexity of learning low-loss predictors*): the curve (§3), VA, MI, MDL, SDL and εSC (§3–4,
Table 1), the Table-1 comparison, Algorithm 2's refinement of εSC, results files and figures.

References:
    Whitney, W. F., Song, M. J., Brandfonbrener, D., Altosaar, J. & Cho, K. (2020).
    Evaluating representations by the complexity of learning low-loss predictors.
    arXiv:2009.07368
"""

from probemeter._lazy import lazy_exports

_EXPORTS = {
    "Comparison": ".comparison",
    "compare": ".comparison",
    "default_comparison_sizes": ".comparison",
    "LossDataCurve": ".curve",
    "default_sizes": ".curve",
    "loss_data_curve": ".curve",
    "DescriptionLength": ".measures",
    "MeasureResult": ".measures",
    "MutualInformation": ".measures",
    "SampleComplexity": ".measures",
    "SurplusDescriptionLength": ".measures",
    "ValidationPerformance": ".measures",
    "description_length": ".measures",
    "evaluations_per_size": ".measures",
    "hoeffding_draws": ".measures",
    "hoeffding_half_width": ".measures",
    "mutual_information": ".measures",
    "check_epsilon": ".measures",
    "sample_complexity": ".measures",
    "sample_complexity_for_accuracy": ".measures",
    "sdl": ".measures",
    "uniform_code_loss": ".measures",
    "validation_performance": ".measures",
    "curves_figure": ".plotting",
    "plot_curves": ".plotting",
    "Guarantee": ".refine",
    "RefinedSampleComplexity": ".refine",
    "recommend_epsilon": ".refine",
    "recursive_grid_search": ".refine",
    "refine_sample_complexity": ".refine",
    "rounds_for_width": ".refine",
    "load_curves": ".results",
    "result_frames": ".results",
    "save_results": ".results",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""Structural probes (Hewitt & Manning, *A Structural Probe for Finding Syntax in Word
Representations*, NAACL 2019): linear maps B whose squared distances ‖Bᵀ(h_i − h_j)‖² match
tree distances (distance probe) and whose squared norms ‖Bᵀh_i‖² match tree depths (depth
probe), trained as a batched family over ranks and seeds; their evaluations (UUAS, DSpr./NSpr.,
root accuracy); a codelength for their integer targets (a discretised Laplace, in nats) with
the online code and loss-data curves over sentences; Pareto frontiers of UUAS against rank.

This package sits above the paper packages: it reuses the block ends of :mod:`probemeter.mdl`,
the loss-data curve and measures of :mod:`probemeter.curves` and the frontiers of
:mod:`probemeter.pareto`.

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL-HLT 2019*. doi:10.18653/v1/N19-1419
"""

from probemeter._lazy import lazy_exports

_EXPORTS = {
    "HOLDOUT": ".trees",
    "STRUCTURAL_TIMESTEPS": ".codes",
    "StructuralCurve": ".codes",
    "StructuralOnlineCode": ".codes",
    "holdout_split": ".trees",
    "structural_curve": ".codes",
    "structural_curves": ".codes",
    "structural_online_code": ".codes",
    "structural_online_codes": ".codes",
    "SPEARMAN_LENGTHS": ".evaluation",
    "gold_edges": ".evaluation",
    "minimum_spanning_edges": ".evaluation",
    "root_correct": ".evaluation",
    "spearman_by_length": ".evaluation",
    "tree_edges": ".evaluation",
    "uuas_counts": ".evaluation",
    "StructuralFamily": ".family",
    "structural_families": ".family",
    "structural_probes": ".family",
    "StructuralLayers": ".layers",
    "structural_layers": ".layers",
    "UNIFORM_WEIGHT": ".likelihood",
    "fit_laplace_scale": ".likelihood",
    "laplace_codelengths": ".likelihood",
    "uniform_codelengths": ".likelihood",
    "Scores": ".scoring",
    "predict_sentences": ".scoring",
    "score": ".scoring",
    "ProbeSpec": ".training",
    "StructuralTraining": ".training",
    "fit_one_probe": ".training",
    "fit_structural_layers": ".training",
    "fit_structural_probes": ".training",
    "PUNCTUATION_TAGS": ".trees",
    "XPOS_PUNCTUATION_TAGS": ".trees",
    "TreeData": ".trees",
    "development_split": ".trees",
    "punctuation_rule": ".trees",
    "punctuation_tags": ".trees",
    "sentence_split": ".trees",
    "tree_depths": ".trees",
    "tree_distances": ".trees",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

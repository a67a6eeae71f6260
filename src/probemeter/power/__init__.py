"""Data requirements and statistical power of probing comparisons (Zhu et al., *On the data
requirements of probing*): paired runs on stratified splits (§4.1), McNemar's test (§3.5) and,
for words clustered in sentences, the exact sign-flip test of sentences (Obuchowski's clustered
χ² for reference), power by simulation (of the decision a verdict takes: every seed rejecting at
Holm's level), the generalisation bound and recommended training-set size (§3.4), collapse
detection (§3.6) and the Table-2 report.

References:
    Zhu, Z., Wang, J., Li, B. & Rudzicz, F. (2022). On the data requirements of probing.
    *Findings of ACL 2022*. arXiv:2202.12801

    Card, D., Henderson, P., Khandelwal, U., Jia, R., Mahowald, K. & Jurafsky, D. (2020).
    With little power comes great responsibility. *EMNLP 2020*. arXiv:2010.06595

    Fisher, R. A. (1935). *The Design of Experiments*. Oliver & Boyd. §21 (no identifier).

    Good, P. I. (2005). *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, 3rd ed.
    Springer. doi:10.1007/b138696

    Obuchowski, N. A. (1998). On the comparison of correlated proportions for clustered data.
    *Statistics in Medicine* 17(13), 1495–1507.
    doi:10.1002/(SICI)1097-0258(19980715)17:13<1495::AID-SIM863>3.0.CO;2-I

    Holm, S. (1979). A simple sequentially rejective multiple test procedure. *Scandinavian
    Journal of Statistics* 6(2), 65–70. https://www.jstor.org/stable/4615733

    McNemar, Q. (1947). Note on the sampling error of the difference between correlated
    proportions or percentages. *Psychometrika* 12(2), 153–157. doi:10.1007/BF02295996
"""

from probemeter._lazy import lazy_exports

_EXPORTS = {
    "Recommendation": ".bounds",
    "bound_multiplier": ".bounds",
    "generalization_bound": ".bounds",
    "log_function_class_size": ".bounds",
    "probe_parameter_count": ".bounds",
    "recommend_train_size": ".bounds",
    "required_train_size": ".bounds",
    "total_data_size": ".bounds",
    "ClusteredMcNemarResult": ".clustered",
    "cluster_sums": ".clustered",
    "clustered_mcnemar": ".clustered",
    "decision_power": ".clustered",
    "sentences_needed": ".clustered",
    "sign_flip_test": ".clustered",
    "DecisionPower": ".clustered",
    "SentencesNeeded": ".clustered",
    "SignFlipResult": ".clustered",
    "format_p": ".clustered",
    "holm": ".clustered",
    "CollapseVerdict": ".collapse",
    "collapse_verdict": ".collapse",
    "detect_collapse": ".collapse",
    "McNemarResult": ".mcnemar",
    "contingency_table": ".mcnemar",
    "mcnemar": ".mcnemar",
    "mcnemar_p_values": ".mcnemar",
    "ConfigurationRuns": ".paired",
    "PairedComparison": ".paired",
    "paired_data": ".paired",
    "run_configurations": ".paired",
    "Split": ".sampling",
    "pilot_splits": ".sampling",
    "rotation_splits": ".sampling",
    "stratified_split": ".sampling",
    "stratified_splits": ".sampling",
    "PowerCurve": ".simulation",
    "check_alpha": ".simulation",
    "simulate_power": ".simulation",
    "PowerReport": ".table",
    "power_frames": ".table",
    "power_report": ".table",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""probemeter: evaluate representations by how easy it is to learn a task from them.

Train many small probes on frozen features, all at once, and turn their behaviour into measures:
loss-data curves with VA, MI, MDL, SDL and εSC (Whitney et al.); online and variational MDL with
control tasks (Voita & Titov); data requirements and statistical power of comparisons (Zhu et
al.); Pareto frontiers of accuracy against probe complexity (Pimentel et al.).
"""

from probemeter.bounds import Recommendation, generalization_bound, recommend_train_size
from probemeter.collapse import CollapseVerdict, detect_collapse
from probemeter.comparison import Comparison, compare
from probemeter.curve import LossDataCurve, default_sizes, loss_data_curve
from probemeter.data import ProbeData, load_features
from probemeter.datasets import digits_representations, fashion_mnist, parity_representations
from probemeter.engine import ProbeEvaluation, TrainingConfig, fit_evaluate
from probemeter.experiment import Experiment, ExperimentError, load_experiment
from probemeter.mcnemar import McNemarResult, mcnemar
from probemeter.mdl import OnlineCode, online_codelength
from probemeter.mdl_report import MDLEntry, mdl_table
from probemeter.measures import (
    DescriptionLength,
    MutualInformation,
    SampleComplexity,
    SurplusDescriptionLength,
    ValidationPerformance,
    hoeffding_draws,
    hoeffding_half_width,
    mdl,
    mutual_information,
    sample_complexity,
    sample_complexity_for_accuracy,
    sdl,
    validation_performance,
)
from probemeter.memorisation import MemorisationResult, memorisation_complexity
from probemeter.pareto import (
    HypervolumeTable,
    ParetoFrontiers,
    pareto_dominant,
    pareto_frontier,
    pareto_hypervolume,
)
from probemeter.pareto_probing import linear_points, mlp_family_points, treebank_tasks
from probemeter.power import PairedComparison, run_configurations
from probemeter.power_report import PowerReport, power_report
from probemeter.power_simulation import PowerCurve, simulate_power
from probemeter.probes import MLP, Linear
from probemeter.probes.families import random_mlp_family
from probemeter.probes.linear_complexity import fit_nuclear_norm_probes, fit_rank_probes
from probemeter.refine import RefinedSampleComplexity, recommend_epsilon, refine_sample_complexity
from probemeter.results import load_curves, save_results
from probemeter.runner import ExperimentRun, run_experiment
from probemeter.sampling import rotation_splits, stratified_splits
from probemeter.store import ResultStore, run_units, unit_key
from probemeter.variational import VariationalCode, variational_codelength

__all__ = [
    "MLP",
    "CollapseVerdict",
    "Comparison",
    "DescriptionLength",
    "Experiment",
    "ExperimentError",
    "ExperimentRun",
    "HypervolumeTable",
    "Linear",
    "LossDataCurve",
    "MDLEntry",
    "McNemarResult",
    "MemorisationResult",
    "MutualInformation",
    "OnlineCode",
    "PairedComparison",
    "ParetoFrontiers",
    "PowerCurve",
    "PowerReport",
    "ProbeData",
    "ProbeEvaluation",
    "Recommendation",
    "RefinedSampleComplexity",
    "ResultStore",
    "SampleComplexity",
    "SurplusDescriptionLength",
    "TrainingConfig",
    "ValidationPerformance",
    "VariationalCode",
    "compare",
    "default_sizes",
    "detect_collapse",
    "digits_representations",
    "fashion_mnist",
    "fit_evaluate",
    "fit_nuclear_norm_probes",
    "fit_rank_probes",
    "generalization_bound",
    "hoeffding_draws",
    "hoeffding_half_width",
    "linear_points",
    "load_curves",
    "load_experiment",
    "load_features",
    "loss_data_curve",
    "mcnemar",
    "mdl",
    "mdl_table",
    "memorisation_complexity",
    "mlp_family_points",
    "mutual_information",
    "online_codelength",
    "pareto_dominant",
    "pareto_frontier",
    "pareto_hypervolume",
    "parity_representations",
    "power_report",
    "random_mlp_family",
    "recommend_epsilon",
    "recommend_train_size",
    "refine_sample_complexity",
    "rotation_splits",
    "run_configurations",
    "run_experiment",
    "run_units",
    "sample_complexity",
    "sample_complexity_for_accuracy",
    "save_results",
    "sdl",
    "simulate_power",
    "stratified_splits",
    "treebank_tasks",
    "unit_key",
    "validation_performance",
    "variational_codelength",
]

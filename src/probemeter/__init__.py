"""probemeter: evaluate representations by how easy it is to learn a task from them.

Train many small probes on frozen features, all at once, and turn their behaviour into measures.
One subpackage per paper:

* :mod:`probemeter.curves` — loss-data curves with VA, MI, MDL, SDL and εSC (Whitney et al.);
* :mod:`probemeter.mdl` — online and variational MDL with control tasks (Voita & Titov);
* :mod:`probemeter.power` — data requirements and statistical power of comparisons (Zhu et al.);
* :mod:`probemeter.pareto` — Pareto frontiers of accuracy against probe complexity (Pimentel et
  al.);
* :mod:`probemeter.structural` — structural probes of syntax trees (Hewitt & Manning), with
  their codelengths and rank frontiers.

The top level holds what a first user needs: data, probes (and trained probes kept for
inspection), the loss-data curve and its measures, and experiment files. Names are imported on
first use, so ``import probemeter`` is cheap.
"""

from probemeter._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    # the rooms, one per paper, and the shared ground
    "curves": ".curves",
    "mdl": ".mdl",
    "power": ".power",
    "pareto": ".pareto",
    "structural": ".structural",
    "datasets": ".datasets",
    "encoders": ".encoders",
    "probes": ".probes",
    "training": ".training",
    "runs": ".runs",
    # data and probes
    "ProbeData": ".data",
    "layer_data": ".data",
    "load_features": ".feature_files",
    "MLP": ".probes",
    "Linear": ".probes",
    "Direction": ".probes",
    "ProbeSet": ".probes",
    "SavedProbe": ".probes",
    "load_probes": ".probes",
    "ProbeDirection": ".probes",
    "pool_moments": ".data",
    "TrainingConfig": ".training",
    "Execution": "._execution",
    "digits_representations": ".datasets",
    "fashion_mnist": ".datasets",
    "parity_representations": ".datasets",
    # loss-data curves and their measures (Whitney et al.)
    "LossDataCurve": ".curves",
    "loss_data_curve": ".curves",
    "default_sizes": ".curves",
    "Comparison": ".curves",
    "compare": ".curves",
    "ValidationPerformance": ".curves",
    "MutualInformation": ".curves",
    "DescriptionLength": ".curves",
    "SurplusDescriptionLength": ".curves",
    "SampleComplexity": ".curves",
    "validation_performance": ".curves",
    "mutual_information": ".curves",
    "description_length": ".curves",
    "sdl": ".curves",
    "sample_complexity": ".curves",
    "sample_complexity_for_accuracy": ".curves",
    "refine_sample_complexity": ".curves",
    "recommend_epsilon": ".curves",
    "save_results": ".curves",
    "load_curves": ".curves",
    "result_frames": ".curves",
    # result tables as CSV or Parquet files
    "export_frames": "._exports",
    # experiment files
    "Experiment": ".runs",
    "ExperimentError": ".runs",
    "load_experiment": ".runs",
    "run_experiment": ".runs",
    "load_run_probes": ".runs",
    # probes of a TransformerLens or nnsight model in memory, and back into it
    "probe_model": ".runs",
    "ModelProbes": ".runs",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

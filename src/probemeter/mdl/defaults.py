"""The defaults of Voita & Titov's codes and of the switching code, one value each for the API
(:func:`~probemeter.mdl.online.online_codelength`,
:func:`~probemeter.mdl.variational.variational_codelength`,
:func:`~probemeter.mdl.switching_code.switching_codelength`) and the ``mdl`` and ``switching``
methods (whose options take their defaults from here), at the bottom of the package so that
both can import them."""

from __future__ import annotations

from probemeter.training.config import TrainingConfig, VariationalTraining

__all__ = [
    "MAX_SWITCHES",
    "MDL_PROBE",
    "ONLINE_SEEDS",
    "ONLINE_STOPPING_SET",
    "PAPER_PROBE",
    "PAPER_TIMESTEPS",
    "PAPER_TRAINING",
    "SWITCHING_GRANULARITY",
    "SWITCHING_RATE",
    "VARIATIONAL_TRAINING",
]

#: the timesteps of Voita & Titov (footnote 4): 0.1, 0.2, ... 50, 100 percent of the data
PAPER_TIMESTEPS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)
#: Voita & Titov's probe (§3.1, Hewitt & Liang's default): MLP-2 with h = 1000
PAPER_PROBE: tuple[int, ...] = (1000, 1000)
#: the probe's hidden widths by default, of the online and variational codes, in experiment
#: files and the API alike (:func:`~probemeter.mdl.online.online_codelength`,
#: :func:`~probemeter.mdl.variational.variational_codelength`): MLP-2 with h = 64, in reach of a
#: CPU (the paper's is :data:`PAPER_PROBE`)
MDL_PROBE: tuple[int, ...] = (64, 64)
#: the data orders (seeds) of the online codes by default, in experiment files and the API
#: alike (:func:`~probemeter.mdl.online.online_codelength`,
#: :func:`~probemeter.mdl.switching_code.switching_codelength`)
ONLINE_SEEDS = 2
#: where the online codes' probes early-stop by default, in experiment files and the API alike:
#: on a development set held out of the pool and not transmitted, the paper's protocol (§3.1)
ONLINE_STOPPING_SET = "dev"
#: how the online codes' probes train by default, in experiment files and the API alike
#: (:func:`~probemeter.mdl.online.online_codelength`): §3.1's protocol after Hewitt & Liang
#: (2019), Adam from lr 1e-3, per-probe early stopping on a development set, the learning rate
#: halved after an epoch without a new development minimum, stopped after 4 such epochs in a
#: row or 100 epochs; minibatches of 64 (the paper gives no size)
PAPER_TRAINING = TrainingConfig(
    batch_size=64, lr=1e-3, early_stopping=True, lr_decay=0.5, patience=4, max_epochs=100
)
#: how the variational code's probes train by default, in experiment files and the API alike
#: (:func:`~probemeter.mdl.variational.variational_codelength`): 30 epochs at lr 1e-2, which
#: prunes in reach of a CPU (the paper's 200 epochs at lr 1e-3 are
#: ``VariationalTraining(epochs=200, batch_size=256, lr=1e-3)``)
VARIATIONAL_TRAINING = VariationalTraining(epochs=30, batch_size=256, lr=1e-2)

#: the switching code's settings by default, in experiment files and the API alike
#: (:func:`~probemeter.mdl.switching_code.switching_codelength`,
#: :func:`~probemeter.mdl.switching_code.switching_code`): the rate α_t = 1/t, a round per
#: transmitted label, and the best sequences in hindsight with up to 3 switches
SWITCHING_RATE = "harmonic"
SWITCHING_GRANULARITY = "example"
MAX_SWITCHES = 3

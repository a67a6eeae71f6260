"""The defaults of Pimentel et al.'s probes, one value each for the API
(:func:`~probemeter.pareto.sweeps.linear_sweep`, :func:`~probemeter.pareto.sweeps.parser_sweep`)
and the ``pareto`` method (whose options take their defaults from here), at the bottom of the
package so that both can import them."""

from __future__ import annotations

from probemeter.training.config import ParserTraining, TrainingConfig

__all__ = ["LINEAR_TRAINING", "PARETO_PENALTIES", "PARSER_DECODE", "PARSER_TRAINING"]

#: how the nuclear-norm and rank probes train by default, in experiment files and the API alike
#: (:func:`~probemeter.pareto.sweeps.linear_sweep`): 1000 Adam updates at lr 1e-2 on minibatches
#: of 256 (the paper gives no numbers); the biaffine parsers take as many updates
LINEAR_TRAINING = TrainingConfig(steps=1000, batch_size=256, lr=1e-2)
#: how the biaffine parsers train by default, in experiment files and the API alike
#: (:func:`~probemeter.pareto.sweeps.parser_sweep`): the linear probes' updates, at lr 1e-3, on
#: minibatches of 32 sentences
PARSER_TRAINING = ParserTraining(steps=LINEAR_TRAINING.steps, batch_sentences=32, lr=1e-3)
#: the nuclear-norm weights λ by default, in experiment files and the API alike: 0 and 19
#: log-spaced in [2⁻¹⁰, 8] (:func:`~probemeter.pareto.linear_probes.nuclear_norm_penalties`, the
#: default of :func:`~probemeter.pareto.sweeps.linear_sweep`; Pimentel et al., footnote 8)
PARETO_PENALTIES = 20
#: how the biaffine parsers decode by default, in experiment files and the API alike
#: (:func:`~probemeter.pareto.sweeps.parser_sweep`): each word's arg-max head (App. B)
PARSER_DECODE = "argmax"

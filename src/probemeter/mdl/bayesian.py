"""Group-sparse variational MLP probes ("Bayesian compression", Louizos et al. 2017), batched.

The variational code of Voita & Titov (2020), §2.2.1, replaces the probe's dense layers with the
Bayesian-compression layers of Louizos, Ullrich & Welling (2017), model BC-GNJ (group normal-
Jeffreys). For a layer with inputs i and outputs j, the weights are ``w_ij = z_i · w̃_ij``:

* **prior** α: a log-uniform (Jeffreys) scale per input group, ``p(z_i) ∝ 1/|z_i|``, and
  ``w̃_ij | z_i ~ N(0, z_i²)``, i.e. ``p(w̃_ij) = N(0, 1)`` after the reparameterisation; biases
  ``N(0, 1)``;
* **posterior** β: ``q(z_i) = N(μ_i, σ_i²)`` and ``q(w̃_ij) = N(μ_ij, σ_ij²)``, biases likewise;
* **KL(β‖α)** = Σ_i KL(q(z_i)‖p(z_i)) + Σ_ij KL(q(w̃_ij)‖N(0, 1)) + Σ_j KL(q(b_j)‖N(0, 1)).
  The Gaussian terms are exact, ``½(σ² + μ² − 1 − log σ²)`` each. The log-uniform prior is
  improper, so its KL is defined up to a constant; we use the approximation of Molchanov et al.
  (2017, eq. 14), with ``log α_i = log σ_i² − log μ_i²``::

      KL(q(z_i)‖p(z_i)) ≈ k1 − k1 · sigmoid(k2 + k3 log α_i) + ½ log(1 + 1/α_i),
      k1 = 0.63576, k2 = 1.87320, k3 = 1.48695,

  which is positive and tends to 0 as α_i → ∞ (a group that carries no information costs
  nothing). The whole KL is therefore ≥ 0.
* **training** uses the local reparameterisation trick: per example, a sample of z scales the
  inputs and the pre-activations are sampled from their Gaussian (mean ``(x∘z) μ_W + μ_b``,
  variance ``(x∘z)² σ_W² + σ_b²``).
* **pruning**: a group i is kept while ``log α_i < threshold`` (default 3, i.e. its posterior
  noise-to-signal ratio α below e³ ≈ 20, the rule of Molchanov et al. 2017); at test time the
  network uses the posterior means ``μ_i μ_ij`` of the kept groups. Neurons kept per layer (the
  input groups of each layer: input features, then hidden units) is the pruned architecture of
  Voita & Titov's Tables 3 and 9–15.

With ``span`` (edge-probing rows of span tokens), the probe first pools each span with a
variational self-attentive pooling (:mod:`probemeter.mdl.bayesian_spans`: Gaussian posteriors
under an N(0, 1) prior, its KL part of the model code, not pruned); its first layer's input
groups are then the pooled spans' S · q units.

Parameters of P probes are stacked on a leading axis; gradients come from autograd on the stacked
tensors (every probe's loss depends only on its own slice, so one backward pass serves all).

References:
    Voita, E. & Titov, I. (2020). Information-theoretic probing with minimum description length.
    *EMNLP 2020*. doi:10.18653/v1/2020.emnlp-main.14 (arXiv:2003.12298)

    Louizos, C., Ullrich, K. & Welling, M. (2017). Bayesian compression for deep learning.
    *NIPS 2017*. arXiv:1705.08665

    Molchanov, D., Ashukha, A. & Vetrov, D. (2017). Variational dropout sparsifies deep neural
    networks. *ICML 2017*. arXiv:1701.05369
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from probemeter._validation import check_scalar, integer_list
from probemeter.data import ProbeData, check_attention_spans
from probemeter.mdl.bayesian_spans import VariationalSpanPoolings
from probemeter.probes.mlp import MLP, SPAN_PROJECTION
from probemeter.probes.stacked_mlp import stacked_affine

__all__ = ["BayesianMLP", "StackedBayesianMLP"]

_K1, _K2, _K3 = 0.63576, 1.87320, 1.48695


@dataclass(frozen=True)
class BayesianMLP:
    """A group-sparse variational ReLU MLP ``d -> hidden... -> K``.

    Args:
        hidden: hidden widths; ``()`` gives a variational linear probe.
        threshold: prune an input group when ``log α ≥ threshold``.
        span: for edge-probing span rows, each span's padded token count (one or two spans),
            as :class:`~probemeter.probes.MLP`'s: the probe first pools each span with a
            variational self-attention (:mod:`probemeter.mdl.bayesian_spans`).
        projection: q, the width of the span projection (with ``span``).
    """

    hidden: tuple[int, ...] = (1000, 1000)
    threshold: float = 3.0
    span: tuple[int, ...] = ()
    projection: int = 0

    def __post_init__(self) -> None:
        hidden = integer_list(1)(tuple(self.hidden), "hidden")
        object.__setattr__(self, "hidden", tuple(int(w) for w in hidden))
        check_scalar(self.threshold, "threshold", float)
        # the span checks of the engine's probes (one or two spans, a projection with them)
        spans = MLP(span=self.span, projection=self.projection)
        object.__setattr__(self, "span", spans.span)
        object.__setattr__(self, "projection", spans.projection)

    @classmethod
    def for_data(
        cls, data: ProbeData, hidden: Sequence[int], *, projection: int = SPAN_PROJECTION
    ) -> BayesianMLP:
        """A variational MLP of ``hidden`` widths for ``data``: with variational span pooling
        of each span, projected to ``projection`` dimensions, when the rows are edge-probing
        spans (``data.span_tokens``), as :func:`~probemeter.probes.probe_for`; a plain one
        else."""
        if data.span_tokens is not None:
            check_attention_spans(data, "the variational code")
            return cls(tuple(hidden), span=data.span_tokens, projection=projection)
        return cls(tuple(hidden))

    @property
    def name(self) -> str:
        name = "bayesian-" + ("x".join(str(w) for w in self.hidden) or "linear")
        if self.span:
            name += f"-span{'x'.join(map(str, self.span))}-proj{self.projection}"
        return name

    def layer_shapes(self, n_features: int, n_classes: int) -> list[tuple[int, int]]:
        """(fan_in, fan_out) of each layer; with ``span`` the first reads the pooled spans.

        Raises:
            ValueError: with ``span``, rows of ``n_features`` that do not hold the spans.
        """
        if self.span:
            n_features = MLP(span=self.span, projection=self.projection).input_width(n_features)
        return list(itertools.pairwise([n_features, *self.hidden, n_classes]))

    def stack(
        self, rngs: list[np.random.Generator], n_features: int, n_classes: int, device: torch.device
    ) -> StackedBayesianMLP:
        """P probes, probe p initialised from ``rngs[p]`` alone (Louizos et al.'s code's
        initialisation: μ_z ~ N(1, 0.01²), log σ_z² ~ N(−9, 0.01²), μ_W ~ N(0, 1/fan_in),
        log σ_W² ~ N(−9, 0.01²), μ_b = 0, log σ_b² ~ N(−9, 0.01²)); with ``span``, each
        probe's span poolings are drawn first
        (:meth:`~probemeter.mdl.bayesian_spans.VariationalSpanPoolings.initial`)."""
        shapes = self.layer_shapes(n_features, n_classes)
        stage = None
        if self.span:
            width = MLP(span=self.span, projection=self.projection).token_width(n_features)
            stage = VariationalSpanPoolings.initial(rngs, self.span, width, self.projection, device)
        tensors: list[list[np.ndarray]] = [[] for _ in range(6 * len(shapes))]
        for rng in rngs:
            for layer, (fan_in, fan_out) in enumerate(shapes):
                values = (
                    rng.normal(1.0, 1e-2, fan_in),
                    rng.normal(-9.0, 1e-2, fan_in),
                    rng.normal(0.0, 1.0 / np.sqrt(fan_in), (fan_in, fan_out)),
                    rng.normal(-9.0, 1e-2, (fan_in, fan_out)),
                    np.zeros((1, fan_out)),
                    rng.normal(-9.0, 1e-2, (1, fan_out)),
                )
                for index, value in enumerate(values):
                    tensors[6 * layer + index].append(value)
        parameters = [
            torch.tensor(np.stack(values), dtype=torch.float32, device=device, requires_grad=True)
            for values in tensors
        ]
        return StackedBayesianMLP(parameters, self.threshold, stage)

    def to_dict(self) -> dict:
        spec = {"family": "bayesian-mlp", "hidden": list(self.hidden), "threshold": self.threshold}
        return spec | (
            {"span": list(self.span), "projection": self.projection} if self.span else {}
        )


class StackedBayesianMLP:
    """P group-sparse variational MLPs; parameters per layer ``z_mu (P, in), z_logvar (P, in),
    w_mu (P, in, out), w_logvar (P, in, out), b_mu (P, 1, out), b_logvar (P, 1, out)``; with a
    ``stage`` (:class:`~probemeter.mdl.bayesian_spans.VariationalSpanPoolings`), the span
    poolings before the first layer, whose parameters follow the layers'."""

    def __init__(
        self,
        parameters: list[torch.Tensor],
        threshold: float,
        stage: VariationalSpanPoolings | None = None,
    ) -> None:
        self.threshold = float(threshold)
        self._layers = [parameters[i : i + 6] for i in range(0, len(parameters), 6)]
        self.stage = stage
        self.parameters = list(parameters) + ([] if stage is None else stage.parameters)

    def log_alpha(self) -> list[torch.Tensor]:
        """Per layer (P, in): log α_i = log σ_i² − log μ_i² of each input group."""
        return [z_logvar - torch.log(z_mu.pow(2) + 1e-8) for z_mu, z_logvar, *_ in self._layers]

    def kl(self) -> torch.Tensor:
        """(P,) KL(β‖α) in nats (module docstring: Molchanov et al.'s approximation for the
        log-uniform scales, exact Gaussian terms for the weights and biases, and for the span
        poolings' parameters when there are any)."""
        total = 0.0 if self.stage is None else self.stage.kl()
        for (_, _, w_mu, w_logvar, b_mu, b_logvar), log_alpha in zip(
            self._layers, self.log_alpha()
        ):
            scales = (
                _K1
                - _K1 * torch.sigmoid(_K2 + _K3 * log_alpha)
                + 0.5 * torch.nn.functional.softplus(-log_alpha)
            )
            total = total + scales.sum(dim=1)
            for mu, logvar in ((w_mu, w_logvar), (b_mu, b_logvar)):
                gaussian = 0.5 * (logvar.exp() + mu.pow(2) - 1.0 - logvar)
                total = total + gaussian.flatten(1).sum(dim=1)
        return total

    def sample_logits(
        self, x: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Stochastic logits (P, rows, K) for inputs (P, rows, d): one draw of z per example and
        of the pre-activations (local reparameterisation); with span poolings, one draw of
        their parameters per probe first (the rows are then span rows)."""
        hidden = x if self.stage is None else self.stage.sample(x, generator)
        for index, (z_mu, z_logvar, w_mu, w_logvar, b_mu, b_logvar) in enumerate(self._layers):
            noise = torch.randn(hidden.shape, generator=generator, device=hidden.device)
            z = z_mu.unsqueeze(1) + (0.5 * z_logvar).exp().unsqueeze(1) * noise
            scaled = hidden * z
            mean = stacked_affine(b_mu, scaled, w_mu)
            variance = stacked_affine(b_logvar.exp(), scaled.pow(2), w_logvar.exp())
            noise = torch.randn(mean.shape, generator=generator, device=mean.device)
            hidden = mean + variance.clamp_min(1e-16).sqrt() * noise
            if index < len(self._layers) - 1:
                hidden = torch.relu(hidden)
        return hidden

    def kept(self) -> list[torch.Tensor]:
        """Per layer (P, in) boolean: groups with log α below the pruning threshold."""
        return [log_alpha < self.threshold for log_alpha in self.log_alpha()]

    @torch.no_grad()
    def pruned_logits(self, x: torch.Tensor) -> torch.Tensor:
        """Deterministic logits (P, rows, K) of the pruned network at the posterior means (the
        span poolings' too)."""
        hidden = x if self.stage is None else self.stage.mean(x)
        for index, ((z_mu, _, w_mu, _, b_mu, _), keep) in enumerate(zip(self._layers, self.kept())):
            hidden = stacked_affine(b_mu, hidden * (z_mu * keep).unsqueeze(1), w_mu)
            if index < len(self._layers) - 1:
                hidden = torch.relu(hidden)
        return hidden

    def architecture(self) -> np.ndarray:
        """(P, layers) number of kept input groups of each layer (input features, hidden
        units...), the "final probe" of Voita & Titov's Table 3."""
        return torch.stack([keep.sum(dim=1) for keep in self.kept()], dim=1).cpu().numpy()

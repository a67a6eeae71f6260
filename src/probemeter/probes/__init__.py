"""Probe families: the architectures the engine trains, stacked on a leading probe axis (with
an optional learned scalar mix of layers, :mod:`probemeter.probes.scalar_mix`, or learned
self-attentive span pooling, :mod:`probemeter.probes.span_attention`), and trained
probes kept for inspection (:mod:`probemeter.probes.saved`), and a linear one written back in a
model's activation space (:mod:`probemeter.probes.direction`)."""

from probemeter._lazy import lazy_exports

_EXPORTS = {
    "MLP": ".mlp",
    "Direction": ".mlp",
    "Linear": ".mlp",
    "ScalarMix": ".scalar_mix",
    "SpanAttention": ".span_attention",
    "SpanPooling": ".span_attention",
    "probe_for": ".mlp",
    "ProbeSet": ".saved",
    "SavedProbe": ".saved",
    "load_probes": ".saved",
    "ProbeDirection": ".direction",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""Probes of a model object in memory, in Python: from a TransformerLens or nnsight model, texts
and labels to loss-data curves per hook, and from a kept probe back to a direction at its hook.

:func:`probe_model` reads the texts at every hook name through
:class:`~probemeter.encoders.in_memory.ModelEncoder` (the transformer encoder's batching by
tokens, padding and pooling), splits the texts once (stratified by label, seeded), builds one
:class:`~probemeter.data.ProbeData` per hook from that split
(:meth:`~probemeter.data.RowSplit.probe_data`: the pool's standardisation, as every run does)
and trains a loss-data curve on each (:func:`~probemeter.curves.loss_data_curve`, Whitney et
al. 2021): the same objects an experiment file's curve run gives, comparable with
:func:`~probemeter.curves.compare`. It keeps each hook's pool mean and standard deviation, so
:meth:`ModelProbes.direction` turns a kept linear probe into a
:class:`~probemeter.probes.direction.ProbeDirection` at its hook, to steer or ablate with, and
:meth:`ModelProbes.verdict` gives the layer sweep's verdict over the hooks.

References:
    Whitney, W. F. et al. (2021). Evaluating representations by the complexity of learning
    low-loss predictors. arXiv:2009.07368
    Voita, E. and Titov, I. (2020). Information-Theoretic Probing with Minimum Description
    Length. arXiv:2003.12298
    Nanda, N. and Bloom, J. (2022). TransformerLens.
    https://github.com/TransformerLensOrg/TransformerLens
    Fiotto-Kaufman, J. et al. (2024). NNsight and NDIF. arXiv:2407.14561
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from probemeter._arrays import as_numpy
from probemeter._execution import Execution
from probemeter._validation import check_scalar, one_of
from probemeter.curves.curve import LossDataCurve, loss_data_curve
from probemeter.curves.defaults import CURVE_DEV_FRACTION, CURVE_SEEDS
from probemeter.curves.method import CurveMethod
from probemeter.data import ProbeData, RowSplit, pool_moments
from probemeter.encoders.cache import FeatureCache
from probemeter.encoders.in_memory import ModelEncoder
from probemeter.mdl.defaults import PAPER_TIMESTEPS
from probemeter.mdl.online import OnlineCode, online_codelength
from probemeter.probes import MLP, Linear
from probemeter.probes.direction import ProbeDirection
from probemeter.runs.layers import LayerAnalysis, analyse_layers
from probemeter.training.config import TrainingConfig

__all__ = ["SENTENCE_POOLINGS", "ModelProbes", "probe_model", "split_texts"]

#: poolings that give one row per text, which probe_model's labels (one per text) need
SENTENCE_POOLINGS = ("mean", "last", "cls")


@dataclass(frozen=True, eq=False)
class ModelProbes:
    """What :func:`probe_model` measured, by hook name.

    Attributes:
        curves: each hook's loss-data curve (with its kept probes when asked).
        data: each hook's standardised data (the same split for every hook).
        moments: each hook's pool mean μ and standard deviation σ (float64), with which its
            data were standardised.
        split: the texts' split (pool and test rows, encoded labels, classes).
        codes: with ``online_code=True``, each hook's online code (Voita & Titov 2020,
            :func:`~probemeter.mdl.online_codelength`) on the same data; else empty.
    """

    curves: dict[str, LossDataCurve]
    data: dict[str, ProbeData] = field(repr=False)
    moments: dict[str, tuple[np.ndarray, np.ndarray]] = field(repr=False)
    split: RowSplit = field(repr=False)
    codes: dict[str, OnlineCode] = field(default_factory=dict)

    def direction(self, hook_name: str, *, n: int | None = None, seed: int = 0) -> ProbeDirection:
        """The kept linear probe of ``hook_name`` (trained on ``n`` examples, default the
        largest size, with ``seed``) as a direction and bias in the model's activation space at
        that hook (:meth:`ProbeDirection.from_probe`).

        Raises:
            ValueError: an unknown hook, no kept probes (``keep_probes=False``), no probe of that
                size and seed, or a probe that is not linear.
        """
        if hook_name not in self.curves:
            raise ValueError(f"hook_name {hook_name!r} was not probed; probed: {list(self.curves)}")
        curve = self.curves[hook_name]
        if curve.probes is None:
            raise ValueError("no probes were kept: call probe_model with keep_probes=True")
        size = int(max(p.info["n"] for p in curve.probes)) if n is None else n
        probe = curve.probes.select(n=size, seed=seed)[0]
        mean, std = self.moments[hook_name]
        classes = self.split.classes or tuple(range(self.split.n_classes))
        source = {"representation": curve.name, "hook_name": hook_name}
        return ProbeDirection.from_probe(
            probe, mean, std, hook_name=hook_name, classes=classes, source=source
        )

    def verdict(
        self, epsilon: float, *, alpha: float = 0.05, random_state: int = 0
    ) -> LayerAnalysis:
        """One verdict over the hooks, as a run's layer sweep gives it (:mod:`probemeter.runs.
        layers`): the hooks ranked by SDL at ``epsilon`` (the curve method's headline), the
        best chosen on the development split held out of the pool and tested against the
        runner-up on the test set (McNemar's test, Holm-adjusted, with its power); hook ``l``
        is layer ``l`` of the sweep, in ``hook_names``' order.

        Raises:
            ValueError: a bad ``epsilon`` or ``alpha`` (as the curve method's).
        """
        method = CurveMethod(epsilon=epsilon)
        results = [curve.to_dict() for curve in self.curves.values()]
        members = list(enumerate(self.curves))
        return analyse_layers(
            method, results, {"hooks": members}, alpha=alpha, random_state=random_state
        )


def split_texts(labels: Any, *, test_size: float = 0.2, random_state: int = 0) -> RowSplit:
    """A seeded split of texts stratified by label: ``test_size`` of each class (a fraction in
    (0, 1)) goes to the test set (scikit-learn's ``train_test_split``), labels encoded in sorted
    order with the original values kept as ``classes``.

    Raises:
        ValueError: fewer than two classes, a class with one text, a bad ``test_size``.
    """
    from sklearn.model_selection import train_test_split

    check_scalar(
        test_size, "test_size", float, min_val=0.0, max_val=1.0, include_boundaries="neither"
    )
    values = as_numpy(labels, "labels", example_ndim=0)
    classes, encoded = np.unique(values, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"labels hold a single class ({classes[0]!r}); probing needs two")
    counts = np.bincount(encoded)
    if counts.min() < 2:
        raise ValueError(f"labels: class {classes[counts.argmin()]!r} has one text; each needs two")
    rows = np.arange(len(encoded))
    train, test = train_test_split(
        rows, test_size=test_size, random_state=random_state, stratify=encoded
    )
    train, test = np.sort(train), np.sort(test)
    return RowSplit(
        train=train,
        test=test,
        y_train=encoded[train].astype(np.int64),
        y_test=encoded[test].astype(np.int64),
        n_classes=len(classes),
        classes=tuple(value.item() if hasattr(value, "item") else value for value in classes),
    )


def probe_model(
    model: Any,
    texts: Sequence[str],
    labels: Any,
    hook_names: Sequence[str],
    *,
    pooling: str = "mean",
    probe: MLP | None = None,
    sizes: Sequence[int] | None = None,
    seeds: int | Sequence[int] = CURVE_SEEDS,
    config: TrainingConfig | None = None,
    test_size: float = 0.2,
    random_state: int = 0,
    dev_fraction: float = CURVE_DEV_FRACTION,
    keep_probes: bool = True,
    batch_size: int = 32,
    batch_tokens: int | None = None,
    max_length: int | None = None,
    truncate: str | None = None,
    keep_bos: bool = True,
    tokenizer: Any = None,
    execution: Execution | None = None,
    split: RowSplit | None = None,
    encoder_options: Mapping[str, Any] | None = None,
    cache: FeatureCache | None = None,
    cache_key: Mapping[str, Any] | None = None,
    online_code: bool = False,
    timesteps: Sequence[float] = PAPER_TIMESTEPS,
) -> ModelProbes:
    """Loss-data curves of ``texts`` read at each of ``hook_names`` of ``model`` (the module
    docstring).

    Args:
        model: a TransformerLens ``HookedTransformer``/``TransformerBridge`` or an nnsight
            ``LanguageModel`` (:class:`~probemeter.encoders.in_memory.ModelEncoder`).
        texts, labels: one label per text (any values; encoded in sorted order).
        hook_names: hooks of one width (TransformerLens names, nnsight module paths).
        pooling: ``"mean"``, ``"last"`` or ``"cls"`` (one row per text).
        probe: the probe family (default a linear probe, so that :meth:`ModelProbes.direction`
            applies; ``Direction("diff-means")`` fits the difference in means).
        sizes, seeds, config, random_state, dev_fraction, keep_probes, execution: as
            :func:`~probemeter.curves.loss_data_curve`'s (``execution``'s memory budget bounds
            the probes as in a run).
        test_size, split: the test fraction of :func:`split_texts`, or a split given whole.
        batch_size, batch_tokens, max_length, truncate, keep_bos, tokenizer: the encoder's.
        encoder_options: further keywords of :class:`ModelEncoder`.
        cache, cache_key: a :class:`~probemeter.encoders.FeatureCache` to keep the hooks'
            features in (one memory-mapped file per hook, :meth:`FeatureCache.layers`: a
            second call reads them back without a forward pass), with ``cache_key`` naming the
            model's weights (e.g. ``{"model": "gpt2", "revision": "..."}``): an object in
            memory has no file to name them, so the key is required with a cache. The hooks,
            pooling, tokenizer and length options are added to it.
        online_code, timesteps: also each hook's online code with these block ends (the
            same probe family, seeds, config and random state), as ``[method] kind = "mdl"``
            computes it.

    Raises:
        ValueError: one line naming the argument, before any forward pass for the texts:
            texts and labels of different lengths, a pooling that is not one row per text,
            and what :class:`ModelEncoder`, :func:`split_texts` and ``loss_data_curve`` refuse.
    """
    one_of(*SENTENCE_POOLINGS)(pooling, "pooling")
    if (cache is None) != (cache_key is None):
        raise ValueError(
            "cache_key: give it with cache (a model in memory has no file that names its "
            "weights), and neither without one"
        )
    if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts:
        raise ValueError("texts must be a non-empty list of strings")
    texts = list(texts)
    if split is None:
        values = as_numpy(labels, "labels", example_ndim=0)
        if len(values) != len(texts):
            raise ValueError(f"labels has {len(values)} values for {len(texts)} texts")
        split = split_texts(values, test_size=test_size, random_state=random_state)
    elif not isinstance(split, RowSplit):
        raise ValueError(f"split must be a RowSplit; got {type(split).__name__}")
    encoder = ModelEncoder(
        model,
        hook_names,
        tokenizer=tokenizer,
        pooling=pooling,
        batch_size=batch_size,
        batch_tokens=batch_tokens,
        max_length=max_length,
        truncate=truncate,
        keep_bos=keep_bos,
        **dict(encoder_options or {}),
    )
    shape = (len(encoder.hook_names), len(texts), encoder.dimension)
    if cache is None:
        features = [np.empty(shape[1:], dtype=np.float32) for _ in encoder.hook_names]
        encoder.encode_layers_into(texts, features)
    else:
        key = {
            "model": dict(cache_key),  # type: ignore[arg-type]
            "backend": encoder.backend,
            "hook_names": list(encoder.hook_names),
            "pooling": pooling,
            "keep_bos": encoder.keep_bos,
            "max_length": encoder.max_length,
            "truncate": truncate,
            "tokenizer": str(getattr(encoder.tokenizer, "name_or_path", "")),
            "bos": encoder.tokenizer("a")["input_ids"][:1],  # whether it prepends a BOS
        }
        features = cache.layers(
            key, texts, shape, lambda outputs: encoder.encode_layers_into(texts, outputs)
        )
    family = Linear() if probe is None else probe
    curves, data, moments = {}, {}, {}
    for hook, X in zip(encoder.hook_names, features):
        data[hook] = split.probe_data(X, name=hook)
        moments[hook] = pool_moments(X[split.train])
        curves[hook] = loss_data_curve(
            data[hook],
            family,
            sizes,
            seeds,
            config=config,
            random_state=random_state,
            execution=execution,
            keep_probes=keep_probes,
            dev_fraction=dev_fraction,
        )
    codes = {}
    if online_code:
        for hook in encoder.hook_names:
            codes[hook] = online_codelength(
                data[hook],
                family,
                timesteps,
                seeds,
                config=config,
                random_state=random_state,
                execution=execution,
            )
    return ModelProbes(curves, data, moments, split, codes)

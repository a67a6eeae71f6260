"""Kinds on a numeric view of the task: the raw input, projections of it, and encoders fitted
on images held out from the pool."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from probemeter import _validation as valid
from probemeter._declared import option
from probemeter.data import ProbeData
from probemeter.encoders import FeatureCache
from probemeter.encoders.image_models import train_cnn, train_vae
from probemeter.runs.kinds.base import (
    NUMERIC,
    Build,
    Report,
    Representation,
    RepresentationKind,
    encoder_default,
)
from probemeter.runs.tasks import TASKS, Task, TaskInputs, TaskType


def _cached(
    cache: FeatureCache | None, key: dict[str, Any], compute: Callable[[], np.ndarray]
) -> np.ndarray:
    """``compute()``, through ``cache`` when there is one (``key`` names the features)."""
    if cache is None:
        return compute()
    return cache.features(key, "experiment-representation", lambda _: compute())


class _NumericKind(RepresentationKind):
    """A transformation of a numeric input of the task (its ``view``)."""

    reads = NUMERIC
    #: fitted on images held out from the pool (``n_fit`` of them)
    fitted: ClassVar[bool] = False

    @classmethod
    def check_task(
        cls, rep: Representation, task: Task, where: str, report: Report
    ) -> Representation:
        """A view of the task with numbers (its first by default); components within its
        features and pool; images held out from the pool for a fitted encoder."""
        declared = task.declared
        views, pool = declared.views(), declared.pool_size()
        numeric = [view for view, width in views.items() if width is not None]
        rep = replace(rep, view=rep.view or (numeric[0] if numeric else None))
        if rep.view is None or views.get(rep.view) is None:
            report(
                f"{where}.view" if rep.view else f"{where}.kind",
                f"{rep.kind!r} needs a numeric input, one of {numeric}; got {rep.view!r}",
            )
            return rep
        features = views[rep.view]
        if rep.n_components is not None and rep.n_components > min(features, pool or features):
            report(
                f"{where}.n_components",
                f"{rep.n_components} exceeds the {features} features (or pool of {pool})",
            )
        if cls.fitted:
            heldout = declared.heldout_images()
            if heldout is None:
                with_images = [
                    name
                    for name, task_class in TASKS.items()
                    if task_class.heldout_images is not TaskType.heldout_images
                ]
                report(
                    f"{where}.kind",
                    f"{rep.kind!r} is trained on images held out from the pool: only "
                    f"{' and '.join(with_images)} has them, not {task.dataset!r}",
                )
            elif rep.declared.n_fit is not None and rep.declared.n_fit > heldout:
                report(
                    f"{where}.n_fit",
                    f"{rep.declared.n_fit} exceeds the {heldout} training images outside "
                    "the pool (lower task.n_train or n_fit)",
                )
        return rep

    @classmethod
    def build(cls, rep: Representation, inputs: TaskInputs, build: Build) -> ProbeData:
        X, y, X_test, y_test = inputs.arrays[rep.view]
        X, X_test = cls.transform(rep, inputs, build)
        return ProbeData.from_arrays(
            X, y, X_test, y_test, standardize=inputs.standardize, name=rep.name
        )

    @classmethod
    def transform(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pool's and the test set's features."""
        X, _, X_test, _ = inputs.arrays[rep.view]
        return X, X_test


_VIEW_HELP = (
    'the task\'s numeric input: "pixels" (digits, fashion-mnist), "raw bits" or "noisy label" '
    "(parity); the first one by default"
)


def _view() -> Any:
    return option(None, check=valid.text(), help=_VIEW_HELP)


@dataclass(frozen=True, kw_only=True)
class RawKind(_NumericKind):
    view: str | None = _view()

    kind = "raw"
    summary = "the task's numeric input as it is (standardised with pool statistics)"


class _ProjectionKind(_NumericKind):
    @classmethod
    def transform(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[np.ndarray, np.ndarray]:
        from probemeter.datasets.projections import project

        X, _, X_test, _ = inputs.arrays[rep.view]
        return project(rep.kind, rep.n_components, X, X_test, build.random_state)


@dataclass(frozen=True, kw_only=True)
class PCAKind(_ProjectionKind):
    view: str | None = _view()
    n_components: int = option(check=valid.integer(1), help="principal components kept")

    kind = "pca"
    summary = "principal components of the input, fitted on the training pool only"


@dataclass(frozen=True, kw_only=True)
class RandomProjectionKind(_ProjectionKind):
    view: str | None = _view()
    n_components: int = option(check=valid.integer(1), help="dimensions of the projection")

    kind = "random-projection"
    summary = "a seeded Gaussian random projection of the input"


class _FittedKind(_NumericKind):
    """An encoder trained on Fashion-MNIST images held out from the pool (Whitney et al.
    App. C.1), its features cached."""

    fitted = True

    @classmethod
    def transform(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[np.ndarray, np.ndarray]:
        X, _, X_test, _ = inputs.arrays[rep.view]
        key = {
            "kind": rep.kind,
            "task": inputs.task.key_dict(),
            "n_components": rep.n_components,
            **rep.options,
            "random_state": build.random_state,
        }

        def compute() -> np.ndarray:
            images, labels = inputs.heldout(rep.declared.n_fit)
            settings = {
                "epochs": rep.declared.epochs,
                "scale": 1.0,
                "random_state": build.random_state,
                "device": build.device,
                "progress": build.progress,
            }
            encoder = cls.train(rep, images, labels, settings)
            return encoder.encode(np.concatenate([X, X_test]))

        features = _cached(build.cache, key, compute)
        return features[: len(X)], features[len(X) :]

    @classmethod
    @abstractmethod
    def train(
        cls, rep: Representation, images: np.ndarray, labels: np.ndarray, settings: dict
    ) -> Any:
        """The encoder trained on held-out ``images`` (with ``encode``)."""


def _n_fit() -> Any:
    return option(10000, check=valid.integer(1), help="held-out training images it is fitted on")


@dataclass(frozen=True, kw_only=True)
class VAEKind(_FittedKind):
    view: str | None = _view()
    n_components: int = option(
        encoder_default(train_vae, "latent_dim"),
        check=valid.integer(1),
        help="latent dimensions (their means)",
    )
    n_fit: int = _n_fit()
    epochs: int = option(
        encoder_default(train_vae, "epochs"), check=valid.integer(1), help="training epochs"
    )

    kind = "vae"
    summary = "a VAE's latent means, trained on held-out Fashion-MNIST images"

    @classmethod
    def train(
        cls, rep: Representation, images: np.ndarray, labels: np.ndarray, settings: dict
    ) -> Any:
        return train_vae(images, rep.n_components, **settings)


@dataclass(frozen=True, kw_only=True)
class CNNKind(_FittedKind):
    view: str | None = _view()
    n_fit: int = _n_fit()
    epochs: int = option(
        encoder_default(train_cnn, "epochs"), check=valid.integer(1), help="training epochs"
    )

    kind = "cnn"
    summary = "a CNN classifier's last hidden layer (784 units), trained on held-out images"

    @classmethod
    def train(
        cls, rep: Representation, images: np.ndarray, labels: np.ndarray, settings: dict
    ) -> Any:
        return train_cnn(images, labels, **settings)

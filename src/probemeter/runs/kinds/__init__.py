"""The representation kinds of experiment files (``[[representations]] kind = ...``), each
declared once.

A kind is one frozen dataclass (a :class:`RepresentationKind`) whose fields are the entry's
own keys, declared with :func:`~probemeter._declared.option`; it says what it reads (a numeric
view of the task, the task's words, or files of its own), how an entry becomes representations
(a layer sweep gives several), what it needs of the task, and how its features are built. The
experiment-file reader, ``--check``, the runner and the docs' experiment-file reference follow
from :data:`KINDS`: adding a kind is a class and one entry there. A representation holds its
kind's declaration with its options (:attr:`Representation.declared`), which building reads.
Unit and cache keys are the entry as written (:meth:`Representation.key_dict`), less what the
declaration leaves out of keys, so stored units stay valid while options are added; the key of
a model's features is derived from the same declaration (``encoder_key`` of the model kinds),
so an option that changes them is in it unless declared otherwise.
"""

from __future__ import annotations

from probemeter.runs.kinds.activations import ActivationsKind
from probemeter.runs.kinds.base import (
    COMBINATIONS,
    FILES,
    KINDS,
    NUMERIC,
    Build,
    Report,
    Representation,
    RepresentationKind,
    kind_class,
    mixes_layers,
)
from probemeter.runs.kinds.files import FileKind, NpzKind
from probemeter.runs.kinds.numeric import CNNKind, PCAKind, RandomProjectionKind, RawKind, VAEKind
from probemeter.runs.kinds.sae import SAEKind
from probemeter.runs.kinds.surface import SurfaceKind
from probemeter.runs.kinds.words import GloVeKind, SpacyKind, TransformerKind

__all__ = [
    "COMBINATIONS",
    "FILES",
    "KINDS",
    "NUMERIC",
    "Build",
    "FileKind",
    "Report",
    "Representation",
    "RepresentationKind",
    "kind_class",
    "mixes_layers",
]


#: every representation kind of ``[[representations]] kind``, by name, in the order the docs
#: list them (the dict of :mod:`~probemeter.runs.kinds.base`, which representations read)
KINDS.update(
    (cls.kind, cls)
    for cls in (
        RawKind,
        PCAKind,
        RandomProjectionKind,
        VAEKind,
        CNNKind,
        TransformerKind,
        GloVeKind,
        SAEKind,
        SpacyKind,
        NpzKind,
        ActivationsKind,
        SurfaceKind,
    )
)

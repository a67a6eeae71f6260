"""Kind ``sae``: the latents of a SAELens sparse autoencoder over the transformer site it was
trained on, kept sparse (scipy CSR) from the encoder to the probes, beside the dense site as
its baseline.

The SAE's ``cfg.json`` names its hook (``blocks.3.hook_resid_post``), which says the site and
layer (:func:`~probemeter.encoders.sae.parse_hook_name`); the model's activations there are
pooled into the task's rows as a ``transformer`` representation of that site and layer would
pool them (``pooling = "last"``: each text's last token, where SAE-probing work reads them),
then encoded by the SAE (:meth:`~probemeter.encoders.sae.SparseAutoencoder.encode_sparse`).
With ``baseline = true`` the dense site itself is a representation too (``NAME-dense``), so one
run's table compares the latents with the activations they encode — the question of
Kantamneni et al. (2025), answered with loss-data curves and online codes.

References:
    Kantamneni, S., Engels, J., Rajamanoharan, S., Tegmark, M., Nanda, N. (2025). Are Sparse
    Autoencoders Useful? A Case Study in Sparse Probing. arXiv:2502.16681.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from probemeter import _validation as valid
from probemeter._declared import option
from probemeter._device import resolve_device
from probemeter.encoders.model_files import model_files
from probemeter.encoders.sae import saved_sae_header
from probemeter.runs.kinds.base import Build, Report, Representation
from probemeter.runs.kinds.words import TransformerKind, _ModelKind, _transformer_model
from probemeter.runs.tasks import WORDS, Task, TaskInputs, TaskText


@dataclass(frozen=True, kw_only=True)
class SAEKind(_ModelKind):
    sae: str = option(
        check=valid.text(),
        help="a folder holding a SAELens SAE as SAE.save_model writes it (cfg.json and "
        "sae_weights.safetensors), relative to the experiment file; the hook it was trained on "
        "(metadata.hook_name, e.g. blocks.3.hook_resid_post) says the site and layer it encodes",
    )
    baseline: bool = option(
        True,
        check=valid.boolean(),
        help="also the dense site the SAE encodes, as the transformer representation "
        "NAME-dense: the baseline its latents are compared with",
        keyed=False,
    )

    kind = "sae"
    summary = "latents of a SAELens sparse autoencoder over a transformer site, kept sparse"

    def representations(
        self, name: str, where: str, folder: Path, bad: set[str], report: Report
    ) -> list[Representation]:
        """The latents ``NAME`` (their options the entry's, with the SAE's folder made absolute
        and the ``site`` and ``layer`` its hook names), and with ``baseline`` the dense site
        ``NAME-dense``. The SAE's config is read here (no weights, no SAELens)."""
        options = self.usable_values(bad)
        if options["model"] not in (None, "minilm"):
            options["model"] = _transformer_model(
                options["model"], f"{where}.model", folder, report
            )
        if options["sae"] is None:
            return [Representation(name, self.kind, WORDS, options=options)]
        options["sae"] = str((folder / options["sae"]).resolve())
        try:
            header = saved_sae_header(options["sae"])
        except ValueError as error:
            report(f"{where}.sae", str(error).replace("source ", "", 1))
            return [Representation(name, self.kind, WORDS, options=options)]
        _check_sae(header, options["model"], f"{where}.sae", report)
        located = {**options, "site": header["site"], "layer": header["layer"]}
        found = [Representation(name, self.kind, WORDS, options=located)]
        if options["baseline"]:
            found.append(
                Representation(
                    f"{name}-dense", TransformerKind.kind, WORDS, options=_dense(located)
                )
            )
        return found

    @classmethod
    def check_task(
        cls, rep: Representation, task: Task, where: str, report: Report
    ) -> Representation:
        """A task whose rows are sentences or texts: its rows' activations are what the SAE
        encodes (a word's mean over its pieces is no activation the SAE was trained on)."""
        rep = super().check_task(rep, task, where, report)
        if WORDS in task.declared.views() and not task.declared.rows_are_sentences:
            report(
                f"{where}.kind",
                f"'sae' encodes one activation per row: it needs a task whose rows are texts or "
                f"sentences (texts, senteval), not the words of {task.dataset!r}",
            )
        return rep

    @classmethod
    def site_read(cls, rep: Representation) -> Representation:
        """The dense site it encodes."""
        return _dense_representation(rep)

    @classmethod
    def rows_of(cls, rep: Representation, inputs: TaskInputs) -> TaskText:
        """The rows of the dense site it encodes."""
        return TransformerKind.rows_of(_dense_representation(rep), inputs)

    @classmethod
    def features(
        cls, rep: Representation, inputs: TaskInputs, build: Build
    ) -> tuple[dict[str, Any], Any]:
        """The dense site's features (one encoder pass shared with ``NAME-dense`` and every
        other representation of the model), encoded by the SAE into CSR latents."""
        from probemeter.encoders.sae import load_sae

        dense_key, dense = TransformerKind.features(_dense_representation(rep), inputs, build)
        loaded = (cls.kind, rep.declared.sae)
        if loaded not in inputs.encoders:
            device = str(resolve_device(build.device))
            inputs.encoders[loaded] = load_sae(rep.declared.sae, device=device)
        sae = inputs.encoders[loaded]
        latents = sae.encode_sparse(np.asarray(dense, dtype=np.float32))
        return {"site": dense_key, **sae.cache_key}, latents


def _check_sae(header: dict[str, Any], model: str | None, where: str, report: Report) -> None:
    """The SAE's hook against the model's config (read without the weights,
    :func:`~probemeter.encoders.model_files.model_files`) when it is at hand: a block the model
    has, and ``d_in`` the width of the site there, so that an SAE trained on another model is
    refused before anything is encoded."""
    files = None if model is None else model_files(model)
    if files is None:
        return
    hook, blocks = header["hook_name"], files.n_blocks
    if blocks is not None and header["layer"] >= blocks:
        report(
            where,
            f"the SAE reads {hook}, but {model!r} has {blocks} blocks (0..{blocks - 1}): an SAE "
            "of another model?",
        )
        return
    width = files.site_width(header["site"])
    if width is not None and header["d_in"] != width:
        report(
            where,
            f"the SAE takes d_in = {header['d_in']} features at {hook}, but site "
            f"{header['site']!r} of {model!r} has {width}: an SAE of another model?",
        )


def _dense_representation(rep: Representation) -> Representation:
    """The transformer representation of the site an SAE representation encodes."""
    return replace(rep, kind=TransformerKind.kind, options=_dense(rep.options))


def _dense(options: dict[str, Any]) -> dict[str, Any]:
    """The options of the transformer representation of the site an SAE entry encodes: the
    entry's model options with the transformer kind's defaults for the rest."""
    shared = {name: options[name] for name in ("layer", "site", *_MODEL_OPTIONS)}
    declared, problems = TransformerKind.from_values(shared)
    assert not problems, problems  # every value was checked as the SAE entry's own
    return {**declared.values(), "pooling": options["pooling"], "bos": options["bos"]}


#: the options an SAE entry shares with the transformer representation of its site
_MODEL_OPTIONS = tuple(opt.name for opt in _ModelKind.options())

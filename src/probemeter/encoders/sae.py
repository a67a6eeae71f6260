"""Sparse-autoencoder latents as features: a SAELens SAE applied to the activations of the site
it was trained on, its latents kept sparse (scipy CSR) all the way.

A sparse autoencoder (SAE) trained on one site of a language model (a residual stream, an
attention or MLP output, the heads' outputs) rewrites each activation x ∈ R^{d_in} as a
code f(x) ∈ R^{d_sae} with d_sae ≫ d_in and few non-zero entries, from which a
decoder reconstructs x ≈ W_dec f(x) + b_dec. Each coordinate of f (a *latent*) is meant to be
one interpretable, monosemantic feature (Bricken et al. 2023; Cunningham et al. 2023). For the
standard architecture of Bricken et al. (2023)

    f(x) = σ(W_enc (x − b_dec) + b_enc),   σ = ReLU;

TopK keeps the k largest pre-activations of each row and JumpReLU zeroes those below a learned
threshold. This module implements none of them: SAELens loads the SAE and its own ``encode``
computes f, so every architecture SAELens knows works, with its input normalisation and
``b_dec`` handling as it was trained.

Probing SAE latents against the dense site they encode is the question of Kantamneni et al.
(2025), who found that SAE-latent probes rarely beat the dense baseline on accuracy; probemeter
asks it with loss-data curves and online codes instead.

``sae_lens`` is imported only inside :func:`load_sae` (it costs seconds), so importing this
module needs neither it nor torch; install it with ``pip install 'probemeter[lens]'``.

References:
    Bricken, T., Templeton, A., Batson, J., et al. (2023). Towards Monosemanticity:
    Decomposing Language Models With Dictionary Learning. Transformer Circuits Thread.
    https://transformer-circuits.pub/2023/monosemantic-features

    Cunningham, H., Ewart, A., Riggs, L., Huben, R., Sharkey, L. (2023). Sparse Autoencoders
    Find Highly Interpretable Features in Language Models. arXiv:2309.08600.

    Kantamneni, S., Engels, J., Rajamanoharan, S., Tegmark, M., Nanda, N. (2025). Are Sparse
    Autoencoders Useful? A Case Study in Sparse Probing. arXiv:2502.16681.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from probemeter._validation import check_scalar

__all__ = ["SparseAutoencoder", "load_sae", "parse_hook_name", "saved_sae_header"]

# SAELens's file names (sae_lens.constants SAE_CFG_FILENAME, SAE_WEIGHTS_FILENAME), spelled out
# so that a folder is checked without importing sae_lens.
_CFG_FILE = "cfg.json"
_WEIGHTS_FILE = "sae_weights.safetensors"

_BLOCK_HOOK = re.compile(r"blocks\.(\d+)\.hook_(resid_pre|resid_mid|resid_post|attn_out|mlp_out)")
_HEADS_HOOK = re.compile(r"blocks\.(\d+)\.attn\.hook_z")
_HOOK_FORMS = (
    "blocks.{i}.hook_resid_pre, blocks.{i}.hook_resid_mid, blocks.{i}.hook_resid_post, "
    "blocks.{i}.hook_attn_out, blocks.{i}.hook_mlp_out, blocks.{i}.attn.hook_z"
)


def parse_hook_name(hook_name: str) -> tuple[str, int]:
    """The site and layer of a TransformerLens hook name: ``blocks.{i}.hook_resid_pre``,
    ``hook_resid_mid``, ``hook_resid_post``, ``hook_attn_out``, ``hook_mlp_out`` give
    (``"resid_pre"``, ..., i); ``blocks.{i}.attn.hook_z`` gives (``"heads"``, i).

    Raises:
        ValueError: naming the hook and the supported forms, for any other name.

    Examples:
        >>> parse_hook_name("blocks.3.hook_resid_post")
        ('resid_post', 3)
        >>> parse_hook_name("blocks.0.attn.hook_z")
        ('heads', 0)
    """
    if isinstance(hook_name, str):
        block = _BLOCK_HOOK.fullmatch(hook_name)
        if block is not None:
            return block.group(2), int(block.group(1))
        heads = _HEADS_HOOK.fullmatch(hook_name)
        if heads is not None:
            return "heads", int(heads.group(1))
    raise ValueError(
        f"SAE hook {hook_name!r} is not a site probemeter reads; supported hooks: {_HOOK_FORMS}"
    )


class SparseAutoencoder:
    """A SAELens SAE, read-only, with the site it encodes and the key of its latents.

    Made by :func:`load_sae`. :meth:`encode_sparse` gives the latents f(x) of rows of
    activations taken at :attr:`hook_name` (see the module docstring for f).
    """

    def __init__(self, sae: Any, cache_key: dict[str, Any]) -> None:
        self._sae = sae
        self._site, self._layer = parse_hook_name(self.hook_name)
        self._cache_key = dict(cache_key)

    @property
    def sae(self) -> Any:
        """The ``sae_lens.SAE`` object."""
        return self._sae

    @property
    def hook_name(self) -> str:
        """The TransformerLens hook the SAE was trained on (``cfg.metadata.hook_name``)."""
        return str(self._sae.cfg.metadata.hook_name)

    @property
    def site(self) -> str:
        """``"resid_pre"``, ``"resid_mid"``, ``"resid_post"``, ``"attn_out"``, ``"mlp_out"``
        or ``"heads"`` (from :attr:`hook_name`)."""
        return self._site

    @property
    def layer(self) -> int:
        """The block index of :attr:`hook_name`."""
        return self._layer

    @property
    def d_in(self) -> int:
        """Width of the activations the SAE encodes."""
        return int(self._sae.cfg.d_in)

    @property
    def d_sae(self) -> int:
        """Number of latents."""
        return int(self._sae.cfg.d_sae)

    @property
    def architecture(self) -> str:
        """SAELens's architecture name: ``"standard"``, ``"topk"``, ``"jumprelu"``, ..."""
        return str(self._sae.cfg.architecture())

    @property
    def cache_key(self) -> dict[str, Any]:
        """What determines the latents: ``sae_path`` (the folder's absolute path, None for an
        SAE given as an object) and ``sae_sha256`` (of the folder's cfg.json and weights file,
        or of an object's config and state dict), so a SAE retrained into the same folder has
        another key and a folder re-saved with the same weights the same key."""
        return dict(self._cache_key)

    def __repr__(self) -> str:
        return (
            f"SparseAutoencoder({self.architecture}, {self.hook_name}, d_in={self.d_in}, "
            f"d_sae={self.d_sae})"
        )

    def encode_sparse(self, X: np.ndarray, *, batch_size: int = 4096) -> sp.csr_matrix:
        """The latents f(x) of every row of ``X`` as a float32 CSR matrix ``(n, d_sae)``.

        ``X`` (a numpy array, possibly memory-mapped) holds activations at :attr:`hook_name`,
        one row each (for ``attn.hook_z``, the heads' outputs concatenated). Rows are encoded
        ``batch_size`` at a time by the SAE's own ``encode`` under ``torch.no_grad``, each
        batch's latents turned into CSR at once, so at most one batch is ever dense (never an
        ``(n, d_sae)`` array) and a memory-mapped ``X`` is read one batch at a time. Each
        batch is checked for NaN and inf before it is encoded: a second pass over ``X`` only
        to check it would double the reading of a pool larger than memory.

        Raises:
            ValueError: naming ``X`` (not a 2-D floating-point numpy array, no rows, width not
                :attr:`d_in`, NaN or inf with its first row) or ``batch_size`` (not an
                integer >= 1).
        """
        check_scalar(batch_size, "batch_size", int, min_val=1)
        self._check_shape(X)
        import torch

        sae = self._sae
        # With reshape_activations="hook_z" SAELens flattens (..., n_heads, d_head) and, on
        # the first input it sees, records d_head and replaces reshape_fn_in; rows already
        # concatenated go in as one "head" of width d_in, and what the SAE had recorded (or
        # not) is put back afterwards, so its decoder keeps the real d_head.
        as_heads = bool(getattr(sae, "hook_z_reshaping_mode", False))
        recorded = ("d_head", "reshape_fn_in")
        remembered = {name: vars(sae)[name] for name in recorded if name in vars(sae)}
        blocks = []
        try:
            with torch.no_grad():
                for start in range(0, X.shape[0], batch_size):
                    rows = np.array(X[start : start + batch_size])
                    bad = ~np.isfinite(rows).all(axis=1)
                    if bad.any():
                        raise ValueError(
                            f"X contains NaN or inf, first at row {start + int(np.argmax(bad))}"
                        )
                    batch = torch.from_numpy(rows).to(sae.device)
                    latents = sae.encode(batch[:, None, :] if as_heads else batch)
                    blocks.append(sp.csr_matrix(latents.float().cpu().numpy()))
        finally:
            if as_heads:
                for name in recorded:
                    vars(sae).pop(name, None)
                vars(sae).update(remembered)
        return sp.vstack(blocks, format="csr", dtype=np.float32)

    def _check_shape(self, X: object) -> None:
        if not isinstance(X, np.ndarray):
            raise ValueError(
                f"X must be a numpy array (or np.memmap) of activations; got {type(X).__name__}"
            )
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_rows, d_in); got shape {X.shape}")
        if not np.issubdtype(X.dtype, np.floating):
            raise ValueError(f"X must hold floating-point activations; got dtype {X.dtype}")
        if X.shape[0] == 0:
            raise ValueError("X has no rows")
        if X.shape[1] != self.d_in:
            raise ValueError(
                f"X has {X.shape[1]} columns but the SAE on {self.hook_name} takes "
                f"d_in = {self.d_in}"
            )


def load_sae(source: str | os.PathLike[str] | Any, *, device: str = "cpu") -> SparseAutoencoder:
    """A SAELens SAE from ``source``: a folder as ``SAE.save_model`` writes it (``cfg.json``
    and ``sae_weights.safetensors``), loaded by ``SAE.load_from_disk`` onto ``device``, or an
    ``sae_lens.SAE`` object, which is moved to ``device`` (``SAE.to``, in place).

    The SAE must record the hook it was trained on (``cfg.metadata.hook_name``, which SAELens
    also fills from the ``hook_name`` of configs older than 6.0) in a form
    :func:`parse_hook_name` reads.

    Raises:
        ImportError: sae_lens is not installed (``pip install 'probemeter[lens]'``).
        ValueError: naming ``source``: a folder that does not exist or lacks cfg.json or the
            weights file; a folder SAELens cannot load (its message's first line); no hook
            name or an unsupported one; neither a folder nor an SAE.
    """
    folder = None
    if isinstance(source, (str, os.PathLike)):
        folder = Path(source).expanduser().resolve()
        _check_folder(folder)
    try:
        import sae_lens
    except ImportError as error:
        raise ImportError(
            "SAE latents need SAELens, which is not installed: pip install 'probemeter[lens]'"
        ) from error
    if folder is not None:
        try:
            sae = sae_lens.SAE.load_from_disk(folder, device=device)
        except Exception as error:  # anything SAELens raises on a config it cannot read
            message = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise ValueError(
                f"source {str(folder)!r}: SAELens cannot load it: {message}"
            ) from error
        key = {"sae_path": str(folder), "sae_sha256": _folder_digest(folder)}
    elif isinstance(source, sae_lens.SAE):
        sae = source.to(device)
        key = {"sae_path": None, "sae_sha256": _object_digest(sae)}
    else:
        raise ValueError(
            "source must be a folder holding a SAELens SAE (cfg.json and "
            f"{_WEIGHTS_FILE}) or an sae_lens.SAE; got {type(source).__name__}"
        )
    if sae.cfg.metadata.hook_name is None:
        raise ValueError(
            f"source {str(folder) if folder else repr(sae)}: the SAE records no hook name "
            "(cfg.metadata.hook_name), so the site it encodes is unknown"
        )
    return SparseAutoencoder(sae, key)


def saved_sae_header(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """What a saved SAE's ``cfg.json`` says of its input, without loading SAELens or the
    weights: ``hook_name``, ``site`` and ``layer`` (:func:`parse_hook_name`), ``d_in``,
    ``d_sae`` and ``architecture``.

    Raises:
        ValueError: naming ``folder``: not a SAELens SAE folder, a cfg.json that is no JSON
            object or lacks ``d_in``/``d_sae``, no hook name or an unsupported one.
    """
    path = Path(folder).expanduser().resolve()
    _check_folder(path)
    try:
        config = json.loads((path / _CFG_FILE).read_text())
        hook = (config.get("metadata") or {}).get("hook_name") or config.get("hook_name")
        header = {"hook_name": hook, "d_in": int(config["d_in"]), "d_sae": int(config["d_sae"])}
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(
            f"source {str(path)!r}: its {_CFG_FILE} is no SAELens config ({error})"
        ) from None
    if hook is None:
        raise ValueError(
            f"source {str(path)!r}: the SAE records no hook name (metadata.hook_name in "
            f"{_CFG_FILE}), so the site it encodes is unknown"
        )
    site, layer = parse_hook_name(hook)
    return {**header, "site": site, "layer": layer, "architecture": config.get("architecture")}


def _check_folder(folder: Path) -> None:
    if not folder.is_dir():
        raise ValueError(f"source {str(folder)!r} is not a folder (it does not exist)")
    missing = [name for name in (_CFG_FILE, _WEIGHTS_FILE) if not (folder / name).is_file()]
    if missing:
        raise ValueError(
            f"source {str(folder)!r} lacks {' and '.join(missing)}: not a SAELens SAE folder "
            "(SAE.save_model writes both)"
        )


def _folder_digest(folder: Path) -> str:
    """SHA-256 of cfg.json and the weights file, each prefixed by its name."""
    digest = hashlib.sha256()
    for name in (_CFG_FILE, _WEIGHTS_FILE):
        digest.update(name.encode())
        with open(folder / name, "rb") as file:
            for chunk in iter(lambda: file.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _object_digest(sae: Any) -> str:
    """SHA-256 of an SAE's config (without its device, which does not change the latents) and
    of its state dict: each tensor's name, dtype, shape and bytes, in name order."""
    import torch

    config = {k: v for k, v in sae.cfg.to_dict().items() if k != "device"}
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    for name, tensor in sorted(sae.state_dict().items()):
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{name}:{flat.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()

"""Arrays as users hold them, converted to numpy in one place: torch tensors, pandas objects,
Hugging Face ``datasets`` columns, pyarrow arrays, and lists of rows or of blocks of rows (what
users collect batch by batch). Features and labels (:mod:`probemeter.data`) and the tensors of
feature files (:mod:`probemeter.feature_files`) all pass through :func:`as_numpy`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["as_numpy"]


def as_numpy(array: object, name: str = "array", example_ndim: int | None = None) -> np.ndarray:
    """``array`` as a numpy array.

    * torch tensors are detached and copied to the CPU, whatever their device or
      ``requires_grad``; floating ones come back as float32 (bfloat16 and float16 widened
      exactly: numpy lacks the one and computes slowly in the other);
    * a Hugging Face ``datasets`` column (``ds["features"]``) is read whole, in the dataset's
      format (Python lists, numpy, torch, pandas or arrow), and converted as that;
    * anything else goes through ``np.asarray`` (pandas DataFrames and Series, categoricals,
      pyarrow arrays, nested lists of numbers);
    * with ``example_ndim`` — the dimensions of one example: 0 for a label, 1 for a row of
      features, 2 for a row of per-layer features — a list or tuple whose elements are arrays,
      tensors or lists (or a 1-D array of such objects, e.g. a pandas Series of arrays) is
      assembled: elements of ``example_ndim`` dimensions are one example each (stacked),
      elements of more are blocks of examples (concatenated along the first axis).

    Raises:
        ValueError: naming ``name`` and the first offending element, when a list mixes single
            examples with blocks, its elements differ in shape (ragged widths), an element has
            fewer than ``example_ndim`` dimensions, is not a regular array, or has values of a
            type that cannot be combined with the others'.
    """
    if _is_tensor(array):
        tensor = array.detach().cpu()  # type: ignore[attr-defined]
        return (tensor.float() if tensor.is_floating_point() else tensor).numpy()
    if _is_datasets_column(array):
        return as_numpy(array[:], name, example_ndim)  # type: ignore[index]
    if example_ndim is not None and isinstance(array, (list, tuple)) and _holds_arrays(array):
        return _assemble(array, name, example_ndim)
    values = np.asarray(array)
    if example_ndim is not None and values.dtype == object and values.ndim == 1:
        if _holds_arrays(values):
            return _assemble(values, name, example_ndim)
    return values


def _is_tensor(value: object) -> bool:
    return hasattr(value, "detach") and hasattr(value, "cpu")


def _is_datasets_column(value: object) -> bool:
    """A ``datasets.arrow_dataset.Column``, recognised without importing ``datasets``."""
    kind = type(value)
    return kind.__name__ == "Column" and kind.__module__.startswith("datasets.")


def _is_arraylike(value: object) -> bool:
    if isinstance(value, (str, bytes, bool, int, float, np.generic)):  # labels, decided fast
        return False
    if isinstance(value, (list, tuple)) or _is_tensor(value):
        return True
    return hasattr(value, "__array__") and not np.isscalar(value)


def _holds_arrays(elements: object) -> bool:
    return any(_is_arraylike(element) for element in elements)  # type: ignore[attr-defined]


def _assemble(elements: object, name: str, example_ndim: int) -> np.ndarray:
    """One array of a sequence of examples (stacked) or of blocks of examples (concatenated)."""
    parts = []
    for index, element in enumerate(elements):  # type: ignore[attr-defined]
        try:
            parts.append(as_numpy(element))
        except ValueError as error:
            raise ValueError(f"{name}: element {index} is not a regular array ({error})") from None
    what = f"one example ({example_ndim}-D) or a block of examples ({example_ndim + 1}-D)"
    first = parts[0]
    if first.ndim < example_ndim:
        raise ValueError(f"{name}: element 0 has shape {first.shape}; each element must be {what}")
    blocks = first.ndim > example_ndim
    for index, part in enumerate(parts):
        if part.ndim != first.ndim:
            raise ValueError(
                f"{name}: element {index} is {part.ndim}-D but element 0 is {first.ndim}-D; "
                f"give {what} per element, not both"
            )
        if part.shape[blocks:] != first.shape[blocks:]:
            raise ValueError(
                f"{name}: element {index} has shape {part.shape} but element 0 has shape "
                f"{first.shape}; every example needs the same shape"
            )
    try:
        return np.concatenate(parts) if blocks else np.stack(parts)
    except TypeError as error:  # e.g. numbers with strings
        raise ValueError(f"{name}: the elements' values cannot be combined ({error})") from None

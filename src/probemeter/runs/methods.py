"""The method registry: every method of experiment files and the command line, by kind.

This is the one place a method's kind string is looked up; everything else asks the method
object (:class:`probemeter._method.Method`). Adding a method is a package with its
``method.py`` and one entry here.
"""

from __future__ import annotations

from pathlib import Path

from probemeter._io import read_json
from probemeter._method import RUN_NAME, Method
from probemeter.curves.method import CurveMethod
from probemeter.mdl.method import MDLMethod
from probemeter.mdl.switching_method import SwitchingMethod
from probemeter.pareto.method import ParetoMethod
from probemeter.power.method import PowerMethod
from probemeter.sparse_probing.method import KSparseMethod
from probemeter.structural.method import StructuralMethod

__all__ = ["DEFAULT_METHOD", "METHODS", "run_method"]

#: every method, by kind, in the order the docs list them
METHODS: dict[str, type[Method]] = {
    cls.kind: cls
    for cls in (
        CurveMethod,
        MDLMethod,
        ParetoMethod,
        PowerMethod,
        SwitchingMethod,
        StructuralMethod,
        KSparseMethod,
    )
}

#: the method of an experiment file whose ``[method]`` table names no kind
DEFAULT_METHOD: str = CurveMethod.kind


def run_method(run_dir: str | Path) -> type[Method] | None:
    """The method of the run folder ``run_dir``: the one its ``run.json`` names (None for a
    kind not registered), or, without ``run.json``, the one whose folders hold its
    ``results.json`` alone (:attr:`~probemeter._method.Method.writes_results_alone`).

    Raises:
        ValueError: ``run.json`` is not JSON, or names no method.
    """
    path = Path(run_dir) / RUN_NAME
    if not path.is_file():
        return next(cls for cls in METHODS.values() if cls.writes_results_alone)
    run = read_json(path, "run file")
    kind = run.get("method") if isinstance(run, dict) else None
    if not isinstance(kind, str):
        raise ValueError(f"run file {str(path)!r} names no method (its 'method' key)")
    return METHODS.get(kind)

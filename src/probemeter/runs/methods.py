"""The method registry: every method of experiment files and the command line, by kind.

This is the one place a method's kind string is looked up; everything else asks the method
object (:class:`probemeter._method.Method`). Adding a method is a package with its
``method.py`` and one entry here.
"""

from __future__ import annotations

from probemeter._method import Method
from probemeter.curves.method import CurveMethod
from probemeter.mdl.method import MDLMethod
from probemeter.mdl.switching_method import SwitchingMethod
from probemeter.pareto.method import ParetoMethod
from probemeter.power.method import PowerMethod
from probemeter.sparse_probing.method import KSparseMethod
from probemeter.structural.method import StructuralMethod

__all__ = ["DEFAULT_METHOD", "METHODS"]

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

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
from probemeter.structural.method import StructuralMethod

__all__ = ["METHODS", "method_class", "options_markdown"]

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
    )
}


def method_class(kind: str) -> type[Method]:
    """The method class of ``kind``; a ValueError naming the known kinds otherwise."""
    try:
        return METHODS[kind]
    except KeyError:
        raise ValueError(f"unknown method kind {kind!r} (known: {', '.join(METHODS)})") from None


def _toml_value(value: object) -> str:
    """A default as it is written in an experiment file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return repr(value)


def options_markdown() -> str:
    """The README's table of every method's options: name, default (as written in an
    experiment file), command-line flag and meaning — generated from the dataclasses, so it
    cannot drift from them (``python -m probemeter.runs.methods`` prints it)."""
    lines = []
    for cls in METHODS.values():
        lines += [f'`kind = "{cls.kind}"` — {cls.summary}', ""]
        lines += ["| option | default | flag | meaning |", "|---|---|---|---|"]
        for opt in cls.options():
            default = "required" if opt.required else f"`{_toml_value(opt.written_default)}`"
            meaning = opt.help.replace("|", r"\|")
            lines.append(f"| `{opt.name}` | {default} | `{opt.flag}` | {meaning} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(options_markdown(), end="")

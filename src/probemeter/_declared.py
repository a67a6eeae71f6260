"""Declarations: a method, a task or a representation kind is a frozen dataclass whose fields
are its options, each declared once with :func:`option` (default, check, help text).

Everything else follows from the declaration: the experiment-file reader
(:mod:`probemeter.runs.config`) checks a table's values with :meth:`Declared.from_values`, the
command line derives its flags from :meth:`Declared.options`, the docs' experiment-file
reference lists them, and unit keys are written from :meth:`Declared.key_dict`. The
registries are ``METHODS`` (:mod:`probemeter.runs.methods`), ``TASKS``
(:mod:`probemeter.runs.tasks`) and ``KINDS`` (:mod:`probemeter.runs.kinds`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from probemeter._validation import Check

__all__ = ["REQUIRED", "Declared", "Option", "option", "plain"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: the default of an option that has none: the user must give it
REQUIRED: Any = _Required()


class _Always:
    def __repr__(self) -> str:
        return "ALWAYS"


#: ``key_omits`` of an option that is in every unit key
_ALWAYS_KEYED: Any = _Always()


def option(
    default: Any = REQUIRED,
    *,
    check: Check,
    help: str,
    flag: str | None = None,
    parse: Callable[[Any], Any] | None = None,
    show: Callable[[Any], Any] | None = None,
    keyed: bool = True,
    key_omits: Any = _ALWAYS_KEYED,
) -> Any:
    """An option: a dataclass field carrying its check and help text.

    Args:
        default: the only default of this option anywhere; :data:`REQUIRED` for none.
        check: what a valid value is (:mod:`probemeter._validation`), applied to the value as
            written in a file or on the command line.
        help: one line for ``--help`` and the docs' experiment-file reference.
        flag: the command-line flag, when it is not ``--`` + the name with dashes.
        parse: raw (TOML/CLI) value -> field value; default: lists become tuples.
        show: field value -> the value as written in a file (for ``to_dict`` and the docs).
        keyed: whether the option can change what is computed, so it belongs in the keys of
            stored units and cached features (``batch_size`` of an encoder does not).
        key_omits: a value left out of keys: the one every stored unit was computed with
            before the option could be set, so those units stay valid.
    """
    metadata = {
        "check": check,
        "help": help,
        "flag": flag,
        "parse": parse,
        "show": show,
        "keyed": keyed,
        "key_omits": key_omits,
    }
    if default is REQUIRED:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Option:
    """A read-only description of one option (derived from its field)."""

    name: str
    default: Any
    check: Check
    help: str
    annotation: str
    flag: str
    parse: Callable[[Any], Any]
    show: Callable[[Any], Any]
    keyed: bool = True
    key_omits: Any = _ALWAYS_KEYED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def written_default(self) -> Any:
        """The default as written in an experiment file (None when required)."""
        return None if self.required else self.show(self.default)

    def in_key(self, value: Any) -> bool:
        """Whether ``value`` (as written in a file) of this option goes into keys."""
        return self.keyed and (self.key_omits is _ALWAYS_KEYED or value != self.key_omits)


def plain(value: Any) -> Any:
    """Tuples as lists, for JSON and TOML."""
    return list(value) if isinstance(value, tuple) else value


def _parse(annotation: str) -> Callable[[Any], Any]:
    """The default conversion of a checked raw value to the field's type."""
    if annotation.startswith("tuple[float"):
        return lambda value: tuple(float(item) for item in value)
    if annotation.startswith("tuple"):
        return lambda value: None if value is None else tuple(value)
    if annotation == "float":
        return float
    return lambda value: value


class Declared:
    """Base of the declaration dataclasses (subclasses are ``@dataclass(frozen=True)``, every
    field declared with :func:`option`)."""

    #: where its options are written in an experiment file (``method``, ``task``)
    section: ClassVar[str] = ""

    @classmethod
    def options(cls) -> tuple[Option, ...]:
        """The options, in declaration order."""
        found = []
        for item in dataclasses.fields(cls):  # type: ignore[arg-type]
            meta = item.metadata
            default = REQUIRED if item.default is dataclasses.MISSING else item.default
            annotation = str(item.type)
            found.append(
                Option(
                    name=item.name,
                    default=default,
                    check=meta["check"],
                    help=meta["help"],
                    annotation=annotation,
                    flag=meta["flag"] or "--" + item.name.replace("_", "-"),
                    parse=meta["parse"] or _parse(annotation),
                    show=meta["show"] or plain,
                    keyed=meta["keyed"],
                    key_omits=meta["key_omits"],
                )
            )
        return tuple(found)

    @classmethod
    def option_named(cls, name: str) -> Option:
        """The option ``name``."""
        return next(opt for opt in cls.options() if opt.name == name)

    @classmethod
    def from_values(
        cls, values: Mapping[str, Any], where: Callable[[Option], str] | None = None
    ) -> tuple[Any, list[str]]:
        """The declaration from raw option values (a TOML table, parsed flags), with defaults
        filled in, and the problems found: ``"<where>: <problem>"`` per bad value (``where``
        names an option's location; default ``<section>.<name>``). Unknown keys are the
        caller's to report.

        With problems, the object returned is built from the valid values with defaults (or
        :data:`REQUIRED`) in place of the bad ones — only to check it further against the
        rest of the file, so that every problem is reported at once; never use it otherwise."""
        locate = where or (lambda opt: f"{cls.section}.{opt.name}")
        refused = cls._value_problems(values)
        options = cls.options()
        problems = [f"{locate(opt)}: {refused[opt.name]}" for opt in options if opt.name in refused]
        fields = {
            opt.name: opt.parse(values[opt.name])
            for opt in options
            if values.get(opt.name) is not None and opt.name not in refused
        }
        stand_ins = {opt.name: REQUIRED for opt in options if opt.required}
        declared = cls(**{**stand_ins, **fields})
        return declared, problems + [f"{locate(opt)}: {p}" for opt, p in declared.check_options()]

    @classmethod
    def refused(cls, values: Mapping[str, Any]) -> set[str]:
        """The options of ``values`` that :meth:`from_values` refuses: a required one missing,
        or a value its check refuses (their fields then hold stand-ins)."""
        return set(cls._value_problems(values))

    @classmethod
    def _value_problems(cls, values: Mapping[str, Any]) -> dict[str, str]:
        """Each refused option's problem with its raw value, by name: missing when required
        and not given (a value of None is not given), else what its check says."""
        found = {}
        for opt in cls.options():
            raw = values.get(opt.name)
            if raw is None:
                problem = "missing (required)" if opt.required else None
            else:
                problem = opt.check.problem(raw)
            if problem:
                found[opt.name] = problem
        return found

    def check_options(self) -> list[tuple[Option, str]]:
        """Problems of option combinations (each option valid alone), as (option, text)."""
        return []

    def values(self) -> dict[str, Any]:
        """Every option as written in a file (defaults filled in)."""
        return {opt.name: opt.show(getattr(self, opt.name)) for opt in self.options()}

    @classmethod
    def key_values(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` (as written in a file) without what keys leave out
        (:meth:`Option.in_key`); names that are no option are kept."""
        declared = {opt.name: opt for opt in cls.options()}
        return {
            name: value
            for name, value in values.items()
            if name not in declared or declared[name].in_key(value)
        }

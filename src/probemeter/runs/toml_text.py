"""Reading an experiment file's TOML, with syntax errors explained in plain words."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["read_toml"]


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML document of ``path`` (a byte-order mark is no content).

    Raises:
        ValueError: one line, ``"location: problem"``: the file cannot be read, is not UTF-8
            (with the line of the first bad byte), or is not valid TOML (line and column, what
            the parser's message means, and its words).
    """
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ValueError(f"file: cannot be read ({error.strerror})") from None
    try:
        return tomllib.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        byte = raw[error.start : error.start + 1].hex()
        raise ValueError(
            f"line {line}: not UTF-8 text (byte 0x{byte}); save the file as UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(_toml_problem(error)) from None


#: plain explanations of the TOML parser's messages (:mod:`tomllib`), by their start
_TOML_EXPLAINED = (
    ("Cannot overwrite a value", "a key is given twice, or a key and a table share a name"),
    ("Cannot declare", "a table is declared twice ([name] once per file; [[name]] repeats)"),
    ("Cannot mutate immutable namespace", "an inline table or array cannot be extended later"),
    ("Cannot redefine namespace", "an inline table or array cannot be extended later"),
    ("Duplicate inline table key", "a key is given twice inside { ... }"),
    (
        "Invalid value",
        'a value TOML cannot read: text needs quotes (kind = "pca"), true and '
        "false are lower-case, an array needs its closing ]",
    ),
    ("Expected '=' after a key", "a key without = and a value"),
    ("Invalid statement", "a line that is neither key = value nor a [table] header"),
    ("Expected newline or end of document", "more than one value on a line (text needs quotes)"),
    ("Expected ']'", "a table header without its closing ] (]] for [[...]])"),
    ("Unclosed array", "an array without its closing ]"),
    ("Unclosed inline table", "an inline table without its closing }"),
    ("Unterminated string", "a string without its closing quote"),
    ("Illegal character '\\n'", "a string without its closing quote on its line"),
    ("Illegal character", "a control character inside a string (write it escaped, e.g. \\t)"),
    (
        "Unescaped '\\'",
        'a backslash in a "..." string starts an escape: write \\\\ or use '
        "single quotes ('C:\\data')",
    ),
    ("Invalid hex value", "a \\u or \\U escape with a bad code"),
    ("Escaped character is not", "a \\u or \\U escape with a bad code"),
    ("Invalid date or datetime", "a date or time that does not exist"),
    ("Invalid initial character for a key", 'a key that must be quoted ("my key" = ...)'),
)


def _toml_problem(error: Exception) -> str:
    """A TOML syntax error as ``"line L, column C: not valid TOML: <what it means> (<the
    parser's words>)"``: :mod:`tomllib` ends its messages with ``(at line L, column C)`` or
    ``(at end of document)``."""
    message = str(error)
    found = re.fullmatch(r"(.*) \(at (line \d+, column \d+|end of document)\)", message, re.S)
    said, where = (found.group(1), found.group(2)) if found else (message, "file")
    where = "end of file" if where == "end of document" else where
    plain = next((text for start, text in _TOML_EXPLAINED if said.startswith(start)), None)
    return f"{where}: not valid TOML: " + (f"{plain} ({said})" if plain else said)

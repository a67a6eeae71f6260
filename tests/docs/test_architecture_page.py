"""docs/architecture.md names every module of the package, so that the page that says what lives
where stays true as modules are added, split or moved."""

from __future__ import annotations

import re
from pathlib import Path

import probemeter

PAGE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
PACKAGE = Path(probemeter.__file__).parent


def test_every_module_is_named_on_the_architecture_page():
    """Each module is named in backticks: by its path in the package (``runs/lock.py``)
    anywhere, or by its file name alone in the paragraph of its package (``**`runs/`**`` and
    the lines up to the next package or heading; ``kinds/`` is described inside ``runs/``'s), a
    module of the package's top level anywhere (``data.py``, ``_io.py``). Package
    ``__init__.py`` files are left out: they hold the packages' exports."""
    page = PAGE.read_text()
    named = set(re.findall(r"`([\w/]+\.py)`", page))
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if path.name == "__init__.py" or str(relative) in named:
            continue
        if len(relative.parts) == 1:
            found = path.name in named
        else:
            block = _package_paragraph(page, relative.parts[0])
            inner = "/".join(relative.parts[1:])
            found = bool(re.search(rf"`({re.escape(inner)}|{re.escape(path.name)})`", block))
        if not found:
            missing.append(str(relative))
    assert missing == [], missing


def _package_paragraph(page: str, package: str) -> str:
    """The lines of ``page`` from the bold ``**`package/`**`` that opens its description to the
    next bold package or module, or heading; empty when the page has none."""
    lines = page.splitlines()
    opening = f"**`{package}/`**"
    starts = [number for number, line in enumerate(lines) if line.startswith(opening)]
    if not starts:
        return ""
    block = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith(("**`", "#")):
            break
        block.append(line)
    return "\n".join([lines[starts[0]], *block])

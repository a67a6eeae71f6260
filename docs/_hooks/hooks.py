"""MkDocs hooks (``hooks:`` in ``mkdocs.yml``): generate the reference pages and the
tutorials' figures and tables while the site builds.

* ``reference/experiment-file.md``, ``reference/cli.md`` and ``api/*.md`` are generated from
  the code (:mod:`references`); the build fails when they miss an option (of a task, a
  representation kind, a method or ``[run]``) or a subcommand.
* every tutorial's experiment file runs (:mod:`tutorials`); its figures become site files
  ``tutorials/figures/*.png`` and its tables replace ``<!-- run:NAME/FILE -->`` markers;
* the docstrings' Sphinx roles (``:func:`x` ``) are shown as code, without the role.

The code documented is this checkout's ``src/`` (put first on ``sys.path``).
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent / "src"), str(HERE)]

import references  # noqa: E402
import tutorials  # noqa: E402
from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402

log = logging.getLogger("mkdocs.plugins.probemeter")
MARKER = re.compile(r"<!-- run:([\w.-]+/[\w.-]+) -->")
#: a Sphinx role as mkdocstrings renders it from a docstring: ``:func:`~a.b.c` `` becomes
#: ``:func:<code>~a.b.c</code>``
SPHINX_ROLE = re.compile(r":(?:func|meth|class|mod|data|attr|exc|obj):<code>(~?)([^<]*)</code>")
_outputs: tutorials.Outputs | None = None  # one run per process (``mkdocs serve`` reuses it)


def on_files(files: Files, config) -> Files:
    """Add the generated pages and the tutorials' figures to the site's files."""
    global _outputs
    experiment, cli = references.experiment_reference(), references.cli_reference()
    missing = references.missing_from_references(experiment, cli)
    if missing:
        raise PluginError("generated references are incomplete: " + "; ".join(missing))
    pages = {
        "reference/experiment-file.md": experiment,
        "reference/cli.md": cli,
        **references.api_pages(),
    }
    for path, text in pages.items():
        files.append(File.generated(config, path, content=text))
    if _outputs is None:
        _outputs = tutorials.run_tutorials()
        total = sum(_outputs.seconds.values())
        log.info("tutorials: %d experiments ran in %.1f s", len(_outputs.seconds), total)
    for path, data in _outputs.figures.items():
        files.append(File.generated(config, path, content=data))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace each ``<!-- run:NAME/FILE -->`` marker by that run's table or output."""
    assert _outputs is not None

    def table(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in _outputs.tables:
            raise PluginError(f"{page.file.src_uri}: no run output {key!r}")
        text = _outputs.tables[key]
        return f"```text\n{text}\n```" if key.endswith("/output") else text

    return MARKER.sub(table, markdown)


def on_page_content(html: str, page, config, files) -> str:
    """Show the docstrings' Sphinx roles as Sphinx would: ``:func:`~a.b.c` `` as ``c``,
    ``:func:`a.b.c` `` as ``a.b.c``, without the role."""

    def plain(match: re.Match[str]) -> str:
        name = match.group(2).rsplit(".", 1)[-1] if match.group(1) else match.group(2)
        return f"<code>{name}</code>"

    return SPHINX_ROLE.sub(plain, html)

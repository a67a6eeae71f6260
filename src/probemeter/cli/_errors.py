"""The command line's error boundary: every failure a user can cause or meet is one line.

Exit statuses (documented in the docs' Command line page and ``probemeter --help``):

* ``0`` — success;
* ``1`` — an unexpected internal error (a bug: the traceback is shown, please report it);
* ``2`` — bad arguments or input: a flag, an experiment file or a data file is invalid;
* ``3`` — the file system refused: a path cannot be read or written (permissions, a read-only
  or full disk, a missing folder);
* ``4`` — out of memory;
* ``130`` — interrupted (Ctrl-C). Work already finished is on disk; rerunning resumes it.
"""

from __future__ import annotations

import errno
import sys
import zipfile
from collections.abc import Callable

__all__ = ["EXIT_CODES", "guarded"]

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_FILESYSTEM = 3
EXIT_MEMORY = 4
EXIT_INTERRUPTED = 130

#: exit status → meaning, for the help text
EXIT_CODES = {
    EXIT_OK: "success",
    1: "internal error (a bug; traceback shown)",
    EXIT_USAGE: "bad arguments or input",
    EXIT_FILESYSTEM: "a file or folder cannot be read or written",
    EXIT_MEMORY: "out of memory",
    EXIT_INTERRUPTED: "interrupted",
}

#: what to do, per errno of an OSError
_FIXES = {
    errno.EACCES: "check its permissions or choose another path (e.g. --out)",
    errno.EPERM: "check its permissions or choose another path (e.g. --out)",
    errno.EROFS: "the disk is read-only: choose another path (e.g. --out)",
    errno.ENOSPC: "the disk is full: free space or write elsewhere (e.g. --out)",
    errno.EDQUOT: "the disk quota is exhausted: free space or write elsewhere (e.g. --out)",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder; give a file",
}


def guarded(handler: Callable[[], int]) -> int:
    """Run ``handler`` and turn failures into one line on stderr and a distinct exit status.

    Anything not listed in the module docstring propagates with its traceback: that is a bug.
    """
    try:
        return handler()
    except ValueError as error:  # includes our input errors and ExperimentError
        return _fail(str(error), EXIT_USAGE)
    except zipfile.BadZipFile as error:
        return _fail(f"not a readable archive ({error})", EXIT_USAGE)
    except OSError as error:
        return _fail(_describe_os_error(error), EXIT_FILESYSTEM)
    except MemoryError:
        return _fail(
            "out of memory: lower --max-memory or --n-jobs, use smaller probes, or fewer examples",
            EXIT_MEMORY,
        )
    except KeyboardInterrupt:
        return _fail("interrupted; finished work is saved, rerun to resume", EXIT_INTERRUPTED)


def _describe_os_error(error: OSError) -> str:
    """``"file system error at '/path': Permission denied; check its permissions …"``."""
    path = error.filename if error.filename is not None else ""
    reason = error.strerror or str(error)
    fix = _FIXES.get(error.errno or 0, "")
    where = f" {str(path)!r}" if path else ""
    return f"file system error at{where}: {reason}" + (f"; {fix}" if fix else "")


def _fail(message: str, status: int) -> int:
    print(f"probemeter: error: {message}", file=sys.stderr)
    return status

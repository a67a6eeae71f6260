"""One run at a time per run folder: a lock file that names the process holding it.

:class:`RunLock` creates ``RUN_DIR/run.lock`` atomically (``O_CREAT | O_EXCL``: of two runs
starting together exactly one creates it) and writes into it, as JSON, who holds it: the
process id, the host name, when the run started, and on Linux the process's start time (so a
pid reused by an unrelated process is not mistaken for the holder). The lock is released —
the file removed — when the ``with`` block ends, normally, by an exception or by Ctrl-C.

A second run into the same folder fails at once with :class:`RunLockedError` (a ValueError,
which the command line prints as one line) naming the folder, the holder's pid and host, and
the lock file to delete if that run is in fact over. A lock left behind by a process that no
longer runs on this host (killed with ``kill -9``, by the out-of-memory killer, a power cut) is
stale: the next run takes it over and says so with a :class:`StaleLockWarning`. A lock held by
a process on another host (a folder on a shared disk) cannot be checked and counts as held.

Taking over a stale lock is itself safe against runs starting together: only the run that
creates the takeover guard ``.run.lock.takeover`` (``O_EXCL`` again) may delete a stale lock,
and only after reading it once more under the guard; the lock is then created anew with
``O_EXCL``, which again only one run wins. The guard is needed because a stale lock cannot be
moved aside and a live one put back without a window in which a third run creates a lock of
its own, and two runs would hold the folder.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from probemeter.training.workers import pid_alive

__all__ = ["LOCK_FILE", "LockHolder", "RunLock", "RunLockedError", "StaleLockWarning"]

#: name of the lock file in a run folder
LOCK_FILE = "run.lock"

#: seconds a just-created, still empty lock file is given to receive its content
_WRITE_GRACE_S = 1.0
#: attempts to create the lock when other runs keep creating or removing it meanwhile
_ATTEMPTS = 20
#: a takeover guard older than this many seconds was left by a run that died taking over
_GUARD_STALE_S = 10.0


class RunLockedError(ValueError):
    """The run folder is locked by a run that is still going (or on another host).

    Attributes:
        run_dir: the folder.
        lock_file: its lock file, to delete by hand if that run is over after all.
        holder: who holds the lock (None if it kept changing hands).
    """

    def __init__(self, run_dir: Path, lock_file: Path, holder: LockHolder | None) -> None:
        self.run_dir, self.lock_file, self.holder = run_dir, lock_file, holder
        if holder is None:  # other runs kept creating and removing the lock meanwhile
            who = "another run (the lock changed hands while this run tried to take it)"
        else:
            host = holder.host
            where = "this host" if host == socket.gethostname() else f"host {host!r}"
            who = f"another run (PID {holder.pid} on {where}, since {holder.started})"
        super().__init__(
            f"run folder {str(run_dir)!r} is in use by {who}; wait for it to finish or stop "
            f"it, or choose another --out. If no run is using the folder, delete "
            f"{str(lock_file)!r}"
        )


class StaleLockWarning(UserWarning):
    """A lock left by a process that no longer runs was taken over."""


@dataclass(frozen=True)
class LockHolder:
    """Who holds a run lock: what the lock file says.

    Args:
        pid: the holder's process id.
        host: the host name of its machine (:func:`socket.gethostname`).
        started: when it took the lock (ISO 8601, UTC).
        process_start: an opaque token of the process's start (Linux: boot id and start time
            in clock ticks); None where the platform offers none.
    """

    pid: int
    host: str
    started: str
    process_start: str | None = None

    @classmethod
    def this_process(cls) -> LockHolder:
        """The holder record of the calling process, now."""
        return cls(
            pid=os.getpid(),
            host=socket.gethostname(),
            started=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            process_start=process_start_token(os.getpid()),
        )

    def to_text(self) -> str:
        """The lock file's content (one line of JSON)."""
        return json.dumps(asdict(self), sort_keys=True) + "\n"

    @classmethod
    def from_text(cls, text: str) -> LockHolder | None:
        """The holder written in a lock file; None if ``text`` is no such record (a file
        still being written, or damaged)."""
        try:
            record: Any = json.loads(text)
        except json.JSONDecodeError:
            return None
        if not isinstance(record, dict):
            return None
        pid, host, started = record.get("pid"), record.get("host"), record.get("started")
        token = record.get("process_start")
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            return None
        if not (isinstance(host, str) and isinstance(started, str)):
            return None
        if token is not None and not isinstance(token, str):
            return None
        return cls(pid, host, started, token)

    def stale_reason(self) -> str | None:
        """Why this holder's lock is stale, or None if it may still hold (its process runs,
        or it runs on another host, where it cannot be checked)."""
        if self.host != socket.gethostname():
            return None
        if not pid_alive(self.pid):
            return f"process {self.pid}, which took it at {self.started}, no longer runs"
        if self.process_start is not None:
            now = process_start_token(self.pid)
            if now is not None and now != self.process_start:
                return (
                    f"process {self.pid}, which took it at {self.started}, no longer runs "
                    "(its pid now belongs to another process)"
                )
        return None


def process_start_token(pid: int) -> str | None:
    """An opaque token that differs between two processes that had the same ``pid``: on Linux
    the boot id and the start time in ``/proc/<pid>/stat``; None elsewhere, or if ``pid``
    does not exist."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            boot_id = boot.read().strip()
    except OSError:
        return None
    # fields[0] is field 3 of proc(5) (the state); the start time is field 22
    return f"{boot_id}:{fields[19]}" if len(fields) > 19 else None


class RunLock:
    """The lock of one run folder, as a context manager: ``with RunLock(run_dir): ...``.

    Entering creates the folder if needed and the lock file ``run_dir / LOCK_FILE``
    (:meth:`acquire`); leaving removes it (:meth:`release`), also on an exception or
    KeyboardInterrupt. A folder the lock created and that is still empty when it is released
    (the run failed before writing anything) is removed too.

    Raises (on entering):
        RunLockedError: another run holds the folder.
        OSError: the folder or the lock file cannot be created (permissions, a full disk).
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.lock_file = self.run_dir / LOCK_FILE
        self._text: str | None = None  # our lock file's content while we hold it
        self._owner = 0  # the pid that acquired it (a forked child must not release it)
        self._created_dir = False

    @property
    def held(self) -> bool:
        """Whether this object holds the lock (in this process)."""
        return self._text is not None and self._owner == os.getpid()

    def acquire(self) -> LockHolder:
        """Take the lock, taking over a stale one (with a :class:`StaleLockWarning`).

        Returns:
            The holder record written to the lock file.

        Raises:
            RunLockedError: a run that is still going holds the folder.
            ValueError: this object holds the lock already.
            OSError: the folder or the lock file cannot be created or written.
        """
        if self.held:
            raise ValueError(f"the lock {str(self.lock_file)!r} is already held by this RunLock")
        if not self.run_dir.is_dir():
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._created_dir = True
        holder = LockHolder.this_process()
        taken_over: list[str] = []
        for _ in range(_ATTEMPTS):
            try:
                descriptor = os.open(self.lock_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                reason = self._judge_existing()
                if reason is not None:
                    taken_over.append(reason)
                continue
            self._write(descriptor, holder.to_text())
            for reason in taken_over[-1:]:
                warnings.warn(
                    f"took over the stale lock {str(self.lock_file)!r}: {reason}",
                    StaleLockWarning,
                    stacklevel=3,
                )
            return holder
        raise RunLockedError(self.run_dir, self.lock_file, self._current_holder())

    def _write(self, descriptor: int, text: str) -> None:
        """Write our record into the lock file just created; on failure remove it again."""
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
                stream.write(text)
        except BaseException:
            self.lock_file.unlink(missing_ok=True)
            raise
        self._text, self._owner = text, os.getpid()

    def _judge_existing(self) -> str | None:
        """Look at the existing lock file: raise if its holder runs; remove it if it is stale
        and return why (None when it vanished or changed meanwhile: try again)."""
        text = self._read_settled()
        if text is None:
            return None
        holder = LockHolder.from_text(text)
        if holder is None:
            reason = f"its content is not a lock record ({text[:80]!r})"
        else:
            reason = holder.stale_reason()
            if reason is None:
                raise RunLockedError(self.run_dir, self.lock_file, holder)
        return reason if self._remove_if_unchanged(text) else None

    def _read_settled(self) -> str | None:
        """The lock file's content, waiting up to :data:`_WRITE_GRACE_S` for a file that was
        just created and not yet written; None if it disappeared."""
        deadline = time.monotonic() + _WRITE_GRACE_S
        while True:
            try:
                text = self.lock_file.read_text(encoding="utf-8", errors="replace")
                age = time.time() - self.lock_file.stat().st_mtime
            except FileNotFoundError:
                return None
            if LockHolder.from_text(text) is not None or age > _WRITE_GRACE_S:
                return text
            if time.monotonic() > deadline:
                return text
            time.sleep(0.02)

    def _remove_if_unchanged(self, text: str) -> bool:
        """Remove the stale lock file if it still holds ``text``; whether it did.

        Only the process holding the takeover guard (a second file created with ``O_EXCL``)
        may remove a stale lock, so two runs can never both remove one — and a run can never
        remove a fresh lock another run created after the stale one went. A guard older than
        :data:`_GUARD_STALE_S` (its holder died mid-takeover) is removed.
        """
        guard = self.lock_file.with_name(f".{LOCK_FILE}.takeover")
        try:
            os.close(os.open(guard, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            try:
                if time.time() - guard.stat().st_mtime > _GUARD_STALE_S:
                    guard.unlink(missing_ok=True)
            except FileNotFoundError:
                pass
            time.sleep(0.01)  # another run is taking over: look again
            return False
        try:
            if self.lock_file.read_text(encoding="utf-8", errors="replace") != text:
                return False
            self.lock_file.unlink()
            return True
        except FileNotFoundError:
            return False
        finally:
            guard.unlink(missing_ok=True)

    def _current_holder(self) -> LockHolder | None:
        try:
            return LockHolder.from_text(self.lock_file.read_text(encoding="utf-8"))
        except OSError:
            return None

    def release(self) -> None:
        """Remove the lock file if this object holds it and it is still ours; never raises (a
        lock file that cannot be removed is reported by a warning, and the next run takes it
        over as stale)."""
        if not self.held:
            return
        text, self._text = self._text, None
        try:
            if self.lock_file.read_text(encoding="utf-8", errors="replace") == text:
                self.lock_file.unlink()
            if self._created_dir and not any(self.run_dir.iterdir()):
                self.run_dir.rmdir()
        except FileNotFoundError:
            pass
        except OSError as error:
            warnings.warn(
                f"could not remove the lock {str(self.lock_file)!r} ({error}); the next run "
                "takes it over, or delete it",
                StaleLockWarning,
                stacklevel=2,
            )

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

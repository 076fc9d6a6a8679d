"""Per-instance recovery folders: each running app owns one, locked; others never touch it.

Layout under the recovery root (default: the per-user data folder)::

    recovery/<pid>-<random>/lock          QLockFile of the owning process
    recovery/<pid>-<random>/journal.sgj   its journal (segapp.gui.journal)

A folder whose lock can be taken belongs to a process that is gone (QLockFile checks that
the owner's pid is not running; on Unix it also holds an ``flock`` the kernel releases when
the process dies, so a live owner's lock can never be broken). Only such *orphans* are offered
back, and only the instance that took an orphan's lock may delete it — after the user restored
(and this instance journalled) or explicitly discarded its work.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QLockFile

from ..io.atomic import remove_stale_temporaries
from .journal import JOURNAL_NAME, Journal, Recovered

LOCK_NAME = "lock"
DEBRIS_AGE = 3600.0  # seconds


def _lock(folder: Path) -> QLockFile:
    lock = QLockFile(str(folder / LOCK_NAME))
    lock.setStaleLockTime(0)  # stale only when the owner is dead, never because it is old
    return lock


class Instance:
    """This process's recovery folder, locked for as long as the app runs.

    Attributes
    ----------
    folder : Path
    journal : Journal
    """

    def __init__(self, root: str | os.PathLike) -> None:
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        self.folder = root / f"{os.getpid()}-{secrets.token_hex(4)}"
        self.folder.mkdir()
        self._lock = _lock(self.folder)
        if not self._lock.tryLock(0):
            raise OSError(f"cannot lock the recovery folder {self.folder}")
        self.journal = Journal(self.folder / JOURNAL_NAME)

    def remove(self) -> None:
        """Delete the folder (a save or an explicit discard made it unnecessary)."""
        self.journal.close()
        _remove_tree(self.folder, keep=LOCK_NAME)
        self._lock.unlock()
        with contextlib.suppress(OSError):
            self.folder.rmdir()


@dataclass
class Orphan:
    """The recovery folder of an instance that is gone; its lock is held by us now."""

    folder: Path
    lock: QLockFile
    recovered: Recovered | None

    @property
    def journal_path(self) -> Path:
        return self.folder / JOURNAL_NAME

    def last_change(self) -> datetime:
        """When its journal was last written (local time)."""
        path = self.journal_path if self.journal_path.exists() else self.folder
        return datetime.fromtimestamp(path.stat().st_mtime)

    def release(self) -> None:
        """Leave it for a later start (the user chose neither restore nor discard).

        Unlocking deletes the lock file; the journal stays, which marks the folder as an
        orphan for :func:`orphans`."""
        self.lock.unlock()

    def remove(self) -> None:
        _remove_tree(self.folder, keep=LOCK_NAME)
        self.lock.unlock()
        with contextlib.suppress(OSError):
            self.folder.rmdir()

    def clean_exports(self) -> list[str]:
        """Delete the temporary files of its unfinished exports; return the files not written."""
        missing: list[str] = []
        for export in (self.recovered.exports if self.recovered else []):
            for folder in {Path(p).parent for p in export["paths"]}:
                remove_stale_temporaries(folder)     # segapp's own leftovers, no live writer's
            missing += export["missing"]
        return missing


def orphans(root: str | os.PathLike) -> list[Orphan]:
    """Recovery folders of instances that are no longer running (locks taken), oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    # by the last write of the work (a journal's appends leave its folder's time alone), so
    # the newest work is offered first
    for folder in sorted((p for p in root.iterdir() if p.is_dir()), key=_last_write):
        if not (folder / LOCK_NAME).exists() and not (folder / JOURNAL_NAME).exists():
            # An instance between its mkdir and its lock (it writes a journal only once
            # locked), or debris of a failed start: only the latter is old. A journal without
            # a lock is work released for later (Orphan.release): an orphan.
            if time.time() - folder.stat().st_mtime > DEBRIS_AGE:
                shutil.rmtree(folder, ignore_errors=True)
            continue
        lock = _lock(folder)
        if not lock.tryLock(0):
            continue  # a live instance: not ours to read or delete
        found.append(Orphan(folder, lock, Journal.read(folder / JOURNAL_NAME)))
    return found


def _last_write(folder: Path) -> float:
    times = []
    for p in (folder, folder / JOURNAL_NAME):  # no journal (yet), or removed meanwhile
        with contextlib.suppress(OSError):
            times.append(p.stat().st_mtime)
    return max(times, default=0.0)


def _remove_tree(folder: Path, keep: str) -> None:
    """Delete everything in ``folder`` but ``keep`` (the lock goes last, by its owner)."""
    for p in folder.iterdir() if folder.is_dir() else []:
        if p.name == keep:
            continue
        with contextlib.suppress(OSError):
            shutil.rmtree(p) if p.is_dir() else p.unlink()

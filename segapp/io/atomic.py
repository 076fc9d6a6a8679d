"""Writing files atomically: the destination is the old file or the complete new one, never half.

One writer (:func:`write_files_atomic`) behind every output of segapp. A destination is
resolved first: its symbolic links are followed to the file they name (writing a link writes
its target and leaves the link a link), and what it names must be a new or a regular file —
never a device, FIFO, socket or directory, which the rename would replace. Data goes to a
hidden temporary file in that file's directory (same file system, so the rename is atomic),
is flushed and fsync'ed, then renamed into place; a set of files is staged completely before
any is renamed. Problems with the destination (missing directory, no permission, disk full)
are the matching :class:`OSError` subclass with a one-line message naming the file; data that
cannot be encoded is an :class:`~segapp.errors.InvalidInputError`.

Temporary files
---------------
Named ``.segapp-<16 hex digits>.tmp`` (:data:`TEMPORARY`): the same length whatever the
destination's name, so a name of up to 255 bytes can be written, and a pattern no other
program's files match. The writer holds an exclusive :func:`fcntl.flock` on its temporary
from its creation until the rename, and the lock goes with the process, kill -9 included: a
temporary whose lock can be taken is a killed writer's leftover, and
:func:`remove_stale_temporaries` removes only those (never a live writer's, of this or of
another process; never a file of another name). Where there is no ``flock`` (Windows) an
open file cannot be deleted, which protects a live writer the same way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Mapping, Sequence

import numpy as np
from PIL import Image

from ..errors import InvalidInputError
from .opening import PathLike, _describe

try:
    import fcntl
except ImportError:   # Windows: an open file cannot be deleted (module notes)
    fcntl = None  # type: ignore[assignment]


def _to_pil(array: np.ndarray) -> Image.Image:
    """Validate an array for PNG output and wrap it as a Pillow image."""
    a = np.asarray(array)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    if not np.issubdtype(a.dtype, np.integer):
        raise InvalidInputError(
            f"PNG data must be an integer array (uint8 image or label map), got {a.dtype}")
    if a.ndim == 3 and a.shape[2] in (3, 4):
        if a.dtype != np.uint8:
            if a.size and (a.min() < 0 or a.max() > 255):
                raise InvalidInputError("colour PNG data must be in 0..255")
            a = a.astype(np.uint8)
        return Image.fromarray(np.ascontiguousarray(a))  # mode RGB / RGBA from the shape
    if a.ndim != 2:
        raise InvalidInputError(f"PNG data must be (H, W), (H, W, 3) or (H, W, 4), got {a.shape}")
    if 0 in a.shape:
        raise InvalidInputError(f"cannot write an empty image of shape {a.shape}")
    lo, hi = int(a.min()), int(a.max())
    if lo < 0 or hi > 65535:
        raise InvalidInputError(f"grey PNG values must be in 0..65535, found {lo}..{hi}")
    if hi <= 255:
        return Image.fromarray(np.ascontiguousarray(a, dtype=np.uint8))  # mode L
    return Image.fromarray(np.ascontiguousarray(a, dtype=np.uint16))  # mode I;16


def _writer(data: np.ndarray | Image.Image | bytes) -> Callable[[BinaryIO], object]:
    """How one item of :func:`write_pngs_atomic` is written: an array as PNG (validated by
    :func:`_to_pil`), a Pillow image as PNG as it is (a palette or 16-bit image made by the
    caller), bytes as they are (a JSON file of the same set)."""
    if isinstance(data, (bytes, bytearray)):
        return lambda fh: fh.write(data)
    img = data if isinstance(data, Image.Image) else _to_pil(data)
    return lambda fh: img.save(fh, format="PNG")


def _os_error(exc: OSError, message: str) -> OSError:
    """Same OSError subclass and errno as ``exc`` but with a clean one-line message."""
    # Built-in subclasses (PermissionError, ...) take a plain message; foreign ones may not.
    cls = type(exc) if type(exc).__module__ == "builtins" else OSError
    new = cls(message)
    new.errno = exc.errno  # keeps errno checks working; str() stays just `message`
    return new


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "disk full"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied (directory not writable)"
    return (exc.strerror or str(exc)).lower()


# -- temporary files -----------------------------------------------------------------------
#: The names of segapp's temporary files (module notes).
TEMPORARY = re.compile(r"\.segapp-[0-9a-f]{16}\.tmp")


def _lock(fd: int, block: bool) -> bool:
    """An exclusive flock on ``fd``; False if another holds it (and ``block`` is False)."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    except OSError as exc:      # a file system without locks: nothing to compete with
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
            return True
        raise
    return True


def _names(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        a, b = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _create_temp(directory: Path) -> tuple[int, Path]:
    """A new locked temporary file in ``directory`` (same file system: atomic rename)."""
    for _ in range(16):
        tmp = directory / f".segapp-{secrets.token_hex(8)}.tmp"
        try:
            # 0o666 & ~umask, like a normal file (mkstemp's 0o600 would leak into the result).
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
        except FileExistsError:
            continue
        try:
            _lock(fd, block=True)
            # A cleaner may have taken the new file for a leftover between its creation and
            # the lock (it unlinks under the lock): then start again.
            if _names(fd, tmp):
                return fd, tmp
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise FileExistsError(f"cannot create a temporary file in {directory}")  # pragma: no cover


def remove_stale_temporaries(directory: PathLike) -> list[Path]:
    """Delete the temporary files killed segapp writers left in ``directory``; return them.

    Only files named like :data:`TEMPORARY` whose lock no process holds (module notes): a
    live writer's temporary, segapp's own or another instance's, and every other file stay.
    """
    removed: list[Path] = []
    try:
        names = [e.name for e in os.scandir(directory) if TEMPORARY.fullmatch(e.name)]
    except OSError:
        return removed
    for name in names:
        path = Path(directory) / name
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            if (fcntl is None or _lock(fd, block=False)) and _names(fd, path) \
                    and stat.S_ISREG(os.fstat(fd).st_mode):
                os.unlink(path)
                removed.append(path)
        except OSError:          # in use (Windows), or gone meanwhile
            pass
        finally:
            os.close(fd)
    return removed


@dataclass
class _Staged:
    """A complete temporary file, still open (its lock held) until it is published."""

    shown: Path          # the destination as the caller named it (messages)
    dest: Path           # the file written: ``shown`` with its links resolved
    tmp: Path
    fd: int

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)
        self.close()

    def close(self) -> None:
        """Close (and so unlock) the temporary file, once."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def _fsync_directory(directory: Path) -> None:
    """Persist the rename itself (POSIX); not possible/needed on Windows."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# -- destinations --------------------------------------------------------------------------
def _kind(mode: int) -> str:
    return ("a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


class _NotRegular(FileExistsError):
    """The destination is a device, FIFO or socket (the message is complete)."""


def _not_regular(shown: Path, mode: int) -> FileExistsError:
    exc = _NotRegular(f"cannot write {shown}: it is {_kind(mode)}, not a regular file; "
                          "choose a file name")
    exc.errno = errno.EEXIST
    return exc


def resolve_output(path: PathLike) -> Path:
    """The file writing ``path`` writes: ``path`` with its symbolic links followed.

    Raises the OSError writing it would raise when it names anything but a new or a regular
    file: a directory (IsADirectoryError), a device, FIFO or socket (FileExistsError), a link
    that cannot be followed to the file it names (``/proc/self/fd/N`` of a deleted file), or
    a name the system refuses (too long, a loop of links).
    """
    shown = Path(path)
    try:
        st = os.stat(shown)                       # through every link
    except FileNotFoundError:                     # new, or a link to a new file
        st = None
    except OSError as exc:
        raise _os_error(exc, f"cannot write {shown}: {_reason(exc)}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"cannot write {shown}: it is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _not_regular(shown, st.st_mode)
    real = Path(os.path.realpath(shown))
    if st is not None:
        try:
            again = os.stat(real)
            same = (again.st_dev, again.st_ino) == (st.st_dev, st.st_ino)
        except OSError:
            same = False
        if not same:
            exc = FileExistsError(f"cannot write {shown}: it is a link to a file that has no "
                                  "name to write to; choose a file name")
            exc.errno = errno.EEXIST
            raise exc
    return real


def _check_destination(shown: Path, overwrite: bool) -> Path:
    """The resolved destination of ``shown`` (:func:`resolve_output`), in an existing
    directory, and new unless ``overwrite``."""
    real = resolve_output(shown)
    if not real.parent.is_dir():
        raise FileNotFoundError(f"cannot write {shown}: directory {real.parent} does not exist")
    if not overwrite and os.path.lexists(real):
        raise FileExistsError(f"cannot write {shown}: file exists (overwrite not allowed)")
    return real


# -- the writer ----------------------------------------------------------------------------
Writer = Callable[[BinaryIO], object]


def write_files_atomic(items: Sequence[tuple[PathLike, Writer]],
                       overwrite: bool = True) -> list[Path]:
    """Write several files as one set: all of them, or (as far as the OS allows) none.

    Each destination is resolved and checked (:func:`resolve_output`), then every
    ``write(fh)`` fills a temporary file next to its destination; only when all of them are
    complete are they renamed into place (renames within a directory do not fail for lack of
    space). Any failure before that removes every temporary file and leaves all destinations
    untouched. Should a rename fail, the error says which files were written and which were
    not.

    Parameters
    ----------
    items : sequence of (path, write)
        Destinations (distinct) and the callables that write their bytes to a binary file.
    overwrite : bool, optional
        If False and a destination exists, nothing is written (FileExistsError).

    Returns
    -------
    list of pathlib.Path
        The written paths as given, in order.

    Raises
    ------
    OutputClashError
        Two destinations are the same file (a :class:`FileExistsError`).
    segapp.errors.InvalidInputError
        A ``write`` failed on the data (not the disk).
    OSError
        As for :func:`write_png_atomic`.
    """
    shown = [Path(p) for p, _ in items]
    check_distinct(shown)
    dests = [_check_destination(p, overwrite) for p in shown]
    staged: list[_Staged] = []
    try:
        for p, real, (_, write) in zip(shown, dests, items):
            staged.append(_stage(p, real, write))
    except BaseException:
        for s in staged:
            s.discard()
        raise
    written: list[Path] = []
    for i, s in enumerate(staged):
        try:
            _publish(s, overwrite)
        except OSError as exc:
            for rest in staged[i:]:
                rest.discard()
            done = f"wrote {', '.join(map(str, written))}; " if written else ""
            left = [str(d) for d in shown[i + 1:]]
            missing = f"; not written: {', '.join(left)}" if left else ""
            if isinstance(exc, _NotRegular):
                raise FileExistsError(f"{done}{exc}{missing}") from exc
            if isinstance(exc, FileExistsError) and not overwrite:
                raise FileExistsError(f"{done}cannot write {s.shown}: file exists (overwrite "
                                      f"not allowed){missing}") from exc
            raise _os_error(exc, f"{done}cannot write {s.shown}: {_reason(exc)}{missing}") \
                from exc
        written.append(s.shown)
        _fsync_directory(s.dest.parent)
    return written


def _stage(shown: Path, dest: Path, write: Writer) -> _Staged:
    """``write(fh)`` into a new locked temporary file next to ``dest``, fsync'ed; kept open."""
    fd: int | None = None
    tmp: Path | None = None
    try:
        fd, tmp = _create_temp(dest.parent)
        fh = os.fdopen(os.dup(fd), "wb")    # closing it keeps ``fd``, and so the lock
        with fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        return _Staged(shown, dest, tmp, fd)
    except BaseException as exc:
        if fd is not None:
            _Staged(shown, dest, tmp, fd).discard()
        if isinstance(exc, OSError):
            raise _os_error(exc, f"cannot write {shown}: {_reason(exc)}") from exc
        if isinstance(exc, Exception):   # an encoder failure is about the data, not the disk
            raise InvalidInputError(f"cannot write {shown}: {_describe(exc)}") from exc
        raise


def _publish(s: _Staged, overwrite: bool) -> None:
    """Move the finished temporary file to its destination atomically, then unlock it."""
    try:
        st = os.stat(s.dest)          # again: a FIFO or device may have appeared meanwhile
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        s.close()
        raise _not_regular(s.shown, st.st_mode)
    try:
        if overwrite:
            os.replace(s.tmp, s.dest)
            return
        # A hard link fails if dest appeared meanwhile, closing the exists()-check race.
        try:
            os.link(s.tmp, s.dest)
        except FileExistsError:
            raise
        except OSError:  # filesystem without hard links: best effort
            if os.path.lexists(s.dest):
                raise FileExistsError(errno.EEXIST, "file exists") from None
            os.replace(s.tmp, s.dest)
            return
        with contextlib.suppress(OSError):  # dest is complete; a stray temp link is harmless
            os.unlink(s.tmp)
    finally:
        s.close()


# -- the forms callers use -----------------------------------------------------------------
def write_png_atomic(path: PathLike, array: np.ndarray, overwrite: bool = True) -> Path:
    """Write a PNG so that ``path`` is either the old file or the complete new one.

    The data goes to a temporary file in the same directory, is flushed and fsync'ed, then
    renamed over ``path`` with :func:`os.replace`; on any error the temporary file is removed
    and an existing ``path`` is left untouched. A symbolic link is followed: its target is
    written and the link stays.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file.
    array : numpy.ndarray
        uint8 ``(H, W)``, ``(H, W, 3)`` or ``(H, W, 4)``; or an integer ``(H, W)`` label map,
        written as 8-bit grey if its values are <= 255 and as 16-bit grey otherwise.
    overwrite : bool, optional
        If False and ``path`` exists, raise :class:`FileExistsError`.

    Returns
    -------
    pathlib.Path
        The written path.

    Raises
    ------
    segapp.errors.InvalidInputError
        The array cannot be written as PNG (dtype, shape, value range).
    FileNotFoundError, PermissionError, FileExistsError, IsADirectoryError, OSError
        The destination cannot be written (missing directory, not writable, exists with
        ``overwrite=False``, disk full, name too long) or is not a regular file (a device
        such as ``/dev/null``, a FIFO, a socket: the rename would replace it —
        FileExistsError); the message is one line naming ``path``.
    """
    return write_pngs_atomic([(path, array)], overwrite)[0]


def write_pngs_atomic(items: Sequence[tuple[PathLike, np.ndarray]],
                      overwrite: bool = True) -> list[Path]:
    """Write several PNGs as one set (:func:`write_files_atomic`); every array is validated
    before the disk is touched.

    Parameters
    ----------
    items : sequence of (path, array)
        Destinations (distinct) and their data, as for :func:`write_png_atomic`; an item may
        also be a Pillow image (written as PNG as it is: a palette or 16-bit image) or bytes
        (written as they are, e.g. a JSON file that belongs to the set).
    overwrite : bool, optional
        If False and a destination exists, nothing is written (FileExistsError).

    Returns
    -------
    list of pathlib.Path
        The written paths, in order.

    Raises
    ------
    OutputClashError
        Two destinations are the same file (a :class:`FileExistsError`).
    segapp.errors.InvalidInputError, OSError
        As for :func:`write_png_atomic`.
    """
    writers = [_writer(a) for _, a in items]  # validate everything before touching the disk
    return write_files_atomic([(p, w) for (p, _), w in zip(items, writers)], overwrite)


def check_writable(path: PathLike, overwrite: bool = True) -> None:
    """Raise the OSError writing ``path`` would raise, without writing it.

    ``path`` must name a new or regular file (after its links are followed) in an existing
    directory that accepts a new file (a temporary file is created and removed: permission
    bits alone miss read-only mounts and ACLs), and must not exist when ``overwrite`` is False.
    """
    p = Path(path)
    real = _check_destination(p, overwrite)
    try:
        fd, tmp = _create_temp(real.parent)
    except OSError as exc:
        raise _os_error(exc, f"cannot write {p}: {_reason(exc)}") from exc
    _Staged(p, real, tmp, fd).discard()


class OutputClashError(FileExistsError):
    """Two outputs, or an output and an input, are the same file (one would destroy the
    other); an :class:`OSError` like every other output problem."""


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether ``a`` and ``b`` name the same file: the same path once links and ``..`` are
    resolved, or (both existing) the same inode, through hard links too."""
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one of them does not exist (yet): different files
        return False


def check_distinct(outputs: Sequence[PathLike],
                   inputs: Sequence[PathLike] | Mapping[str, PathLike] = ()) -> None:
    """Raise :class:`OutputClashError` if two ``outputs``, or an output and an input, are the
    same file (writing one would replace the other).

    ``inputs`` may map a name for the message (``"IMAGE"``) to each input path.
    """
    named = dict(inputs) if isinstance(inputs, Mapping) else {str(i): i for i in inputs}
    outs = [Path(o) for o in outputs]
    for i, out in enumerate(outs):
        for name, src in named.items():
            if same_file(out, src):
                raise OutputClashError(f"cannot write {out}: it is the input {name}, which "
                                       "it would replace; choose another output file")
        for other in outs[:i]:
            if same_file(out, other):
                raise OutputClashError(f"cannot write {out} twice: two outputs are that same "
                                       f"file ({other}); choose distinct names")


def write_bytes_atomic(path: PathLike, data: bytes, overwrite: bool = True) -> Path:
    """Write ``data`` so that ``path`` is either the old file or the complete new one.

    Same guarantees and errors as :func:`write_png_atomic` (the app uses it for its session
    and recovery files).
    """
    return write_files_atomic([(path, lambda fh: fh.write(data))], overwrite)[0]


def write_text_atomic(path: PathLike, text: str, overwrite: bool = True) -> Path:
    """Write ``text`` as UTF-8 (no newline translation) so that ``path`` is either the old file
    or the complete new one; same guarantees and errors as :func:`write_bytes_atomic`."""
    return write_bytes_atomic(path, text.encode("utf-8"), overwrite)


def save_labels(path: PathLike, labels: np.ndarray, overwrite: bool = True) -> Path:
    """Save a label map as an 8-bit greyscale PNG (pixel value = label id), atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file.
    labels : numpy.ndarray
        ``(H, W)`` integer label ids in 0..255.
    overwrite : bool, optional
        See :func:`write_png_atomic`.

    Returns
    -------
    pathlib.Path
        The written path.

    Raises
    ------
    segapp.errors.InvalidInputError
        Not a 2-D integer array or values outside 0..255.
    """
    lab = np.asarray(labels)
    if lab.ndim != 2:
        raise InvalidInputError(f"labels must be a 2-D (H, W) array, got shape {lab.shape}")
    if lab.dtype == np.bool_:
        lab = lab.astype(np.uint8)
    if not np.issubdtype(lab.dtype, np.integer):
        raise InvalidInputError(f"labels must be integers, got {lab.dtype}")
    if lab.size and (int(lab.min()) < 0 or int(lab.max()) > 255):
        lo, hi = int(lab.min()), int(lab.max())
        raise InvalidInputError(f"label ids must be in 0..255 for an 8-bit PNG, found {lo}..{hi}")
    return write_png_atomic(path, lab.astype(np.uint8), overwrite=overwrite)

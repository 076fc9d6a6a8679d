"""Writing files atomically: the destination is the old file or the complete new one, never half.

Data goes to a hidden temporary file in the destination's directory (same file system, so the
rename is atomic), is flushed and fsync'ed, then renamed into place; a set of PNGs is staged
completely before any is renamed. Problems with the destination (missing directory, no
permission, disk full) are the matching :class:`OSError` subclass with a one-line message
naming the file; data that cannot be encoded is an :class:`~segapp.errors.InvalidInputError`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO, Callable, Mapping, Sequence

import numpy as np
from PIL import Image

from ..errors import InvalidInputError
from .opening import PathLike, _describe


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


def _create_temp(directory: Path, name: str) -> tuple[int, Path]:
    """Create a new hidden temp file next to the target (same filesystem -> atomic rename)."""
    for _ in range(16):
        tmp = directory / f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            # 0o666 & ~umask, like a normal file (mkstemp's 0o600 would leak into the result).
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
            return fd, tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot create a temporary file in {directory}")  # pragma: no cover


def _fsync_directory(directory: Path) -> None:
    """Persist the rename itself (POSIX); not possible/needed on Windows."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_png_atomic(path: PathLike, array: np.ndarray, overwrite: bool = True) -> Path:
    """Write a PNG so that ``path`` is either the old file or the complete new one.

    The data goes to a temporary file in the same directory, is flushed and fsync'ed, then
    renamed over ``path`` with :func:`os.replace`; on any error the temporary file is removed
    and an existing ``path`` is left untouched.

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
        ``overwrite=False``, disk full) or is not a regular file (a device such as
        ``/dev/null``, a FIFO, a socket: the rename would replace it — FileExistsError); the
        message is one line naming ``path``.
    """
    return write_pngs_atomic([(path, array)], overwrite)[0]


def write_pngs_atomic(items: Sequence[tuple[PathLike, np.ndarray]],
                      overwrite: bool = True) -> list[Path]:
    """Write several PNGs as one set: all of them, or (as far as the OS allows) none.

    Every array is validated and encoded into a temporary file next to its destination first;
    only when all of them are complete are they renamed into place (renames within a
    directory do not fail for lack of space). Any failure before that removes every temporary
    file and leaves all destinations untouched. Should a rename fail, the error says which
    files were written and which were not.

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
    dests = [Path(p) for p, _ in items]
    check_distinct(dests)
    writers = [_writer(a) for _, a in items]  # validate everything before touching the disk
    for p in dests:
        _check_destination(p, overwrite)   # staging below is the real test of the directory
    staged: list[Path] = []
    try:
        for p, write in zip(dests, writers):
            staged.append(_stage(p, write))
    except BaseException:
        _discard(staged)
        raise
    written: list[Path] = []
    for i, (p, tmp) in enumerate(zip(dests, staged)):
        try:
            _publish(tmp, p, overwrite)
        except OSError as exc:
            _discard(staged[i:])
            done = f"wrote {', '.join(map(str, written))}; " if written else ""
            rest = [str(d) for d in dests[i + 1:]]
            missing = f"; not written: {', '.join(rest)}" if rest else ""
            if isinstance(exc, FileExistsError) and not overwrite:
                raise FileExistsError(f"{done}cannot write {p}: file exists (overwrite not "
                                      f"allowed){missing}") from exc
            raise _os_error(exc, f"{done}cannot write {p}: {_reason(exc)}{missing}") from exc
        written.append(p)
        _fsync_directory(p.parent)
    return written


def check_writable(path: PathLike, overwrite: bool = True) -> None:
    """Raise the OSError writing ``path`` would raise, without writing it.

    The directory must exist and accept a new file (a temporary file is created and removed:
    permission bits alone miss read-only mounts and ACLs); ``path`` must not be a directory,
    nor exist when ``overwrite`` is False.
    """
    p = Path(path)
    _check_destination(p, overwrite)
    try:
        fd, tmp = _create_temp(p.parent, p.name)
    except OSError as exc:
        raise _os_error(exc, f"cannot write {p}: {_reason(exc)}") from exc
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


class OutputClashError(FileExistsError):
    """Two outputs, or an output and an input, are the same file (one would destroy the
    other); an :class:`OSError` like every other output problem."""


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether ``a`` and ``b`` name the same file: the same absolute path, or (both existing)
    the same inode, through symlinks, hard links and ``..``."""
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:               # one of them does not exist (yet): different files
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


def _check_destination(p: Path, overwrite: bool) -> None:
    directory = p.parent
    if not directory.is_dir():
        raise FileNotFoundError(f"cannot write {p}: directory {directory} does not exist")
    if p.is_dir():
        raise IsADirectoryError(f"cannot write {p}: it is a directory")
    _check_regular(p)
    if not overwrite and p.exists():
        raise FileExistsError(f"cannot write {p}: file exists (overwrite not allowed)")


def _check_regular(p: Path) -> None:
    """Refuse a destination that exists and is not a regular file (through symlinks).

    The atomic rename would *replace* a device node (``/dev/null`` as root), a FIFO or a
    socket with a regular file: the rename goes over the name, not into the device.
    """
    try:
        mode = os.stat(p).st_mode
    except OSError:          # missing (the usual case) or a dangling link: a new file
        return
    if not stat.S_ISREG(mode):
        kind = ("a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
                "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else
                "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        exc = FileExistsError(f"cannot write {p}: it is {kind}, not a regular file; choose a "
                              "file name")
        exc.errno = errno.EEXIST
        raise exc


def write_bytes_atomic(path: PathLike, data: bytes, overwrite: bool = True) -> Path:
    """Write ``data`` so that ``path`` is either the old file or the complete new one.

    Same guarantees and errors as :func:`write_png_atomic` (the app uses it for its session
    and recovery files).
    """
    p = Path(path)
    check_writable(p, overwrite)
    tmp = _stage(p, lambda fh: fh.write(data))
    try:
        _publish(tmp, p, overwrite)
    except OSError as exc:
        _discard([tmp])
        if isinstance(exc, FileExistsError) and not overwrite:
            raise FileExistsError(f"cannot write {p}: file exists (overwrite not allowed)") from exc
        raise _os_error(exc, f"cannot write {p}: {_reason(exc)}") from exc
    _fsync_directory(p.parent)
    return p


def write_text_atomic(path: PathLike, text: str, overwrite: bool = True) -> Path:
    """Write ``text`` as UTF-8 (no newline translation) so that ``path`` is either the old file
    or the complete new one; same guarantees and errors as :func:`write_bytes_atomic`."""
    return write_bytes_atomic(path, text.encode("utf-8"), overwrite)


def _stage(p: Path, write: Callable[[BinaryIO], object]) -> Path:
    """``write(fh)`` into a new temporary file next to ``p``, fsync'ed; returns its path."""
    tmp: Path | None = None
    try:
        fd, tmp = _create_temp(p.parent, p.name)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        return tmp
    except OSError as exc:
        _discard([tmp] if tmp is not None else [])
        raise _os_error(exc, f"cannot write {p}: {_reason(exc)}") from exc
    except Exception as exc:  # an encoder failure is about the data, not the disk
        _discard([tmp] if tmp is not None else [])
        raise InvalidInputError(f"cannot write {p}: {_describe(exc)}") from exc


def _discard(paths: Sequence[Path]) -> None:
    for t in paths:
        with contextlib.suppress(OSError):
            os.unlink(t)


def _publish(tmp: Path, dest: Path, overwrite: bool) -> None:
    """Move the finished temp file to ``dest`` atomically."""
    _check_regular(dest)      # again: a FIFO or device may have appeared since the check
    if overwrite:
        os.replace(tmp, dest)
        return
    # A hard link fails if dest appeared meanwhile, closing the exists()-check race.
    try:
        os.link(tmp, dest)
    except FileExistsError:
        raise
    except OSError:  # filesystem without hard links: best effort
        if dest.exists():
            raise FileExistsError(errno.EEXIST, "file exists") from None
        os.replace(tmp, dest)
        return
    with contextlib.suppress(OSError):  # dest is complete; a stray temp link is harmless
        os.unlink(tmp)


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

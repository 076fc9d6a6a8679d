"""Tests of segapp.io: odd image files, scribble formats and the atomic PNG writer."""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from segapp import io
from segapp.errors import InvalidInputError
from segapp.io.render import PALETTE


def _raises_invalid(path, func=io.read_image, **kwargs) -> str:
    """Call ``func`` expecting exactly InvalidInputError naming the file; return the message."""
    with pytest.raises(InvalidInputError) as info:
        func(path, **kwargs)
    assert type(info.value) is InvalidInputError  # never a PIL exception type
    message = str(info.value)
    assert Path(path).name in message
    assert "\n" not in message
    return message


def _temp_files(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


# --------------------------------------------------------------------------------------------
# read_image: modes
# --------------------------------------------------------------------------------------------
def test_rgb_png_exact(tmp_path):
    rgb = np.random.default_rng(0).integers(0, 256, (7, 9, 3), dtype=np.uint8)
    Image.fromarray(rgb).save(tmp_path / "a.png")
    out = io.read_image(tmp_path / "a.png")
    assert out.dtype == np.float32 and out.shape == (7, 9, 3)
    np.testing.assert_array_equal(out, rgb.astype(np.float32) / 255)


def test_grey_8bit_stays_2d(tmp_path):
    grey = np.arange(6 * 5, dtype=np.uint8).reshape(6, 5) * 8
    Image.fromarray(grey).save(tmp_path / "g.png")
    out = io.read_image(str(tmp_path / "g.png"))
    assert out.shape == (6, 5) and out.dtype == np.float32
    np.testing.assert_array_equal(out, grey / np.float32(255))


def test_grey_16bit_png(tmp_path):
    a = np.array([[0, 1, 256], [30000, 65534, 65535]], dtype=np.uint16)
    Image.fromarray(a).save(tmp_path / "g16.png")
    out = io.read_image(tmp_path / "g16.png")
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out, a.astype(np.float32) / 65535)


def test_grey_16bit_big_endian(tmp_path):
    a = np.array([[0, 1000], [40000, 65535]], dtype=">u2")
    img = Image.frombytes("I;16B", (2, 2), a.tobytes())
    assert img.mode == "I;16B"
    out = io.images._to_float(img)
    np.testing.assert_allclose(out, a.astype(np.float32) / 65535, rtol=0, atol=1e-7)


@pytest.mark.parametrize("top, divisor", [(60000, 65535), (1_000_000, 1_000_000)])
def test_int32_scaling(tmp_path, top, divisor):
    a = np.array([[0, top // 2], [top, -5]], dtype=np.int32)
    Image.fromarray(a).save(tmp_path / "i.tif")
    assert Image.open(tmp_path / "i.tif").mode == "I"
    out = io.read_image(tmp_path / "i.tif")
    expected = np.clip(a, 0, None).astype(np.float64) / divisor
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-7)


def test_float_in_unit_range_kept_and_nan_zeroed(tmp_path):
    a = np.array([[0.0, 0.25], [np.nan, 1.0]], dtype=np.float32)
    Image.fromarray(a).save(tmp_path / "f.tif")
    out = io.read_image(tmp_path / "f.tif")
    np.testing.assert_array_equal(out, [[0.0, 0.25], [0.0, 1.0]])


def test_float_out_of_range_normalised(tmp_path):
    a = np.array([[-2.0, 0.0], [2.0, 6.0]], dtype=np.float32)
    Image.fromarray(a).save(tmp_path / "f.tif")
    out = io.read_image(tmp_path / "f.tif")
    np.testing.assert_allclose(out, [[0.0, 0.25], [0.5, 1.0]])


def test_mode_1(tmp_path):
    a = np.array([[True, False], [False, True]])
    Image.fromarray(a).save(tmp_path / "b.png")
    assert Image.open(tmp_path / "b.png").mode == "1"
    np.testing.assert_array_equal(io.read_image(tmp_path / "b.png"), a.astype(np.float32))


def test_la_drops_alpha(tmp_path):
    img = Image.merge("LA", [Image.fromarray(np.array([[10, 200]], np.uint8)),
                             Image.fromarray(np.array([[0, 255]], np.uint8))])
    img.save(tmp_path / "la.png")
    out = io.read_image(tmp_path / "la.png")
    np.testing.assert_array_equal(out, np.array([[10, 200]], np.float32) / 255)


def test_rgba_drops_alpha(tmp_path):
    rgba = np.zeros((2, 2, 4), np.uint8)
    rgba[..., :3] = [[[10, 20, 30], [40, 50, 60]], [[70, 80, 90], [255, 0, 128]]]
    rgba[..., 3] = [[0, 128], [255, 1]]
    Image.fromarray(rgba).save(tmp_path / "rgba.png")
    out = io.read_image(tmp_path / "rgba.png")
    assert out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out, rgba[..., :3] / np.float32(255))


@pytest.mark.parametrize("transparency", [False, True])
def test_palette(tmp_path, transparency):
    img = Image.new("P", (3, 1))
    img.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * (256 * 3 - 9))
    img.putdata([0, 1, 2])
    if transparency:
        img.info["transparency"] = 1
    img.save(tmp_path / "p.png")
    out = io.read_image(tmp_path / "p.png")
    np.testing.assert_array_equal(out, [[[1, 0, 0], [0, 1, 0], [0, 0, 1]]])


def test_cmyk(tmp_path):
    cmyk = np.array([[[0, 0, 0, 0], [255, 0, 0, 0], [0, 0, 0, 255]]], dtype=np.uint8)
    Image.frombytes("CMYK", (3, 1), cmyk.tobytes()).save(tmp_path / "c.tif")
    out = io.read_image(tmp_path / "c.tif")
    np.testing.assert_array_equal(out, [[[1, 1, 1], [0, 1, 1], [0, 0, 0]]])


def test_exif_orientation_applied(tmp_path):
    # 40x60 (HxW) image, 20-pixel solid blocks so JPEG error stays small in block centres.
    blocks = np.array([[0, 80, 160], [240, 40, 200]], dtype=np.uint8)
    grey = np.kron(blocks, np.ones((20, 20), np.uint8))
    img = Image.fromarray(grey)
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: displayed rotated 90 degrees clockwise
    img.save(tmp_path / "rot.jpg", exif=exif.tobytes(), quality=95)
    out = io.read_image(tmp_path / "rot.jpg")
    expected = np.rot90(grey, k=-1) / 255.0
    assert out.shape == expected.shape == (60, 40)
    # Compare block centres only: JPEG rings near the block edges.
    np.testing.assert_allclose(out[10::20, 10::20], expected[10::20, 10::20], atol=0.03)


def test_corrupt_exif_is_ignored(tmp_path, monkeypatch):
    Image.fromarray(np.full((3, 4), 7, np.uint8)).save(tmp_path / "e.png")

    def broken(_img):
        raise SyntaxError("bad EXIF")

    monkeypatch.setattr(io.opening.ImageOps, "exif_transpose", broken)
    assert io.read_image(tmp_path / "e.png").shape == (3, 4)


# --------------------------------------------------------------------------------------------
# read_image: failures
# --------------------------------------------------------------------------------------------
def test_missing_file(tmp_path):
    assert "no such file" in _raises_invalid(tmp_path / "missing.png")


def test_directory(tmp_path):
    d = tmp_path / "dir.png"
    d.mkdir()
    assert "directory" in _raises_invalid(d)


def test_text_file_renamed_png(tmp_path):
    p = tmp_path / "text.png"
    p.write_text("this is not an image\n")
    assert "not a recognised image" in _raises_invalid(p)


def test_zero_byte_file(tmp_path):
    p = tmp_path / "empty.png"
    p.write_bytes(b"")
    _raises_invalid(p)


@pytest.mark.parametrize("fmt", ["png", "jpeg"])
def test_truncated_file(tmp_path, fmt):
    rgb = np.random.default_rng(1).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    full = tmp_path / f"full.{fmt}"
    Image.fromarray(rgb).save(full, format=fmt.upper())
    data = full.read_bytes()
    p = tmp_path / f"cut.{fmt}"
    p.write_bytes(data[: len(data) // 2])
    _raises_invalid(p)


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    return (struct.pack(">I", len(payload)) + kind + payload
            + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF))


def test_zero_size_png(tmp_path):
    ihdr = struct.pack(">IIBBBBB", 0, 5, 8, 0, 0, 0, 0)  # width 0
    data = (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr)
            + _png_chunk(b"IDAT", zlib.compress(b"")) + _png_chunk(b"IEND", b""))
    p = tmp_path / "zero.png"
    p.write_bytes(data)
    _raises_invalid(p)


def test_zero_size_image_reported(tmp_path, monkeypatch):
    # Pillow itself rejects most 0-pixel files; make sure our own check names the problem.
    p = tmp_path / "z.png"
    p.write_bytes(b"x")
    monkeypatch.setattr(io.opening.Image, "open", lambda *_a, **_k: Image.new("L", (0, 5)))
    assert "zero size" in _raises_invalid(p)


def test_pixel_limit(tmp_path):
    Image.fromarray(np.zeros((20, 20), np.uint8)).save(tmp_path / "bomb.png")
    for limit in (100, 399):       # Pillow's check (warning above the limit) and ours
        msg = _raises_invalid(tmp_path / "bomb.png", pixel_limit=limit)
        assert "too large" in msg and f"limit of {limit}" in msg and "--pixel-limit" in msg
    saved = Image.MAX_IMAGE_PIXELS
    assert io.read_image(tmp_path / "bomb.png", pixel_limit=400).shape == (20, 20)
    assert io.read_image(tmp_path / "bomb.png", pixel_limit=None).shape == (20, 20)
    assert Image.MAX_IMAGE_PIXELS == saved              # Pillow's global is restored


# --------------------------------------------------------------------------------------------
# read_scribbles
# --------------------------------------------------------------------------------------------
def test_scribbles_grey_ids(tmp_path):
    ids = np.array([[0, 1, 2], [9, 0, 3]], dtype=np.uint8)
    Image.fromarray(ids).save(tmp_path / "s.png")
    out = io.read_scribbles(tmp_path / "s.png", shape=(2, 3, 3))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ids)


def test_scribbles_16bit_ids(tmp_path):
    ids = np.array([[0, 4], [7, 1]], dtype=np.uint16)
    Image.fromarray(ids).save(tmp_path / "s16.png")
    np.testing.assert_array_equal(io.read_scribbles(tmp_path / "s16.png"), ids)


def test_scribbles_palette_uses_indices(tmp_path):
    img = Image.new("P", (4, 1))
    img.putpalette([0, 0, 0, 255, 255, 255, 10, 200, 30, 1, 2, 3] + [0] * (256 * 3 - 12))
    img.putdata([0, 1, 2, 3])
    img.save(tmp_path / "p.png")
    np.testing.assert_array_equal(io.read_scribbles(tmp_path / "p.png"), [[0, 1, 2, 3]])


def test_scribbles_la_transparent_is_unlabelled(tmp_path):
    img = Image.merge("LA", [Image.fromarray(np.array([[1, 2, 3]], np.uint8)),
                             Image.fromarray(np.array([[255, 0, 255]], np.uint8))])
    img.save(tmp_path / "la.png")
    np.testing.assert_array_equal(io.read_scribbles(tmp_path / "la.png"), [[1, 0, 3]])


def test_scribbles_palette_colours_keep_their_ids(tmp_path):
    rgb = np.zeros((4, 5, 3), np.uint8)
    rgb[0, 0] = PALETTE[2]  # label 3 appears first in raster order
    rgb[1, 1] = PALETTE[0]
    rgb[2, 2] = PALETTE[4].astype(int) + 10  # slightly off (editor colour picking)
    rgb[3, 3] = (10, 12, 8)  # near-black noise is unlabelled
    Image.fromarray(rgb).save(tmp_path / "c.png")
    out = io.read_scribbles(tmp_path / "c.png")
    expected = np.zeros((4, 5), np.int32)
    expected[0, 0], expected[1, 1], expected[2, 2] = 3, 1, 5
    np.testing.assert_array_equal(out, expected)


def test_scribbles_other_colours_numbered_by_first_appearance(tmp_path):
    rgba = np.zeros((3, 4, 4), np.uint8)
    rgba[0, 2] = (255, 255, 255, 255)  # white, first -> 1
    rgba[1, 0] = (255, 0, 0, 255)  # red -> 2
    rgba[1, 3] = (255, 255, 255, 255)  # white again -> 1
    rgba[2, 1] = (0, 0, 255, 255)  # blue -> 3
    rgba[2, 3] = (0, 255, 0, 40)  # mostly transparent -> unlabelled
    Image.fromarray(rgba).save(tmp_path / "c.png")
    np.testing.assert_array_equal(io.read_scribbles(tmp_path / "c.png"),
                                  [[0, 0, 1, 0], [2, 0, 0, 1], [0, 3, 0, 0]])


def test_scribbles_grey_rgb_label_map(tmp_path):
    ids = np.array([[0, 1], [2, 3]], np.uint8)
    Image.fromarray(np.repeat(ids[..., None], 3, axis=2)).save(tmp_path / "g.png")
    np.testing.assert_array_equal(io.read_scribbles(tmp_path / "g.png"), ids)


def test_scribbles_too_many_colours(tmp_path):
    import colorsys
    # ten clearly different hues (shades of one colour, e.g. (128, 0, 0) and (255, 0, 0),
    # are one label: anti-aliasing against black makes them)
    colours = [[round(255 * v) for v in colorsys.hsv_to_rgb(h / 10, 1, 1)] for h in range(10)]
    rgb = np.zeros((10, 10, 3), np.uint8)      # strokes on black (a photo is refused first)
    rgb[0] = colours
    Image.fromarray(rgb).save(tmp_path / "many.png")
    assert "distinct stroke colours" in _raises_invalid(tmp_path / "many.png", io.read_scribbles)


def test_scribbles_value_out_of_range(tmp_path):
    Image.fromarray(np.array([[0, 12]], np.uint8)).save(tmp_path / "big.png")
    assert "12" in _raises_invalid(tmp_path / "big.png", io.read_scribbles)


def test_scribbles_negative_value(tmp_path):
    Image.fromarray(np.array([[0, -1]], np.int32)).save(tmp_path / "neg.tif")
    assert "found -1" in _raises_invalid(tmp_path / "neg.tif", io.read_scribbles)  # not the path


def test_scribbles_shape_mismatch(tmp_path):
    Image.fromarray(np.zeros((4, 6), np.uint8)).save(tmp_path / "s.png")
    msg = _raises_invalid(tmp_path / "s.png", io.read_scribbles, shape=(5, 6))
    assert "4x6" in msg and "5x6" in msg


def test_scribbles_unreadable(tmp_path):
    (tmp_path / "s.png").write_text("nope")
    _raises_invalid(tmp_path / "s.png", io.read_scribbles)


# --------------------------------------------------------------------------------------------
# write_png_atomic / save_labels
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, mode", [((5, 4), "L"), ((5, 4, 3), "RGB"), ((5, 4, 4), "RGBA")])
def test_write_uint8_roundtrip(tmp_path, shape, mode):
    a = np.random.default_rng(2).integers(0, 256, shape, dtype=np.uint8)
    out = io.write_png_atomic(tmp_path / "x.png", a)
    with Image.open(out) as img:
        assert img.format == "PNG" and img.mode == mode
        np.testing.assert_array_equal(np.asarray(img), a)
    assert _temp_files(tmp_path) == []


def test_write_int_labels_8_and_16_bit(tmp_path):
    small = np.array([[0, 3], [255, 1]], dtype=np.int64)
    io.write_png_atomic(tmp_path / "s.png", small)
    with Image.open(tmp_path / "s.png") as img:
        assert img.mode == "L"
        np.testing.assert_array_equal(np.asarray(img), small)
    big = np.array([[0, 256], [65535, 7]], dtype=np.int32)
    io.write_png_atomic(tmp_path / "b.png", big)
    with Image.open(tmp_path / "b.png") as img:
        assert img.mode.startswith("I")
        np.testing.assert_array_equal(np.asarray(img).astype(np.int64), big)


@pytest.mark.parametrize("bad", [
    np.zeros((3, 3), np.float32),
    np.array([[-1, 2]]),
    np.array([[70000]]),
    np.zeros((3, 3, 2), np.uint8),
    np.zeros((0, 3), np.uint8),
])
def test_write_rejects_bad_arrays(tmp_path, bad):
    with pytest.raises(InvalidInputError):
        io.write_png_atomic(tmp_path / "x.png", bad)
    assert list(tmp_path.iterdir()) == []


def test_write_missing_directory(tmp_path):
    target = tmp_path / "nope" / "x.png"
    with pytest.raises(FileNotFoundError) as info:
        io.write_png_atomic(target, np.zeros((2, 2), np.uint8))
    assert str(target) in str(info.value) and "does not exist" in str(info.value)


def test_write_no_overwrite(tmp_path):
    target = tmp_path / "x.png"
    target.write_bytes(b"old")
    with pytest.raises(FileExistsError) as info:
        io.write_png_atomic(target, np.zeros((2, 2), np.uint8), overwrite=False)
    assert "exists" in str(info.value)
    assert target.read_bytes() == b"old"
    assert _temp_files(tmp_path) == []
    io.write_png_atomic(tmp_path / "new.png", np.zeros((2, 2), np.uint8), overwrite=False)
    assert (tmp_path / "new.png").is_file()


def test_write_overwrites_by_default(tmp_path):
    target = tmp_path / "x.png"
    target.write_bytes(b"old")
    io.write_png_atomic(target, np.full((2, 2), 9, np.uint8))
    np.testing.assert_array_equal(np.asarray(Image.open(target)), 9)


@pytest.mark.parametrize("victim", ["replace", "fsync"])
def test_write_failure_leaves_old_file_and_no_temp(tmp_path, monkeypatch, victim):
    target = tmp_path / "x.png"
    target.write_bytes(b"old contents")

    def disk_full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io.atomic.os, victim, disk_full)
    with pytest.raises(OSError) as info:
        io.write_png_atomic(target, np.zeros((8, 8, 3), np.uint8))
    assert info.value.errno == errno.ENOSPC
    assert str(target) in str(info.value) and "disk full" in str(info.value)
    assert target.read_bytes() == b"old contents"
    assert _temp_files(tmp_path) == []


@pytest.mark.parametrize("victim", ["replace", "fsync"])
def test_text_write_failure_leaves_old_file_and_no_temp(tmp_path, monkeypatch, victim):
    target = tmp_path / "report.csv"
    target.write_text("old")

    def disk_full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io.atomic.os, victim, disk_full)
    with pytest.raises(OSError, match="disk full") as info:
        io.write_text_atomic(target, "new")
    assert str(target) in str(info.value)
    assert target.read_text() == "old" and _temp_files(tmp_path) == []


def test_text_write_is_utf8_without_newline_translation(tmp_path):
    target = tmp_path / "report.csv"
    text = "image,error\r\nä.png,σ too small\n"
    assert io.write_text_atomic(target, text) == target
    assert target.read_bytes() == text.encode("utf-8")
    assert _temp_files(tmp_path) == []
    with pytest.raises(FileExistsError):
        io.write_text_atomic(target, "x", overwrite=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        io.write_text_atomic(tmp_path / "missing" / "r.csv", "x")


def test_write_encoder_failure_cleans_up(tmp_path, monkeypatch):
    def boom(*_args, **_kwargs):
        raise RuntimeError("encoder exploded")

    monkeypatch.setattr(Image.Image, "save", boom)
    with pytest.raises(InvalidInputError):
        io.write_png_atomic(tmp_path / "x.png", np.zeros((2, 2), np.uint8))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_written_file_respects_umask(tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    io.write_png_atomic(tmp_path / "x.png", np.zeros((2, 2), np.uint8))
    assert (tmp_path / "x.png").stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0,
                    reason="needs POSIX permissions and a non-root user")
def test_write_read_only_directory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(PermissionError) as info:
            io.write_png_atomic(ro / "x.png", np.zeros((2, 2), np.uint8))
        assert "permission denied" in str(info.value)
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)


def test_write_permission_error_simulated(tmp_path, monkeypatch):
    # Runs as root too (where the real read-only test above is skipped).
    def denied(*_args, **_kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(io.atomic.os, "open", denied)
    with pytest.raises(PermissionError) as info:
        io.write_png_atomic(tmp_path / "x.png", np.zeros((2, 2), np.uint8))
    assert str(info.value) == f"cannot write {tmp_path / 'x.png'}: permission denied " \
        "(directory not writable)"
    assert list(tmp_path.iterdir()) == []


def test_save_labels(tmp_path):
    lab = np.array([[1, 2], [3, 0]], dtype=np.int32)
    io.save_labels(tmp_path / "l.png", lab)
    with Image.open(tmp_path / "l.png") as img:
        assert img.mode == "L"
        np.testing.assert_array_equal(np.asarray(img), lab)
    np.testing.assert_array_equal(io.read_scribbles(tmp_path / "l.png"), lab)


@pytest.mark.parametrize("bad", [np.array([[256]]), np.array([[0.5]]), np.zeros((2, 2, 3), int)])
def test_save_labels_rejects(tmp_path, bad):
    with pytest.raises(InvalidInputError):
        io.save_labels(tmp_path / "l.png", bad)


# --------------------------------------------------------------------------------------------
# special files (issue 23): never replaced, never read from
# --------------------------------------------------------------------------------------------
def _special(tmp_path: Path, kind: str, request) -> Path:
    """A special file under ``tmp_path`` (devices via symlinks: a failed check replaces the
    link, never the device)."""
    p = tmp_path / f"{kind}.png"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        import socket
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(p))
        request.addfinalizer(sock.close)
    elif kind == "directory":
        p.mkdir()
    else:
        p.symlink_to(f"/dev/{kind}")
    return p


_WRITERS = {
    "write_png_atomic": lambda p: io.write_png_atomic(p, np.zeros((2, 2), np.uint8)),
    "write_pngs_atomic": lambda p: io.write_pngs_atomic([(p.parent / "ok.png",
                                                         np.zeros((2, 2), np.uint8)),
                                                        (p, np.zeros((2, 2), np.uint8))]),
    "write_text_atomic": lambda p: io.write_text_atomic(p, "text"),
    "save_labels": lambda p: io.save_labels(p, np.zeros((2, 2), np.uint8)),
    "check_writable": io.check_writable,
}

#: (special file, error type, message part)
SPECIAL_OUTPUTS = [
    ("null", FileExistsError, "is a device"),
    ("full", FileExistsError, "is a device"),
    ("fifo", FileExistsError, "FIFO"),
    ("socket", FileExistsError, "socket"),
    ("directory", IsADirectoryError, "directory"),
]


@pytest.mark.parametrize("writer", list(_WRITERS))
@pytest.mark.parametrize("kind, error, message", SPECIAL_OUTPUTS,
                         ids=[c[0] for c in SPECIAL_OUTPUTS])
def test_writers_refuse_special_files(tmp_path, request, writer, kind, error, message):
    """`-o /dev/null` as root replaced the device node with a regular file (issue 23)."""
    p = _special(tmp_path, kind, request)
    before = os.lstat(p)
    with pytest.raises(error) as info:
        _WRITERS[writer](p)
    assert message in str(info.value) and str(p) in str(info.value)
    assert "\n" not in str(info.value)
    after = os.lstat(p)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert not (tmp_path / "ok.png").exists() and _temp_files(tmp_path) == []


@pytest.mark.parametrize("items, message", [
    (["a.png", "a.png"], "twice"),
    (["a.png", "sub/../a.png"], "twice"),
    (["a.png", "link.png"], "twice"),                 # a symlink to the first
])
def test_write_pngs_refuses_one_file_twice(tmp_path, items, message):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.png").write_bytes(b"old")
    (tmp_path / "link.png").symlink_to(tmp_path / "a.png")
    with pytest.raises(io.OutputClashError, match=message):
        io.write_pngs_atomic([(tmp_path / i, np.zeros((2, 2), np.uint8)) for i in items])
    assert (tmp_path / "a.png").read_bytes() == b"old"


def test_check_distinct_names_the_input(tmp_path):
    (tmp_path / "img.png").write_bytes(b"x")
    with pytest.raises(io.OutputClashError, match="input IMAGE"):
        io.check_distinct([tmp_path / "o.png", tmp_path / "." / "img.png"],
                          {"IMAGE": tmp_path / "img.png"})
    io.check_distinct([tmp_path / "o.png", tmp_path / "p.png"], [tmp_path / "img.png"])


@pytest.mark.parametrize("reader", [io.read_image, io.read_scribbles])
@pytest.mark.parametrize("kind", ["fifo", "zero", "null", "socket"])
def test_readers_refuse_special_files_at_once(tmp_path, request, reader, kind):
    """A FIFO given as image or scribbles blocked forever (issue 23)."""
    p = _special(tmp_path, kind, request)
    with _alarm(10):              # a regression blocks in open(): the alarm ends it
        assert "not a regular file" in _raises_invalid(p, reader)


@contextlib.contextmanager
def _alarm(seconds: int):
    """Fail (instead of hanging the suite) if the body takes more than ``seconds``."""
    import signal

    def fail(*_):
        raise TimeoutError(f"blocked for more than {seconds} s")
    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("reach", [1, 2, 3])
def test_the_scribble_readers_dilation_is_a_square_dilation(reach):
    """The one dilation of the scribble reader (edge shades, JPEG halos) against scipy's."""
    from scipy.ndimage import binary_dilation
    from segapp.io.scribbles import _grow
    rng = np.random.default_rng(reach)
    mask = rng.random((23, 31)) < 0.03
    mask[0, 0] = mask[-1, -1] = True                     # the borders clip, they do not wrap
    want = binary_dilation(mask, np.ones((3, 3), bool), iterations=reach)
    got = _grow(mask, reach)
    np.testing.assert_array_equal(got, want)
    assert got is not mask and not np.shares_memory(got, mask)

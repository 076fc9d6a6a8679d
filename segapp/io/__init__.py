"""Reading images and scribble maps, writing files atomically (numpy + Pillow only, no Qt).

Every problem with an input file is reported as :class:`segapp.errors.InvalidInputError`
whose one-line message names the file and the reason; Pillow's own exception types never
escape. Problems with an output location (missing directory, no permission, disk full) are
reported as the matching :class:`OSError` subclass, again with a one-line message; so are
outputs that are not regular files (devices, FIFOs: the atomic rename would replace them) or
the same file as another output or an input (:class:`OutputClashError`). An output path that
is a symbolic link writes the file the link names (:func:`resolve_output`).
:mod:`.images` reads images, :mod:`.scribbles` scribble files, both through :mod:`.opening`;
:mod:`.atomic` writes.
"""

from .atomic import (OutputClashError, check_distinct, check_writable, remove_stale_temporaries,
                     resolve_output, same_file, save_labels, write_bytes_atomic,
                     write_files_atomic, write_png_atomic, write_pngs_atomic, write_text_atomic)
from .images import read_image
from .opening import DEFAULT_PIXEL_LIMIT, MultiPageError, check_pixel_limit
from .scribbles import DEFAULT_MAX_LABEL, read_scribbles, scribbles_for_page

__all__ = [
    "DEFAULT_MAX_LABEL",
    "DEFAULT_PIXEL_LIMIT",
    "check_pixel_limit",
    "MultiPageError",
    "read_image",
    "read_scribbles",
    "scribbles_for_page",
    "write_png_atomic",
    "write_pngs_atomic",
    "write_bytes_atomic",
    "write_text_atomic",
    "write_files_atomic",
    "resolve_output",
    "remove_stale_temporaries",
    "check_writable",
    "check_distinct",
    "same_file",
    "OutputClashError",
    "save_labels",
]

"""segapp as a napari plugin (``pip install 'segapp[napari]'``; npe2 manifest ``napari.yaml``).

Plugins > segapp > Scribble segmentation opens :class:`~segapp.napari.widget.SegmentWidget`
(the dock widget is Qt, so it lives in ``segapp.gui``, the only package that imports Qt);
File > Open Sample > segapp adds the ``coffee`` photo with scribbles. This package holds the
Qt-free request model (:mod:`segapp.napari.model`), the sample data and the manifest; napari
itself is imported only by the widget, and the rest of segapp stays napari-free.
"""

__all__ = ["SegmentWidget"]


def __getattr__(name: str):  # napari and Qt load only when the widget is asked for
    if name == "SegmentWidget":
        from .widget import SegmentWidget
        return SegmentWidget
    raise AttributeError(name)

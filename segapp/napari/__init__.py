"""segapp as a napari plugin (``pip install 'segapp[napari]'``; npe2 manifest ``napari.yaml``).

Plugins > segapp > Scribble segmentation opens :class:`~segapp.gui.napari_dock.SegmentWidget`
(the one module here that imports Qt, through qtpy, and napari); File > Open Sample > segapp
adds the ``coffee`` photo with scribbles. This package also holds the Qt-free request model
(:mod:`segapp.napari.model`, on the live-solve engine :mod:`segapp.live` the desktop app
uses too), the sample data and the manifest; the rest of segapp stays napari-free.
"""

__all__ = ["SegmentWidget"]


def __getattr__(name: str):  # napari and Qt load only when the widget is asked for
    if name == "SegmentWidget":
        from .widget import SegmentWidget
        return SegmentWidget
    raise AttributeError(name)

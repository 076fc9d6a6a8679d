"""segapp as a napari plugin (``pip install 'segapp[napari]'``; npe2 manifest ``napari.yaml``).

Plugins > segapp > Scribble segmentation opens :class:`~segapp.napari.widget.SegmentWidget`;
File > Open Sample > segapp adds the ``coffee`` photo with scribbles. Only this package
imports napari and Qt (through qtpy); the rest of segapp stays napari-free.
"""

__all__ = ["SegmentWidget"]


def __getattr__(name: str):  # napari and Qt load only when the widget is asked for
    if name == "SegmentWidget":
        from .widget import SegmentWidget
        return SegmentWidget
    raise AttributeError(name)

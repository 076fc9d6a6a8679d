"""segapp as a napari plugin (``pip install 'segapp[napari]'``; npe2 manifest ``napari.yaml``).

Plugins > segapp > Scribble segmentation opens :class:`~segapp.gui.napari_dock.SegmentWidget`
(the one module of segapp that imports napari, and Qt through qtpy: it lives with the other Qt
code in :mod:`segapp.gui`, and the manifest names it there); File > Open Sample > segapp adds
the ``coffee`` photo with scribbles. This package holds the Qt-free request model
(:mod:`segapp.napari.model`, on the live-solve engine :mod:`segapp.live` the desktop app uses
too), the sample data and the manifest; importing it loads neither napari nor Qt.
"""

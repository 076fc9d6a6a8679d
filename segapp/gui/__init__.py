"""The segapp desktop app (PySide6): a thin view over the editing model (:mod:`segapp.editing`) and the engine.

Start it with :func:`segapp.gui.app.run` (the ``segapp`` command does). Qt is imported only
inside this package.
"""

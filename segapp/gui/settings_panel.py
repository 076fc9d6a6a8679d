"""Method settings (σ, neighbourhood, constraint weight, k-means restarts, method), remembered
with QSettings."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QPushButton,
    QSpinBox,
    QWidget,
)
from .qtcompat import emit

DEFAULTS: dict[str, Any] = {
    "method": "fastge",
    "sigma": 0.0,  # 0 = automatic (data-driven)
    "connectivity": 8,  # 4, 8, or 28 (= all pixels within radius 3)
    "constraint_weight": 1.0,
    "kmeans_restarts": 10,
}


def _available_methods() -> list[tuple[str, str]]:
    try:
        import segapp

        return list(segapp.available_methods())
    except Exception:  # engine unavailable: still let the window open
        return [("fastge", "FAST-GE (Cucuringu et al. 2016)")]


class SettingsPanel(QWidget):
    """Side panel with the method's options.

    Signals
    -------
    settingsChanged()
        Any value changed (already saved to QSettings).
    """

    settingsChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        form = QFormLayout(self)
        self.method = QComboBox(self)
        for name, description in _available_methods():
            self.method.addItem(name, name)
            self.method.setItemData(self.method.count() - 1, description, 3)  # ToolTipRole
        self.method.setToolTip("Segmentation method (hover an entry for a description)")
        self.sigma = QDoubleSpinBox(self)
        self.sigma.setRange(0.0, 10.0)
        self.sigma.setDecimals(3)
        self.sigma.setSingleStep(0.01)
        self.sigma.setSpecialValueText("auto")
        self.sigma.setToolTip(
            "RBF width σ of the pixel-similarity weights exp(-|Δcolour|²/σ²), colours in [0, 1].\n"
            "'auto' picks σ from the image's typical neighbour differences. Smaller σ: "
            "edges matter more.")
        self.connectivity = QComboBox(self)
        self.connectivity.addItem("4 neighbours", 4)
        self.connectivity.addItem("8 neighbours", 8)
        self.connectivity.addItem("28 neighbours (radius 3)", 28)
        self.connectivity.setToolTip(
            "Which pixels the image graph joins. 8 (default) is fast and clean; the wider\n"
            "radius-3 graph scored best on the quality benchmark but costs more memory.")
        self.constraint_weight = QDoubleSpinBox(self)
        self.constraint_weight.setRange(0.01, 100.0)
        self.constraint_weight.setDecimals(2)
        self.constraint_weight.setSingleStep(0.1)
        self.constraint_weight.setToolTip(
            "Weight of the must-link / cannot-link constraints from the strokes relative to "
            "the image graph (FAST-GE). Larger: strokes dominate.")
        self.kmeans_restarts = QSpinBox(self)
        self.kmeans_restarts.setRange(0, 100)
        self.kmeans_restarts.setToolTip(
            "Random k-means restarts on the spectral embedding (plus one start seeded by the "
            "strokes). More: steadier for many labels, slower.")
        self.reset_button = QPushButton("Restore defaults", self)
        self.reset_button.clicked.connect(self.reset)
        form.addRow("Method", self.method)
        form.addRow("RBF σ", self.sigma)
        form.addRow("Neighbourhood", self.connectivity)
        form.addRow("Constraint weight", self.constraint_weight)
        form.addRow("k-means restarts", self.kmeans_restarts)
        form.addRow(self.reset_button)
        self._loading = False
        self.load()
        for w in (self.method, self.connectivity):
            w.currentIndexChanged.connect(self._changed)
        for w in (self.sigma, self.constraint_weight, self.kmeans_restarts):
            w.valueChanged.connect(self._changed)

    # -- values ----------------------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        return {"method": self.method.currentData() or DEFAULTS["method"],
                "sigma": float(self.sigma.value()),
                "connectivity": int(self.connectivity.currentData()),
                "constraint_weight": float(self.constraint_weight.value()),
                "kmeans_restarts": int(self.kmeans_restarts.value())}

    def method_name(self) -> str:
        return self.values()["method"]

    def options(self) -> dict[str, Any]:
        """Keyword options for :class:`segapp.Session` (σ = None means automatic)."""
        v = self.values()
        reach = ({"radius": 3.0} if v["connectivity"] == 28
                 else {"connectivity": v["connectivity"]})
        opts = {"sigma": v["sigma"] or None, **reach,
                "constraint_weight": v["constraint_weight"],
                "kmeans_restarts": v["kmeans_restarts"]}
        try:  # each method gets only the options it knows
            from segapp.methods import option_names
            accepted = option_names(v["method"])
        except Exception:
            return opts
        return {k: val for k, val in opts.items() if k in accepted}

    def set_values(self, values: dict[str, Any]) -> None:
        """Set from a dict (unknown keys ignored, bad values replaced by defaults)."""
        self._loading = True
        try:
            v = {**DEFAULTS, **{k: values[k] for k in DEFAULTS if k in values}}
            i = self.method.findData(str(v["method"]))
            self.method.setCurrentIndex(max(i, 0))
            self.sigma.setValue(_num(v["sigma"], float, DEFAULTS["sigma"]))
            i = self.connectivity.findData(_num(v["connectivity"], int, DEFAULTS["connectivity"]))
            self.connectivity.setCurrentIndex(max(i, 0))
            self.constraint_weight.setValue(_num(v["constraint_weight"], float, 1.0))
            self.kmeans_restarts.setValue(_num(v["kmeans_restarts"], int, 10))
        finally:
            self._loading = False
        self._changed()

    def reset(self) -> None:
        self.set_values(DEFAULTS)

    # -- persistence -----------------------------------------------------------------------
    def load(self) -> None:
        s = QSettings()
        s.beginGroup("method")
        self.set_values({k: s.value(k, DEFAULTS[k]) for k in DEFAULTS})
        s.endGroup()

    def save(self) -> None:
        s = QSettings()
        s.beginGroup("method")
        for k, v in self.values().items():
            s.setValue(k, v)
        s.endGroup()

    def _changed(self, *_args: object) -> None:
        if self._loading:
            return
        self.save()
        emit(self.settingsChanged)


def _num(value: Any, kind: type, default: Any) -> Any:
    """QSettings returns strings from INI files; convert, falling back to the default."""
    try:
        return kind(float(value)) if kind is int else kind(value)
    except (TypeError, ValueError):
        return default

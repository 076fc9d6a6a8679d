"""Help ▸ Keyboard Shortcuts and Help ▸ About."""

from __future__ import annotations

import html

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QMessageBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

ABOUT_HTML = """<h3>segapp</h3>
<p>Interactive image segmentation by constrained spectral clustering.</p>
<p>Paint a few strokes in k label colours; the image is split into k regions by
<b>FAST-GE</b>, a generalized eigenproblem <i>L<sub>G</sub>x = λL<sub>H</sub>x</i> between the
image graph and a graph of must-link / cannot-link constraints from the strokes, solved by
AMG-preconditioned LOBPCG.</p>
<ul>
<li>M. Cucuringu, I. Koutis, S. Chawla, G. Miller, R. Peng. <i>Simple and Scalable Constrained
Clustering: A Generalized Spectral Method.</i> AISTATS 2016.</li>
<li>J. Shi, J. Malik. <i>Normalized Cuts and Image Segmentation.</i> IEEE TPAMI 22(8), 2000
(the unconstrained baseline, method "ncut").</li>
<li>A. V. Knyazev. <i>Toward the Optimal Preconditioned Eigensolver: LOBPCG.</i>
SIAM J. Sci. Comput. 23(2), 2001.</li>
</ul>"""


def shortcuts_dialog(parent: QWidget, rows: list[tuple[str, str]]) -> QDialog:
    """A table of (action, shortcuts) rows."""
    dlg = QDialog(parent)
    dlg.setWindowTitle("Keyboard shortcuts")
    table = QTableWidget(len(rows), 2, dlg)
    table.setHorizontalHeaderLabels(["Action", "Shortcut"])
    for r, (name, keys) in enumerate(rows):
        table.setItem(r, 0, QTableWidgetItem(name))
        table.setItem(r, 1, QTableWidgetItem(keys))
    table.resizeColumnsToContents()
    table.horizontalHeader().setStretchLastSection(True)
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    box = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, dlg)
    box.rejected.connect(dlg.reject)
    lay = QVBoxLayout(dlg)
    lay.addWidget(table)
    lay.addWidget(box)
    dlg.resize(460, 560)
    return dlg


def about(parent: QWidget) -> None:
    import segapp

    QMessageBox.about(parent, "About segapp",
                      ABOUT_HTML.replace("<h3>segapp</h3>",
                                         f"<h3>segapp {html.escape(segapp.__version__)}</h3>"))

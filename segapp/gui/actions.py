"""Every menu / toolbar / shortcut action of the app, as data.

The window creates one ``QAction`` per :class:`Spec` and connects it by name; the Help ▸
Keyboard Shortcuts table, the menus and ``tests/gui/test_docs.py`` (which checks the table in
``docs/gui.md``) all read this list, so a shortcut exists in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Keys 1..LABEL_KEYS pick the schema's first labels (the Labels panel and the picker reach
#: the others).
LABEL_KEYS = 9


@dataclass(frozen=True)
class Spec:
    name: str
    text: str
    keys: tuple[str, ...] = ()  # portable key sequences ("Ctrl+O") or QKeySequence.StandardKey names
    icon: str = ""
    tip: str = ""
    checkable: bool = False


def _s(name: str, text: str, *keys: str, icon: str = "", tip: str = "",
       checkable: bool = False) -> Spec:
    return Spec(name, text, keys, icon, tip, checkable)


SPECS: tuple[Spec, ...] = (
    # File
    _s("open", "&Open…", "Ctrl+O", icon="open", tip="Open an image or a saved session"),
    _s("open_folder", "Open &Folder…", "Ctrl+Shift+O", icon="folder",
       tip="Open a folder of images as a project: one set of labels, each image's strokes "
           "and answer kept in FOLDER/segapp as you go"),
    _s("previous_image", "&Previous Image", "PgUp", tip="The image before this one in the folder"),
    _s("next_image", "&Next Image", "PgDown", tip="The image after this one in the folder"),
    _s("mark_done", "Mark &Done and Go On", "Ctrl+Return", "Ctrl+Enter",
       tip="This image is finished: mark it done and open the next image not done"),
    _s("accept_suggestion", "&Accept Suggestion and Go On", "Ctrl+Shift+Return",
       tip="Keep the answer suggested from the folder's finished images as this image's "
           "answer: mark it done and open the next image not done"),
    _s("dismiss_suggestion", "D&ismiss Suggestion",
       tip="Hide the suggested answer of this image (painting starts from nothing)"),
    _s("import_scribbles", "&Import Scribbles / Labels…", "Ctrl+I", icon="import",
       tip="Load strokes from a label-id PNG or a colour-stroke PNG (as segapp segment reads "
           "them); undoable"),
    _s("save_session", "&Save Session", "Ctrl+S", icon="save",
       tip="Save image path, strokes and labels"),
    _s("save_session_as", "Save Session &As…", "Ctrl+Shift+S"),
    _s("export_all", "Export &All…", "Ctrl+E", icon="export",
       tip="Export the label map with its labels' JSON, masks, overlay, heat maps, "
           "confidence and COCO"),
    _s("export_labels", "&Label Map (indexed PNG + labels JSON)…"),
    _s("export_masks", "Binary &Masks (one per label)…"),
    _s("export_overlay", "Colour &Overlay…"),
    _s("export_heatmaps", "Eigenvector &Heat Maps…"),
    _s("export_soft", "&Confidence and Soft Masks (16-bit)…"),
    _s("export_coco", "&COCO Annotations (RLE) of this Image…"),
    _s("export_dataset", "&Dataset of the Folder (COCO + indexed PNGs)…", "Ctrl+Shift+E",
       tip="The folder's finished images as a training set: indexed PNG masks, labels JSON, "
           "COCO annotations with RLE masks"),
    _s("load_schema", "Load Labels from &File…",
       tip="Take the names, colours and ids of a labels JSON file (segapp-labels)"),
    _s("save_schema", "Save Labels &As…",
       tip="Write the labels (names, colours, ids) as JSON, for segapp segment / batch --labels "
           "or another folder"),
    _s("quit", "&Quit", "Ctrl+Q"),
    # Edit
    _s("undo", "&Undo", "Ctrl+Z", icon="undo", tip="Undo the last stroke"),
    _s("redo", "&Redo", "Ctrl+Shift+Z", "Ctrl+Y", icon="redo", tip="Redo"),
    _s("clear_label", "Clear Current &Label", "Delete", icon="clear",
       tip="Erase every stroke of the current label"),
    _s("clear_all", "Clear &All Strokes", "Ctrl+Delete"),
    # Paint
    _s("brush", "&Brush", "B", icon="brush", tip="Paint with the current label", checkable=True),
    _s("eraser", "&Eraser", "E", icon="eraser", tip="Erase strokes", checkable=True),
    _s("fill", "&Fill Region", "G", icon="fill", checkable=True,
       tip="Click a region of the segmentation to paint its unpainted pixels with the "
           "current label (strokes stay); then the brush is back"),
    _s("picker", "&Pick Label", "K", icon="picker", checkable=True,
       tip="Click the image to paint with the label under the mouse (its stroke, else its "
           "segment); then the brush is back. Ctrl+click picks with any tool"),
    _s("add_label", "&New Label", "Ctrl+L", tip="Add a label to the list (up to 255)"),
    _s("unlabelled_only", "Paint &Unlabelled Pixels Only", "U", checkable=True,
       tip="Strokes and imports leave pixels that already carry a label alone (fills always "
           "do)"),
    _s("bigger", "Bigger Brush", "]"),
    _s("smaller", "Smaller Brush", "["),
    _s("brush_screen", "Brush Size in &Screen Pixels", checkable=True,
       tip="On: the brush keeps its size on screen at every zoom. Off: image pixels"),
    *(_s(f"label{i}", f"Label {i}", str(i)) for i in range(1, LABEL_KEYS + 1)),
    # View
    _s("fit", "&Fit to Window", "F", "Ctrl+0", icon="zoom-fit"),
    _s("actual", "Actual Size (&1:1)", "Ctrl+1", icon="zoom-original"),
    _s("zoom_in", "Zoom &In", "Ctrl++", "Ctrl+="),
    _s("zoom_out", "Zoom &Out", "Ctrl+-"),
    _s("show_overlay", "Show &Segmentation", "O", checkable=True),
    _s("show_strokes", "Show S&trokes", "S", checkable=True),
    _s("show_image", "Show &Image", "I", checkable=True),
    _s("boundaries", "&Boundaries Only", "D", checkable=True,
       tip="Draw only the region boundaries"),
    _s("unsure", "Where to Paint &Next", "N", checkable=True,
       tip="Stripe the pixels the segmentation is least sure of (closer to a boundary of its "
           "rounding than to your strokes): a stroke there helps most"),
    _s("hide_heatmap", "Hide Eigenvector View", "Esc"),
    # Help
    _s("shortcuts", "&Keyboard Shortcuts", "F1"),
    _s("about", "&About segapp"),
)

#: Mouse gestures, listed with the shortcuts (Help ▸ Keyboard Shortcuts and docs/gui.md).
GESTURES: tuple[tuple[str, str], ...] = (
    ("Paint / fill", "Left-drag / left-click"),
    ("Pick the label under the mouse", "Ctrl+click"),
    ("Change brush size", "Ctrl+Wheel"),
    ("Zoom", "Wheel"),
    ("Pan", "Middle-drag or Space+drag"),
    ("Rename label", "Double-click in Labels"),
)

MENUS: tuple[tuple[str, tuple[str | None, ...]], ...] = (
    ("&File", ("open", "open_folder", "@recent", "@samples", "import_scribbles", None,
               "previous_image", "next_image", "mark_done", "accept_suggestion",
               "dismiss_suggestion", None, "save_session",
               "save_session_as", None, "@export", None, "load_schema", "save_schema", None,
               "quit")),
    ("&Edit", ("undo", "redo", None, "clear_label", "clear_all")),
    ("&Paint", ("brush", "eraser", "fill", "picker", None, "unlabelled_only", "brush_screen",
                "bigger", "smaller", None, "add_label",
                *(f"label{i}" for i in range(1, LABEL_KEYS + 1)))),
    ("&View", ("fit", "actual", "zoom_in", "zoom_out", None, "show_overlay", "show_strokes",
               "show_image", "boundaries", "unsure", "hide_heatmap", None, "@docks")),
    ("&Help", ("shortcuts", "about")),
)
EXPORT_MENU = ("export_labels", "export_masks", "export_overlay", "export_heatmaps",
               "export_soft", "export_coco", None, "export_all", None, "export_dataset")
TOOLBAR = ("open", "save_session", "export_all", None, "undo", "redo", None, "brush", "eraser",
           "fill", "picker", "@brush_size", None, "@opacity", None, "show_overlay", "show_strokes",
           "show_image", "boundaries", None, "fit", "actual")

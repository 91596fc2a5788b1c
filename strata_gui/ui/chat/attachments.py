"""Images on their way into a message: thumbnails, the strip of pending attachments, and turning
dropped or pasted data into image bytes.

Checking what an image may be (format, size) is the core's job (:class:`ChatImage`); this module
only gets the bytes out of Qt: local files from a drop, or a clipboard picture saved as PNG.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from strata_gui.core.chat import ChatImage

THUMB = 72


def thumbnail(image: ChatImage, size: int = THUMB) -> QPixmap:
    """The image scaled down to fit ``size``×``size`` (never up: a small picture stays sharp; an
    empty pixmap when Qt cannot decode it)."""
    pix = QPixmap()
    pix.loadFromData(image.data)
    if pix.isNull() or (pix.width() <= size and pix.height() <= size):
        return pix
    return pix.scaled(size, size, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)


def png_bytes(image: QImage) -> bytes:
    """A clipboard/drag picture encoded as PNG (a format the engine reads)."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stubs say bytes; PySide6 takes str
    buffer.close()
    return bytes(data.data())


def has_images(mime: QMimeData) -> bool:
    """Whether a drop or paste carries a picture or local files (which may be pictures)."""
    return mime.hasImage() or any(u.isLocalFile() for u in mime.urls())


def model_files(mime: QMimeData) -> list[Path]:
    """The GGUF model files in a drop or paste (the chat uses them as its model, never as pictures)."""
    return [Path(u.toLocalFile()) for u in mime.urls() if u.isLocalFile() and u.toLocalFile().lower().endswith(".gguf")]


def local_files(mime: QMimeData) -> list[Path]:
    """The local files of a drop or paste other than GGUF models (pictures or documents)."""
    return [Path(u.toLocalFile()) for u in mime.urls()
            if u.isLocalFile() and not u.toLocalFile().lower().endswith(".gguf")]


def raw_images(mime: QMimeData) -> list[tuple[bytes, str]]:
    """(bytes, name) of each picture in a drop or paste: local files first, else the picture itself.
    GGUF files are left out (:func:`model_files`): a model of many gigabytes is never read as a picture."""
    out: list[tuple[bytes, str]] = []
    for url in mime.urls():
        if url.isLocalFile() and not url.toLocalFile().lower().endswith(".gguf"):
            path = url.toLocalFile()
            try:
                with open(path, "rb") as fh:
                    out.append((fh.read(), url.fileName()))
            except OSError:
                out.append((b"", url.fileName()))  # the core reports it as unreadable/empty
    if not out and mime.hasImage():
        image = mime.imageData()
        if isinstance(image, QImage) and not image.isNull():
            out.append((png_bytes(image), ""))
    return out


class ImageThumb(QLabel):
    """One image shown small; its file name (if any) as tooltip."""

    def __init__(self, image: ChatImage, size: int = THUMB, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.image = image
        self.setObjectName("messageImage")
        pix = thumbnail(image, size)
        if pix.isNull():
            self.setText(image.name or image.mime)
        else:
            self.setPixmap(pix)
        self.setToolTip(image.name or self.tr("Pasted image"))


class AttachmentStrip(QWidget):
    """The images waiting to be sent with the next message, each with a remove button.

    Signals:
        changed(): An image was added or removed.
    """

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.images: list[ChatImage] = []
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.addStretch(1)
        self.hide()

    def add(self, image: ChatImage) -> None:
        self.images.append(image)
        self._rebuild()

    def remove(self, index: int) -> None:
        if 0 <= index < len(self.images):
            del self.images[index]
            self._rebuild()

    def take(self) -> list[ChatImage]:
        """The pending images; the strip is emptied."""
        images, self.images = self.images, []
        self._rebuild()
        return images

    def _rebuild(self) -> None:
        while self._row.count() > 1:
            item = self._row.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        for i, image in enumerate(self.images):
            cell = QWidget()
            box = QVBoxLayout(cell)
            box.setContentsMargins(0, 0, 0, 0)
            box.addWidget(ImageThumb(image, THUMB, cell))
            remove = QToolButton(cell)
            remove.setText(self.tr("Remove"))
            remove.setToolTip(self.tr("Do not send this image"))
            remove.clicked.connect(lambda _=False, i=i: self.remove(i))
            box.addWidget(remove)
            self._row.insertWidget(i, cell)
        self.setVisible(bool(self.images))
        self.changed.emit()

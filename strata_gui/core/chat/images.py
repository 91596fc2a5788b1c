"""Images attached to chat messages: what formats the engine reads and how they are sent.

llama-server decodes images with stb_image, which reads PNG, JPEG, GIF and BMP; anything else
(WebP, HEIC, SVG) is refused here with a message, before it reaches the engine. The UI converts
pasted clipboard pictures to PNG, so every image that gets this far is one of those formats.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from strata_gui.core.base.errors import ChatError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

# Larger pictures would be shrunk to the projector's input size anyway (a few hundred pixels);
# the cap keeps a stray photo from bloating the conversation database.
MAX_IMAGE_BYTES = 20 * 1024 * 1024

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


def sniff_mime(data: bytes) -> str | None:
    """The MIME type told by the first bytes (None: a format the engine cannot read)."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    return None


@dataclass(frozen=True)
class ChatImage:
    """One image of a message: its bytes and MIME type.

    Attributes:
        mime: ``image/png``, ``image/jpeg``, ``image/gif`` or ``image/bmp``.
        data: The file's bytes, as attached.
        name: The file name it came from (shown as a tooltip; empty for pasted images).
    """

    mime: str
    data: bytes
    name: str = ""

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "") -> ChatImage:
        """Check the bytes are an image the engine reads.

        Raises:
            ChatError: Unknown format, empty, or larger than :data:`MAX_IMAGE_BYTES`.
        """
        label = name or QT_TRANSLATE_NOOP("Core", "The image")
        if not data:
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{image} is empty."), image=label))
        if len(data) > MAX_IMAGE_BYTES:
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{image} is larger than {size} MB."), image=label,
                              size=MAX_IMAGE_BYTES // (1024 * 1024)),
                            hint=QT_TRANSLATE_NOOP("Core", "Attach a smaller picture or a screenshot of the part "
                                                           "that matters."))
        mime = sniff_mime(data)
        if mime is None:
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{image} is not a PNG, JPEG, GIF or BMP image."), image=label),
                            hint=QT_TRANSLATE_NOOP("Core", "Convert it to PNG or JPEG first."))
        return cls(mime, data, name)

    @classmethod
    def from_file(cls, path: Path) -> ChatImage:
        """Read and check an image file.

        Raises:
            ChatError: Unreadable file or a format the engine cannot read.
        """
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "Cannot read {path}: {reason}"), path=str(path),
                              reason=str(exc.strerror or exc))) from exc
        return cls.from_bytes(data, path.name)

    def data_url(self) -> str:
        """``data:image/png;base64,...`` as OpenAI image content carries it."""
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def content_part(self) -> dict[str, object]:
        """The OpenAI chat content part for this image."""
        return {"type": "image_url", "image_url": {"url": self.data_url()}}

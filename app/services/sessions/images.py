"""Images attached to messages: checked, then kept as files under the data dir.

The event log stores only a reference (``{id, media_type, url}``); the bytes live in
``<data dir>/images/<session id>/<id>.<ext>`` where ``id`` is the content's SHA-256, so
the same screenshot sent twice is stored once and an id can never name a path.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from app.brains.base import ImageData
from app.db.datadir import create_private_file, make_private_dir
from app.errors import NotFoundError, ValidationFailed

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_IMAGES = 10
EXTENSIONS: dict[str, str] = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_ID_RE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class StoredImage:
    id: str
    media_type: str

    def ref(self, session_id: str) -> dict[str, str]:
        """What the ``user_message`` event lists for this image."""
        url = f"/api/sessions/{session_id}/images/{self.id}"
        return {"id": self.id, "media_type": self.media_type, "url": url}


def sniff(data: bytes) -> str | None:
    """The media type the bytes really are (of the four accepted), else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def decode_image(index: int, media_type: str, data: str) -> ImageData:
    """Check one attached image; ``ValidationFailed`` names it and what is wrong."""
    where = f"images[{index}]"
    if media_type not in EXTENSIONS:
        raise ValidationFailed(
            where, f"{media_type!r} is not supported; send PNG, JPEG, GIF or WebP"
        )
    if len(data) > (MAX_IMAGE_BYTES * 4) // 3 + 4:
        raise ValidationFailed(where, "is larger than 5 MB")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationFailed(where, "is not valid base64") from None
    if not raw:
        raise ValidationFailed(where, "is empty")
    if len(raw) > MAX_IMAGE_BYTES:
        raise ValidationFailed(where, "is larger than 5 MB")
    actual = sniff(raw)
    if actual != media_type:
        found = actual or "not an image of a supported type"
        raise ValidationFailed(where, f"says {media_type} but the data is {found}")
    return ImageData(media_type=media_type, data=raw)


class ImageStore:
    def __init__(self, root: Path) -> None:
        self._root = root

    def save(self, session_id: str, image: ImageData) -> StoredImage:
        image_id = hashlib.sha256(image.data).hexdigest()
        folder = self._folder(session_id)
        make_private_dir(self._root)
        make_private_dir(folder)
        path = folder / f"{image_id}.{EXTENSIONS[image.media_type]}"
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.unlink(missing_ok=True)
            create_private_file(tmp)
            tmp.write_bytes(image.data)
            tmp.replace(path)
        return StoredImage(image_id, image.media_type)

    def load(self, session_id: str, image_id: str) -> tuple[bytes, str]:
        """(bytes, media type) of a stored image; ``NotFoundError`` otherwise."""
        if _ID_RE.match(image_id):
            for media_type, ext in EXTENSIONS.items():
                path = self._folder(session_id) / f"{image_id}.{ext}"
                if path.is_file():
                    return path.read_bytes(), media_type
        raise NotFoundError(f"Image {image_id} not found in this session")

    def delete_session(self, session_id: str) -> None:
        shutil.rmtree(self._folder(session_id), ignore_errors=True)

    def _folder(self, session_id: str) -> Path:
        # Session ids are app-made hex strings; anything else must not reach the disk.
        if not re.fullmatch(r"[0-9a-zA-Z_-]{1,64}", session_id):
            raise NotFoundError(f"Session {session_id} not found")
        return self._root / session_id

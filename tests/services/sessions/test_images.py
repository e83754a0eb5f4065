"""Checking and storing attached images."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from app.brains.base import ImageData
from app.errors import NotFoundError, ValidationFailed
from app.services.sessions.images import ImageStore, decode_image, sniff
from tests.real.test_real_claude_images_rewind import png

GIF = b"GIF89a" + b"\x00" * 20
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 10
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 10


def test_sniff_knows_the_four_formats_and_nothing_else() -> None:
    assert sniff(png()) == "image/png"
    assert sniff(JPEG) == "image/jpeg"
    assert sniff(GIF) == "image/gif"
    assert sniff(WEBP) == "image/webp"
    assert sniff(b"<svg xmlns='http://www.w3.org/2000/svg'/>") is None
    assert sniff(b"") is None


def test_decode_checks_type_size_and_content() -> None:
    image = decode_image(0, "image/png", base64.b64encode(png()).decode())
    assert image == ImageData("image/png", png())
    with pytest.raises(ValidationFailed, match=r"images\[2\]: 'image/bmp' is not supported"):
        decode_image(2, "image/bmp", "AAAA")
    with pytest.raises(ValidationFailed, match="is empty"):
        decode_image(0, "image/png", "")
    with pytest.raises(ValidationFailed, match="says image/gif but the data is image/png"):
        decode_image(0, "image/gif", base64.b64encode(png()).decode())


def test_store_is_content_addressed_and_refuses_odd_ids(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    one = store.save("s1", ImageData("image/png", png()))
    again = store.save("s1", ImageData("image/png", png()))
    assert one == again and len(list((tmp_path / "s1").iterdir())) == 1
    assert one.ref("s1") == {
        "id": one.id,
        "media_type": "image/png",
        "url": f"/api/sessions/s1/images/{one.id}",
    }
    assert store.load("s1", one.id) == (png(), "image/png")
    for bad in ("../../etc/passwd", one.id.upper(), one.id[:-1], ""):
        with pytest.raises(NotFoundError):
            store.load("s1", bad)
    with pytest.raises(NotFoundError):
        store.load("../s1", one.id)
    with pytest.raises(NotFoundError):
        store.load("s2", one.id)
    store.delete_session("s1")
    assert not (tmp_path / "s1").exists()

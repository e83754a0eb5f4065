"""The API reference page: the app's whole OpenAPI document, drawn as plain HTML."""

from __future__ import annotations

import httpx
from bs4 import BeautifulSoup

from app.web.api_reference import Part, notes_of, type_of
from tests.conftest import LiveServer


def words(parts: list[Part]) -> str:
    return " ".join(p.text for p in parts)


def test_types_read_as_words_with_links_to_named_schemas() -> None:
    nullable = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert words(type_of(nullable)) == "string or null"
    listed = {"type": "array", "items": {"$ref": "#/components/schemas/Event"}}
    assert type_of(listed) == [Part("array of"), Part("Event", "Event")]
    mapping = {"type": "object", "additionalProperties": {"type": "string"}}
    assert words(type_of(mapping)) == "object of string"
    assert words(type_of({"type": "string", "enum": ["low", "high"]})) == 'one of "low", "high"'
    assert words(type_of({"type": "string", "format": "date-time"})) == "string (date-time)"
    assert words(type_of({})) == "any"
    limits = {"type": "integer", "minimum": 0.0, "maximum": 604800.0, "default": 600}
    assert notes_of(limits) == "at least 0; at most 604800; default 600"
    choice = {"anyOf": [{"type": "string", "maxLength": 200}, {"type": "null"}], "default": None}
    assert notes_of(choice) == "at most 200 characters; default null"


async def test_every_operation_and_schema_of_the_document_is_on_the_page(
    server: LiveServer, client: httpx.AsyncClient
) -> None:
    spec = (await client.get("/openapi.json")).json()
    r = await client.get("/api-reference")
    assert r.status_code == 200
    page = BeautifulSoup(r.text, "html.parser")
    shown = {" ".join(h.get_text(" ", strip=True).split()[:2]) for h in page.select("article h3")}
    for path, item in spec["paths"].items():
        for method in item:
            assert f"{method.upper()} {path}" in shown, (method, path)
    for name in spec["components"]["schemas"]:
        assert page.select_one(f"h3#schema-{name}") is not None, name
    # Every link to a schema lands on one.
    targets = {a["href"] for a in page.select('main a[href^="#schema-"]')}
    assert targets and all(page.select_one(t.replace(".", r"\.")) for t in targets)

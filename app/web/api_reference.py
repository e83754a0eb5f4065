"""The app's OpenAPI document as plain data for the API reference page
(templates/api_reference.html).

The page is the document in semantic HTML: operations grouped by tag, each with its
parameters, request body and responses, then every named schema with its fields. It
stands in for Swagger UI, whose markup a screen reader cannot use well. A type is a list
of parts, words and links to schemas, which the template joins with spaces
(``array of <a href="#schema-Event">Event</a>``), so no HTML is built here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

REF_PREFIX = "#/components/schemas/"
METHODS = ("get", "post", "put", "patch", "delete")
Schema = Mapping[str, Any]


@dataclass(frozen=True)
class Part:
    """A piece of a type: text, or the name of a schema it links to."""

    text: str
    schema: str = ""


@dataclass(frozen=True)
class Field:
    name: str
    type: list[Part]
    required: bool
    description: str = ""
    notes: str = ""
    where: str = ""  # a parameter's place: path, query, header, cookie


@dataclass(frozen=True)
class Body:
    media_type: str
    type: list[Part]


@dataclass(frozen=True)
class Answer:
    status: str
    description: str
    bodies: list[Body]


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    anchor: str
    summary: str
    description: str
    parameters: list[Field]
    body: list[Body]
    body_required: bool
    responses: list[Answer]


@dataclass
class Group:
    name: str
    anchor: str
    operations: list[Operation] = field(default_factory=list)


@dataclass(frozen=True)
class NamedSchema:
    name: str
    anchor: str
    description: str
    type: list[Part]
    fields: list[Field]


@dataclass(frozen=True)
class Reference:
    title: str
    version: str
    groups: list[Group]
    schemas: list[NamedSchema]


def schema_anchor(name: str) -> str:
    return f"schema-{name}"


def type_of(schema: Schema) -> list[Part]:
    """The schema's type in words, with links for the named schemas it uses."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        return [Part(ref.removeprefix(REF_PREFIX), ref.removeprefix(REF_PREFIX))]
    for combined in ("anyOf", "oneOf"):
        choices = schema.get(combined)
        if isinstance(choices, list) and choices:
            return _joined([type_of(c) for c in choices if isinstance(c, Mapping)], "or")
    every = schema.get("allOf")
    if isinstance(every, list) and every:
        return _joined([type_of(c) for c in every if isinstance(c, Mapping)], "and")
    if "const" in schema:
        return [Part(_literal(schema["const"]))]
    if isinstance(schema.get("enum"), list):
        return [Part("one of " + ", ".join(_literal(v) for v in schema["enum"]))]
    kind = schema.get("type")
    if isinstance(kind, list):
        return _joined([type_of({**schema, "type": k}) for k in kind], "or")
    if kind == "array":
        items = schema.get("items")
        return [Part("array of"), *type_of(items)] if isinstance(items, Mapping) else [Part(kind)]
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, Mapping) and values:
            return [Part("object of"), *type_of(values)]
        return [Part("object")]
    if isinstance(kind, str):
        shown = f"{kind} ({schema['format']})" if isinstance(schema.get("format"), str) else kind
        return [Part(shown)]
    return [Part("any")]


def notes_of(schema: Schema) -> str:
    """Limits and the default, as a short line (the choices of an anyOf too)."""
    notes: list[str] = []
    for part in [schema, *_choices(schema)]:
        for key, words in (
            ("minLength", "at least {} characters"),
            ("maxLength", "at most {} characters"),
            ("minimum", "at least {}"),
            ("maximum", "at most {}"),
            ("minItems", "at least {} items"),
            ("maxItems", "at most {} items"),
            ("pattern", "matches {}"),
        ):
            if key in part:
                notes.append(words.format(_number(part[key])))
    if "default" in schema:
        notes.append(f"default {_literal(schema['default'])}")
    return "; ".join(dict.fromkeys(notes))


def reference(spec: Mapping[str, Any]) -> Reference:
    """The whole document: operations by tag in the order they were declared, then the
    named schemas by name."""
    groups: dict[str, Group] = {}
    for path, item in spec.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, Mapping):
                continue
            tag = (op.get("tags") or ["other"])[0]
            group = groups.setdefault(tag, Group(str(tag), f"tag-{tag}"))
            group.operations.append(_operation(method, path, op))
    named = spec.get("components", {}).get("schemas", {})
    schemas = [_named(name, named[name]) for name in sorted(named, key=str.lower)]
    info = spec.get("info", {})
    return Reference(
        title=str(info.get("title", "API")),
        version=str(info.get("version", "")),
        groups=list(groups.values()),
        schemas=schemas,
    )


def _operation(method: str, path: str, op: Mapping[str, Any]) -> Operation:
    parameters = [
        Field(
            name=str(p.get("name", "")),
            type=type_of(p.get("schema", {})),
            required=bool(p.get("required")),
            description=str(p.get("description") or p.get("schema", {}).get("description", "")),
            notes=notes_of(p.get("schema", {})),
            where=str(p.get("in", "")),
        )
        for p in op.get("parameters", [])
        if isinstance(p, Mapping)
    ]
    request = op.get("requestBody") or {}
    answers = [
        Answer(str(status), str(r.get("description", "")), _bodies(r.get("content", {})))
        for status, r in op.get("responses", {}).items()
    ]
    anchor = str(op.get("operationId") or f"{method}-{path}")
    return Operation(
        method=method.upper(),
        path=path,
        anchor=f"op-{anchor}",
        summary=str(op.get("summary", "")),
        description=str(op.get("description", "")),
        parameters=parameters,
        body=_bodies(request.get("content", {})),
        body_required=bool(request.get("required")),
        responses=answers,
    )


def _named(name: str, schema: Schema) -> NamedSchema:
    required = set(schema.get("required", []))
    fields = [
        Field(
            name=prop,
            type=type_of(sub),
            required=prop in required,
            description=str(sub.get("description", "")),
            notes=notes_of(sub),
        )
        for prop, sub in schema.get("properties", {}).items()
    ]
    return NamedSchema(
        name=name,
        anchor=schema_anchor(name),
        description=str(schema.get("description", "")),
        type=type_of({k: v for k, v in schema.items() if k != "title"}),
        fields=fields,
    )


def _bodies(content: Mapping[str, Any]) -> list[Body]:
    return [Body(str(media), type_of(c.get("schema", {}))) for media, c in content.items()]


def _choices(schema: Schema) -> list[Schema]:
    found = schema.get("anyOf") or schema.get("oneOf") or []
    return [c for c in found if isinstance(c, Mapping)]


def _joined(types: list[list[Part]], word: str) -> list[Part]:
    parts: list[Part] = []
    for index, each in enumerate(types):
        if index:
            parts.append(Part(word))
        parts.extend(each)
    return parts


def _number(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _literal(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return _number(value)

"""Typed elicitation: a pydantic model as the ``requestedSchema`` of ``elicitation/create``, and the answer as one of
three small outcome classes, the accepted one holding the answer validated into that model.

Where it sits: at the bottom of the ``server`` layer, under ``context`` (``Context.elicit``); it knows the
negotiated version only through the bindings module ``context`` hands it. What the three outcomes look like::

    match await context.elicit("Book a table?", schema=Booking):
        case Accepted(data=booking):   # booking: Booking
            ...
        case Declined() | Cancelled():
            ...

Each outcome also has the wire result's ``action`` and ``content`` (the answers as JSON, None unless accepted), so
code written for the untyped ``ElicitResult`` keeps working, and ``result`` (the negotiated version's
``ElicitResult``, for its ``_meta``).

The schema: the spec allows a flat object of primitive fields (string, number, integer, boolean, enums; from
2025-11-25 also multi-select enums: ``list[Literal[...]]``). An optional field (``T | None = None``) is rendered as
``T``, not required; an ``Enum`` field is inlined; anything the negotiated version's ``PrimitiveSchemaDefinition``
rejects (a nested model, ``list[str]`` without choices, a union of types) raises ``TypeError`` before anything is
sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

__all__ = ["Accepted", "Cancelled", "Declined", "ElicitOutcome", "ModelT", "elicit_outcome", "requested_schema"]

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Accepted(Generic[ModelT]):
    """The user submitted the form: ``data`` is the answer, validated into the schema's model."""

    data: ModelT
    content: dict[str, Any] = field(repr=False)
    result: Any = field(default=None, repr=False, compare=False)
    action: Literal["accept"] = field(default="accept", repr=False)


@dataclass(frozen=True, slots=True)
class Declined:
    """The user explicitly said no."""

    result: Any = field(default=None, repr=False, compare=False)
    action: Literal["decline"] = field(default="decline", repr=False)
    content: None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The user dismissed the request without choosing."""

    result: Any = field(default=None, repr=False, compare=False)
    action: Literal["cancel"] = field(default="cancel", repr=False)
    content: None = field(default=None, repr=False)


ElicitOutcome: TypeAlias = Accepted[ModelT] | Declined | Cancelled


class _FlatSchema(GenerateJsonSchema):
    """JSON schema without what the spec's primitive schemas cannot say: ``T | None`` is ``T`` (not being required
    already makes it optional) and a None default is left out (as in the official SDK). The schemas are typed Any:
    their pydantic_core types are not a dependency of ours."""

    def nullable_schema(self, schema: Any) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: Any) -> JsonSchemaValue:
        generated = super().default_schema(schema)
        if generated.get("default") is None:
            generated.pop("default", None)
        return generated


def requested_schema(model: type[BaseModel], bindings: ModuleType) -> dict[str, Any]:
    """The ``requestedSchema`` for ``model``: its fields as the negotiated version's primitive schemas. Raises
    ``TypeError`` naming a field that is not one (see the module docstring)."""
    generated = model.model_json_schema(schema_generator=_FlatSchema)
    definitions = generated.pop("$defs", {})
    generated.pop("title", None)
    adapter = _primitive_adapter(bindings)
    properties: dict[str, Any] = {}
    for name, prop in generated.get("properties", {}).items():
        reference = prop.get("$ref", "")
        if reference.startswith("#/$defs/"):
            # An Enum field: its definition inline (what the spec's enum schemas are), the field's own keys over it.
            prop = {**definitions.get(reference.removeprefix("#/$defs/"), {}), **prop}
            prop.pop("$ref")
        if adapter is not None:
            try:
                adapter.validate_python(prop)
            except ValidationError:
                raise TypeError(
                    f"{model.__name__}.{name}: elicitation fields must be primitive (str, int, float, bool, an enum"
                    f" or Literal choices); it renders as {prop!r}"
                ) from None
        properties[name] = prop
    return {**generated, "properties": properties}


def _primitive_adapter(bindings: ModuleType) -> TypeAdapter[Any] | None:
    primitive = getattr(bindings, "PrimitiveSchemaDefinition", None)
    if primitive is None:  # a version without elicitation: Context.elicit refuses it before this matters
        return None
    adapter: TypeAdapter[Any] | None = _ADAPTERS.get(bindings.__name__)
    if adapter is None:
        adapter = _ADAPTERS[bindings.__name__] = TypeAdapter(primitive)
    return adapter


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def elicit_outcome(model: type[ModelT], result: Any) -> ElicitOutcome[ModelT]:
    """The outcome of an ``ElicitResult`` (a validated result model of the negotiated version). Raises
    ``ValidationError`` when an accepted answer does not fit ``model`` (the caller names it the client's fault)."""
    if result.action == "accept":
        content = dict(result.content or {})
        return Accepted(model.model_validate(content), content, result)
    if result.action == "decline":
        return Declined(result)
    return Cancelled(result)

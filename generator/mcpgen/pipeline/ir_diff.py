"""What changed between two protocol versions, computed from their IRs: `mcpgen diff` and CHANGES.md.

Pipeline position: a side branch after the IR (spec_loader -> parser + protocol -> **ir_diff**); it
reads two `VersionIR`s and never touches views or templates. `cli/diff.py` prints one diff, and
`generate.generate_files` writes `mcp_bindings/CHANGES.md` with `render_changes_file`.

The result is a frozen dataclass of plain data (`dataclasses.asdict` + `json.dumps` is the JSON
format). Everything in it is sorted by name, so a diff is reproducible byte for byte. Types are
compared by a readable rendering (`render_type`), not structurally, so the report says what a reader
would see change. Descriptions change in almost every release, so a description change is reported
as the first line that differs, and changes of whitespace alone are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise, zip_longest

from .. import __version__
from ..ir import Definition, FieldDef, LiteralType, Method, TypeExpr, UnionType, VersionIR

DESCRIPTION_EXCERPT_CHARS = 80
CHANGES_PATH = "mcp_bindings/CHANGES.md"
FORMATS = ("text", "markdown", "json")


@dataclass(frozen=True)
class Change:
    """One aspect that differs. `old` and `new` are readable renderings; "" means absent."""

    aspect: str
    old: str
    new: str


@dataclass(frozen=True)
class FieldSummary:
    name: str  # the wire name: what changes on the wire is what a reader of a protocol diff cares about
    type: str
    required: bool


@dataclass(frozen=True)
class FieldDiff:
    name: str
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class DefinitionSummary:
    name: str
    kind: str


@dataclass(frozen=True)
class DefinitionDiff:
    """A definition present in both versions that differs. `values_*` are the JSON values of an
    enum or const; `arms_*` the rendered arms of a union."""

    name: str
    kind: str  # in the newer version
    changes: tuple[Change, ...] = ()
    fields_added: tuple[FieldSummary, ...] = ()
    fields_removed: tuple[FieldSummary, ...] = ()
    fields_changed: tuple[FieldDiff, ...] = ()
    values_added: tuple[str, ...] = ()
    values_removed: tuple[str, ...] = ()
    arms_added: tuple[str, ...] = ()
    arms_removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class MethodSummary:
    method: str
    kind: str
    direction: str
    message_type: str


@dataclass(frozen=True)
class MethodDiff:
    method: str
    changes: tuple[Change, ...]


@dataclass(frozen=True, order=True)  # ordered by method, then request, then result
class Pairing:
    """A request method, its request class and the result class that answers it."""

    method: str
    request: str
    result: str


@dataclass(frozen=True)
class IRDiff:
    old_version: str
    new_version: str
    methods_added: tuple[MethodSummary, ...]
    methods_removed: tuple[MethodSummary, ...]
    methods_changed: tuple[MethodDiff, ...]
    # A pairing whose result type changed shows up as one removed and one added.
    pairings_added: tuple[Pairing, ...]
    pairings_removed: tuple[Pairing, ...]
    definitions_added: tuple[DefinitionSummary, ...]
    definitions_removed: tuple[DefinitionSummary, ...]
    definitions_changed: tuple[DefinitionDiff, ...]

    def is_empty(self) -> bool:
        return not any(value for key, value in asdict(self).items() if key not in ("old_version", "new_version"))


# -- comparing ---------------------------------------------------------------------------------


def render_type(expr: TypeExpr | None) -> str:
    """A TypeScript-like one-line rendering, e.g. `array<ContentBlock>`, `string<uri>`, `"a" | "b"`."""
    if expr is None:
        return ""
    match expr.kind:
        case "primitive":
            bounds = (("minimum", expr.minimum), ("maximum", expr.maximum))
            details = [expr.format] if expr.format else []
            details += [f"{bound}={value:g}" for bound, value in bounds if value is not None]
            return f"{expr.name}<{', '.join(details)}>" if details else expr.name
        case "ref":
            return expr.target
        case "array":
            limit = f", maxItems={expr.max_items}" if expr.max_items is not None else ""
            return f"array<{render_type(expr.items)}{limit}>"
        case "map":
            return f"map<string, {render_type(expr.values)}>"
        case "union":
            return " | ".join(render_type(arm) for arm in expr.arms)
        case "literal":
            return " | ".join(json.dumps(value) for value in expr.values)
    return "any"


def _description_lines(text: str | None) -> list[str]:
    return [" ".join(line.split()) for line in (text or "").splitlines() if line.strip()]


def _excerpt(line: str) -> str:
    return line if len(line) <= DESCRIPTION_EXCERPT_CHARS else line[: DESCRIPTION_EXCERPT_CHARS - 1] + "…"


def description_change(old: str | None, new: str | None) -> Change | None:
    """The first differing line of two descriptions, or None when they differ in whitespace only
    (re-wrapped paragraphs included)."""
    if " ".join((old or "").split()) == " ".join((new or "").split()):
        return None
    for old_line, new_line in zip_longest(_description_lines(old), _description_lines(new), fillvalue=""):
        if old_line != new_line:
            return Change("description", _excerpt(old_line), _excerpt(new_line))
    raise AssertionError("unreachable: the texts differ, so some line does")  # pragma: no cover


def _change(aspect: str, old: str, new: str) -> list[Change]:
    return [Change(aspect, old, new)] if old != new else []


def _field_summary(field: FieldDef) -> FieldSummary:
    return FieldSummary(field.wire_name, render_type(field.type), field.required)


def _required_text(required: bool) -> str:
    return "required" if required else "optional"


def diff_field(old: FieldDef, new: FieldDef) -> FieldDiff | None:
    changes = _change("type", render_type(old.type), render_type(new.type))
    changes += _change("required", _required_text(old.required), _required_text(new.required))
    description = description_change(old.description, new.description)
    changes += [description] if description else []
    return FieldDiff(new.wire_name, tuple(changes)) if changes else None


def _set_difference(old: Sequence[str], new: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(added, removed), each sorted."""
    return tuple(sorted(set(new) - set(old))), tuple(sorted(set(old) - set(new)))


def _literal_values(expr: TypeExpr | None) -> list[str] | None:
    return [json.dumps(value) for value in expr.values] if isinstance(expr, LiteralType) else None


def _union_arms(expr: TypeExpr | None) -> list[str] | None:
    return [render_type(arm) for arm in expr.arms] if isinstance(expr, UnionType) else None


def _discriminator(expr: TypeExpr | None) -> str:
    return expr.discriminator or "" if isinstance(expr, UnionType) else ""


def diff_definition(old: Definition, new: Definition) -> DefinitionDiff | None:
    # `pointer` is left out on purpose: 2025-11-25 moved from `definitions` to `$defs`, which moves
    # every pointer without changing any type.
    changes = _change("kind", old.kind, new.kind) + _change("role", old.role, new.role)
    description = description_change(old.description, new.description)
    changes += [description] if description else []
    changes += _change("additionalProperties", render_type(old.extra_values), render_type(new.extra_values))
    values_added: tuple[str, ...] = ()
    values_removed: tuple[str, ...] = ()
    arms_added: tuple[str, ...] = ()
    arms_removed: tuple[str, ...] = ()
    old_values, new_values = _literal_values(old.type), _literal_values(new.type)
    old_arms, new_arms = _union_arms(old.type), _union_arms(new.type)
    if old_values is not None and new_values is not None:
        values_added, values_removed = _set_difference(old_values, new_values)
    elif old_arms is not None and new_arms is not None:
        arms_added, arms_removed = _set_difference(old_arms, new_arms)
        changes += _change("discriminator", _discriminator(old.type), _discriminator(new.type))
    else:
        changes += _change("type", render_type(old.type), render_type(new.type))
    old_fields = {field.wire_name: field for field in old.fields}
    new_fields = {field.wire_name: field for field in new.fields}
    added, removed = _set_difference(list(old_fields), list(new_fields))
    field_diffs = (diff_field(old_fields[name], new_fields[name]) for name in sorted(set(old_fields) & set(new_fields)))
    result = DefinitionDiff(
        name=new.name,
        kind=new.kind,
        changes=tuple(changes),
        fields_added=tuple(_field_summary(new_fields[name]) for name in added),
        fields_removed=tuple(_field_summary(old_fields[name]) for name in removed),
        fields_changed=tuple(diff for diff in field_diffs if diff is not None),
        values_added=values_added,
        values_removed=values_removed,
        arms_added=arms_added,
        arms_removed=arms_removed,
    )
    return None if result == DefinitionDiff(new.name, new.kind) else result


def _alternatives_text(method: Method) -> str:
    """E.g. `CreateTaskResult when task present`, sorted, "; "-joined."""
    texts = [
        f"{alt.type} when {alt.key}{'=' + json.dumps(alt.value) if alt.value is not None else ' present'}"
        for alt in method.alternatives
    ]
    return "; ".join(sorted(texts))


def diff_method(old: Method, new: Method) -> MethodDiff | None:
    changes = (
        _change("kind", old.kind, new.kind)
        + _change("direction", old.direction, new.direction)
        + _change("message type", old.message_type, new.message_type)
        + _change("params type", old.params_type or "", new.params_type or "")
        + _change("result type", old.result_type or "", new.result_type or "")
        + _change("result alternatives", _alternatives_text(old), _alternatives_text(new))
        + _change("delivery", old.delivery, new.delivery)
        + _change("capability", old.capability or "", new.capability or "")
    )
    return MethodDiff(new.method, tuple(changes)) if changes else None


def _method_summary(method: Method) -> MethodSummary:
    return MethodSummary(method.method, method.kind, method.direction, method.message_type)


def _pairings(ir: VersionIR) -> set[Pairing]:
    return {Pairing(m.method, m.message_type, m.result_type) for m in ir.methods if m.result_type is not None}


def diff_irs(old: VersionIR, new: VersionIR) -> IRDiff:
    old_methods = {method.method: method for method in old.methods}
    new_methods = {method.method: method for method in new.methods}
    old_definitions = {definition.name: definition for definition in old.definitions}
    new_definitions = {definition.name: definition for definition in new.definitions}
    methods_added, methods_removed = _set_difference(list(old_methods), list(new_methods))
    definitions_added, definitions_removed = _set_difference(list(old_definitions), list(new_definitions))
    method_diffs = (diff_method(old_methods[n], new_methods[n]) for n in sorted(set(old_methods) & set(new_methods)))
    definition_diffs = (
        diff_definition(old_definitions[name], new_definitions[name])
        for name in sorted(set(old_definitions) & set(new_definitions))
    )
    old_pairings, new_pairings = _pairings(old), _pairings(new)
    return IRDiff(
        old_version=old.version,
        new_version=new.version,
        methods_added=tuple(_method_summary(new_methods[name]) for name in methods_added),
        methods_removed=tuple(_method_summary(old_methods[name]) for name in methods_removed),
        methods_changed=tuple(diff for diff in method_diffs if diff is not None),
        pairings_added=tuple(sorted(new_pairings - old_pairings)),
        pairings_removed=tuple(sorted(old_pairings - new_pairings)),
        definitions_added=tuple(DefinitionSummary(n, new_definitions[n].kind) for n in definitions_added),
        definitions_removed=tuple(DefinitionSummary(n, old_definitions[n].kind) for n in definitions_removed),
        definitions_changed=tuple(diff for diff in definition_diffs if diff is not None),
    )


# -- rendering ---------------------------------------------------------------------------------
# Text and markdown share one outline (sections of nested, signed items), so they cannot drift
# apart; they differ only in how a name is quoted and how an item is marked.

Quote = Callable[[str], str]


@dataclass(frozen=True)
class _Item:
    depth: int
    sign: str  # "+" added, "-" removed, "~" changed
    text: str


@dataclass(frozen=True)
class _Section:
    title: str
    counts: str
    items: tuple[_Item, ...]


def _plain(text: str) -> str:
    return text


def markdown_code(text: str) -> str:
    """`text` as a markdown code span, with a fence longer than any backtick run inside it."""
    backtick_runs = [len(run) for run in "".join(c if c == "`" else " " for c in text).split()]
    fence = "`" * (max(backtick_runs, default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _change_text(change: Change, quote: Quote) -> str:
    """One change as a phrase, for lines that join several: `type: A → B`, `description changed: …`."""
    if change.aspect == "description":
        # Compact on purpose: descriptions change in every release, the new wording is what matters.
        if not change.new:
            return "description removed"
        return f"description {'changed' if change.old else 'added'}: {quote(change.new)}"
    old = quote(change.old) if change.old else "(none)"
    new = quote(change.new) if change.new else "(none)"
    return f"{change.aspect}: {old} → {new}"


def _change_item(change: Change, quote: Quote) -> _Item:
    """One change as an item of its own; the sign says added/removed/changed, so the text doesn't."""
    if change.aspect == "description":
        sign = "-" if not change.new else "~" if change.old else "+"
        return _Item(1, sign, f"description: {quote(change.new)}" if change.new else "description")
    return _Item(1, "~", _change_text(change, quote))


def _field_text(field: FieldSummary, quote: Quote) -> str:
    return f"field {quote(field.name)}: {quote(field.type)} ({_required_text(field.required)})"


def _definition_items(diff: DefinitionDiff, quote: Quote) -> list[_Item]:
    items = [_Item(0, "~", f"{quote(diff.name)} ({diff.kind})")]
    items += [_change_item(change, quote) for change in diff.changes]
    items += [_Item(1, "+", _field_text(field, quote)) for field in diff.fields_added]
    items += [_Item(1, "-", _field_text(field, quote)) for field in diff.fields_removed]
    items += [
        _Item(1, "~", f"field {quote(field.name)}: " + "; ".join(_change_text(c, quote) for c in field.changes))
        for field in diff.fields_changed
    ]
    items += [_Item(1, "+", f"value {quote(value)}") for value in diff.values_added]
    items += [_Item(1, "-", f"value {quote(value)}") for value in diff.values_removed]
    items += [_Item(1, "+", f"arm {quote(arm)}") for arm in diff.arms_added]
    items += [_Item(1, "-", f"arm {quote(arm)}") for arm in diff.arms_removed]
    return items


def _counts(**counts: int) -> str:
    return ", ".join(f"{count} {what}" for what, count in counts.items())


def _outline(diff: IRDiff, quote: Quote) -> list[_Section]:
    def method_text(method: MethodSummary) -> str:
        return f"{quote(method.method)} ({method.kind}, {method.direction}, {quote(method.message_type)})"

    def pairing_text(pairing: Pairing) -> str:
        return f"{quote(pairing.method)}: {quote(pairing.request)} → {quote(pairing.result)}"

    methods = [_Item(0, "+", method_text(m)) for m in diff.methods_added]
    methods += [_Item(0, "-", method_text(m)) for m in diff.methods_removed]
    methods += [
        _Item(0, "~", f"{quote(m.method)}: " + "; ".join(_change_text(c, quote) for c in m.changes))
        for m in diff.methods_changed
    ]
    pairings = [_Item(0, "+", pairing_text(p)) for p in diff.pairings_added]
    pairings += [_Item(0, "-", pairing_text(p)) for p in diff.pairings_removed]
    definitions = [_Item(0, "+", f"{quote(d.name)} ({d.kind})") for d in diff.definitions_added]
    definitions += [_Item(0, "-", f"{quote(d.name)} ({d.kind})") for d in diff.definitions_removed]
    for changed in diff.definitions_changed:
        definitions += _definition_items(changed, quote)
    sections = [
        _Section(
            "Methods",
            _counts(
                added=len(diff.methods_added), removed=len(diff.methods_removed), changed=len(diff.methods_changed)
            ),
            tuple(methods),
        ),
        _Section(
            "Request → result pairings",
            _counts(added=len(diff.pairings_added), removed=len(diff.pairings_removed)),
            tuple(pairings),
        ),
        _Section(
            "Definitions",
            _counts(
                added=len(diff.definitions_added),
                removed=len(diff.definitions_removed),
                changed=len(diff.definitions_changed),
            ),
            tuple(definitions),
        ),
    ]
    return [section for section in sections if section.items]


def _title(diff: IRDiff) -> str:
    return f"{diff.old_version} → {diff.new_version}"


NO_DIFFERENCES = "No differences."


def render_text(diff: IRDiff) -> str:
    lines = [f"MCP {_title(diff)}"]
    for section in _outline(diff, _plain):
        lines += ["", f"{section.title}: {section.counts}"]
        lines += [f"{'    ' * item.depth}  {item.sign} {item.text}" for item in section.items]
    if len(lines) == 1:
        lines += ["", NO_DIFFERENCES]
    return "\n".join(lines) + "\n"


MARKDOWN_SIGNS = {"+": "added", "-": "removed", "~": "changed"}


def render_markdown(diff: IRDiff, level: int = 1) -> str:
    """`level` is the heading level of the title; sections are one below it."""
    lines = [f"{'#' * level} {_title(diff)}"]
    for section in _outline(diff, markdown_code):
        lines += ["", f"{'#' * (level + 1)} {section.title} ({section.counts})", ""]
        lines += [f"{'  ' * item.depth}- {MARKDOWN_SIGNS[item.sign]} {item.text}" for item in section.items]
    if len(lines) == 1:
        lines += ["", NO_DIFFERENCES]
    return "\n".join(lines) + "\n"


def render_json(diff: IRDiff) -> str:
    return json.dumps(asdict(diff), indent=2, ensure_ascii=False) + "\n"


RENDERERS: dict[str, Callable[[IRDiff], str]] = {"text": render_text, "markdown": render_markdown, "json": render_json}


CHANGES_INTRO = """\
What changed in the schema from each vendored version to the next, as `mcpgen diff OLD NEW --format markdown`
prints it: methods, request → result pairings and definitions (fields, enum values, union arms).
A description change shows only its first differing line; whitespace-only changes are left out.
"""


def render_changes(irs: Sequence[VersionIR]) -> str:
    """The markdown diff of each pair of consecutive versions in `irs` (oldest first), as one document."""
    parts = ["# Changes between MCP versions\n", CHANGES_INTRO]
    parts += [render_markdown(diff_irs(old, new), level=2) for old, new in pairwise(irs)]
    return "\n".join(parts)


def render_changes_file(irs: Sequence[VersionIR], manifest_sha256: str) -> str:
    """CHANGES.md as generated: `render_changes` under the header every generated file carries."""
    header = f"Code generated by mcpgen {__version__} from spec/manifest.json (sha256 {manifest_sha256}). DO NOT EDIT."
    return f"<!-- {header} -->\n" + render_changes(irs)

"""Stage 3a helper: the order models.py defines its classes in, so that annotations need no quotes.

Pipeline position: IR -> **view** (views.ModelsView asks this module for the order) -> render.

A class comes after every class its fields name, so its annotations are real objects when Python
creates it: pydantic then reads them as they are instead of evaluating a string per field (with
`from __future__ import annotations` that evaluation was about half of the cost of importing a
version). Only a field that names a class not yet defined (a cycle: ContentBlock <-> Resource...)
stays a string, which pydantic resolves when the class is first used. Ties are broken by name, and a
cycle is entered at its smallest name, so the order is deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

from ..ir import ArrayType, MapType, RefType, TypeExpr, UnionType


def referenced_names(expr: TypeExpr | None) -> set[str]:
    """Every definition a type expression names, however deeply nested."""
    if expr is None:
        return set()
    if isinstance(expr, RefType):
        return {expr.target}
    if isinstance(expr, ArrayType):
        return referenced_names(expr.items)
    if isinstance(expr, MapType):
        return referenced_names(expr.values)
    if isinstance(expr, UnionType):
        return set().union(*(referenced_names(arm) for arm in expr.arms))
    return set()


def dependency_order(dependencies: Mapping[str, Iterable[str]]) -> list[str]:
    """Names ordered so that each comes after the names it depends on (only names that are keys of
    `dependencies` count). Among the names that are ready, the smallest comes first; when none is
    ready (a cycle), the smallest remaining name is taken, and its later dependencies are forward
    references."""
    waiting_on = {name: set(deps) & dependencies.keys() - {name} for name, deps in dependencies.items()}
    dependents: dict[str, set[str]] = {name: set() for name in dependencies}
    for name, deps in waiting_on.items():
        for dep in deps:
            dependents[dep].add(name)
    ready = [name for name, deps in waiting_on.items() if not deps]
    heapq.heapify(ready)
    remaining = set(dependencies)
    order: list[str] = []
    while remaining:
        name = heapq.heappop(ready) if ready else min(remaining)
        if name not in remaining:
            continue  # already taken to break a cycle
        remaining.discard(name)
        order.append(name)
        for dependent in sorted(dependents[name]):
            waiting_on[dependent].discard(name)
            if not waiting_on[dependent] and dependent in remaining:
                heapq.heappush(ready, dependent)
    return order

"""What a block left in reference cycles, of the runtime's own objects: the per-request path must leave none (the
cyclic collector's full collections, 10-30 ms with the bindings loaded, were the modern era's p99)."""

from __future__ import annotations

import functools
import gc
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import mcpgen_runtime

RUNTIME = str(Path(mcpgen_runtime.__file__).parent)


@contextmanager
def cyclic_garbage() -> Iterator[list[str]]:
    """The runtime's objects (instances of its classes, its functions, methods and partials of them) that the block
    left in reference cycles, by type: ``gc.DEBUG_SAVEALL`` keeps what the cyclic GC finds instead of freeing it."""
    found: list[str] = []
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield found
        gc.collect()
        found.extend(sorted(name for name in map(runtime_name, gc.garbage) if name is not None))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def runtime_name(value: object) -> str | None:
    """The name of ``value`` if it is the runtime's (an instance of its class, its function, a method or partial of
    one, one of its coroutines), else None."""
    target = value.func if isinstance(value, functools.partial) else value
    target = target.__func__ if isinstance(target, types.MethodType) else target
    if isinstance(target, types.FunctionType):
        return f"{target.__module__}.{target.__qualname__}" if target.__module__.startswith("mcpgen_runtime") else None
    if isinstance(target, types.CoroutineType):
        return target.cr_code.co_qualname if target.cr_code.co_filename.startswith(RUNTIME) else None
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}" if kind.__module__.startswith("mcpgen_runtime") else None

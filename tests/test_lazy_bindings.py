"""A version package loads lazily (PEP 562): importing it builds no model, the first use of a name loads the
sub-module that defines it, and every public name, `import *`, dir() and the sub-modules work as before."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import mcp_bindings
from mcp_bindings import MODULES, load


def _fresh(code: str) -> dict[str, object]:
    """Run `code` in a new interpreter; it sets `out`, which comes back as JSON."""
    program = f"import json, sys\n{code}\nprint(json.dumps(out))"
    completed = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(completed.stdout)
    return result


def test_importing_a_version_loads_no_submodule_and_not_pydantic() -> None:
    out = _fresh(
        "import mcp_bindings.v2025_11_25 as v\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('mcp_bindings.v2025_11_25.'))\n"
        "out = {'loaded': loaded, 'pydantic': 'pydantic' in sys.modules, 'version': v.PROTOCOL_VERSION}"
    )
    assert out == {"loaded": [], "pydantic": False, "version": "2025-11-25"}


def test_the_first_use_of_a_name_loads_only_the_submodule_that_defines_it() -> None:
    out = _fresh(
        "import mcp_bindings.v2025_11_25 as v\n"
        "method = v.Method.TOOLS_CALL\n"
        "after_method = sorted(m for m in sys.modules if m.startswith('mcp_bindings.v2025_11_25.'))\n"
        "from mcp_bindings.v2025_11_25 import CallToolRequest\n"
        "after_class = sorted(m for m in sys.modules if m.startswith('mcp_bindings.v2025_11_25.'))\n"
        "out = {'method': method, 'after_method': after_method, 'after_class': after_class,\n"
        "       'class_module': CallToolRequest.__module__}"
    )
    assert out == {
        "method": "tools/call",
        "after_method": ["mcp_bindings.v2025_11_25.methods"],
        "after_class": ["mcp_bindings.v2025_11_25.methods", "mcp_bindings.v2025_11_25.models"],
        "class_module": "mcp_bindings.v2025_11_25.models",
    }


@pytest.mark.parametrize("version", list(MODULES))
def test_every_public_name_resolves_to_the_object_its_submodule_defines(version: str) -> None:
    package = load(version)
    for name in package.__all__:
        value = getattr(package, name)
        if name == "PROTOCOL_VERSION":
            assert value == version
            continue
        owners = [
            module
            for module in ("models", "methods", "interfaces")
            if name in getattr(getattr(package, module), "__all__", ())
        ]
        assert len(owners) == 1, (version, name, owners)
        assert value is getattr(getattr(package, owners[0]), name), (version, name)
    # and every name a sub-module exports is public in the package
    for module in ("models", "methods", "interfaces"):
        assert set(getattr(package, module).__all__) <= set(package.__all__), (version, module)
    assert len(package.__all__) == len(set(package.__all__)), version


def test_star_import_dir_and_submodules() -> None:
    out = _fresh(
        "namespace = {}\n"
        "exec('from mcp_bindings.v2025_06_18 import *', namespace)\n"
        "import mcp_bindings.v2025_06_18 as v\n"
        "out = {'missing': sorted(set(v.__all__) - set(namespace)), 'in_dir': set(v.__all__) <= set(dir(v)),\n"
        "       'server': v.server.__name__, 'client': v.client.__name__}"
    )
    assert out == {
        "missing": [],
        "in_dir": True,
        "server": "mcp_bindings.v2025_06_18.server",
        "client": "mcp_bindings.v2025_06_18.client",
    }


def test_an_unknown_name_is_an_attribute_error() -> None:
    package = load("2025-11-25")
    with pytest.raises(AttributeError, match="has no attribute 'CallToolRequst'"):
        package.CallToolRequst  # noqa: B018
    assert not hasattr(package, "CallToolRequst")
    with pytest.raises(ImportError, match="CallToolRequst"):
        exec("from mcp_bindings.v2025_11_25 import CallToolRequst", {})


def test_latest_is_lazy_and_is_the_newest_dated_version() -> None:
    out = _fresh(
        "import mcp_bindings.latest as latest\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('mcp_bindings.v2026_07_28.'))\n"
        "from mcp_bindings.v2026_07_28 import CallToolRequest\n"
        "out = {'loaded': loaded, 'same': latest.CallToolRequest is CallToolRequest,\n"
        "       'all': latest.__all__ == __import__('mcp_bindings.v2026_07_28').v2026_07_28.__all__}"
    )
    assert out == {"loaded": [], "same": True, "all": True}
    assert mcp_bindings.LATEST_VERSION == "2026-07-28"

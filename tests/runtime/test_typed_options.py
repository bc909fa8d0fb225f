"""The server's run and mount options are typed (issue 21): a misspelt one is a TypeError naming it, at run time as
in mypy, before anything starts."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette

from mcpgen_runtime.server import Server
from mcpgen_runtime.server.hosting.asgi import MCPApp, mount_mcp
from mcpgen_runtime.server.hosting.options import check_http_options
from mcpgen_runtime.transports.http.server.app import HTTPAppOptions


def test_check_http_options_names_every_misspelt_option() -> None:
    check_http_options({"json_response": True, "max_sessions": 3, "shutdown_timeout": 1.0}, "serve_http")
    with pytest.raises(TypeError, match=r"serve_http\(\) got unexpected keyword arguments: jsn_response, max_sesions"):
        check_http_options({"jsn_response": True, "max_sesions": 3}, "serve_http")


@pytest.mark.anyio
async def test_serve_http_refuses_a_misspelt_option_before_it_binds() -> None:
    server = Server("typed")
    options: dict[str, Any] = {"json_respnse": True}
    with pytest.raises(TypeError, match="json_respnse"):
        await server.serve_http("127.0.0.1", 0, **options)


def test_run_http_refuses_a_misspelt_option_before_it_configures_anything() -> None:
    options: dict[str, Any] = {"max_body_sise": 10}
    with pytest.raises(TypeError, match="max_body_sise"):
        Server("typed").run_http(port=0, log_level=None, **options)


def test_mounting_refuses_a_misspelt_option() -> None:
    options: dict[str, Any] = {"allowed_hostz": ["x"]}
    with pytest.raises(TypeError, match="allowed_hostz"):
        MCPApp(Server("typed"), **options)
    with pytest.raises(TypeError, match="allowed_hostz"):
        mount_mcp(Starlette(), Server("typed"), **options)


def test_run_stdio_takes_only_its_limits() -> None:
    options: dict[str, Any] = {"max_batch_sise": 5}
    with pytest.raises(TypeError, match="max_batch_sise"):
        Server("typed").run_stdio(**options)


def test_the_mount_options_are_the_apps_but_path() -> None:
    from mcpgen_runtime.server.hosting.asgi import MountOptions

    app_options = HTTPAppOptions.__optional_keys__ - {
        "path",
        "modern_handler",
        "modern_eager",
        "lifespan",
        "on_started",
    }
    assert MountOptions.__optional_keys__ == app_options


def test_scale_out_overrides_are_the_settings_fields_and_a_misspelt_one_is_named() -> None:
    from dataclasses import fields

    from mcpgen_runtime.scaleout.settings import ScaleOutSettings, SettingsOverrides

    assert set(SettingsOverrides.__annotations__) == {field.name for field in fields(ScaleOutSettings)}
    assert ScaleOutSettings.from_env({}, workers=None, session_ttl=60.0).session_ttl == 60.0
    with pytest.raises(TypeError, match="sesion_ttl"):
        ScaleOutSettings.from_env({}, sesion_ttl=60.0)  # type: ignore[call-arg]

"""The MCP server the official conformance suite tests: its "everything server" contract, written with mcpgen_runtime.

Run: python tests/conformance/server.py [--port N] (0, the default: a free port). It serves streamable HTTP at
http://127.0.0.1:PORT/mcp and prints that URL as its first stdout line once it accepts connections. The tools,
resources and prompts are the ones the suite's server scenarios call (@modelcontextprotocol/conformance,
src/scenarios/server/*.ts: each scenario's description states what it expects), in both eras: the legacy era
(2025-11-25) and the modern one (2026-07-28: per-request _meta, input rounds, subscriptions/listen). Written with the
public API only, as an author would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import anyio
from pydantic import Field

from mcpgen_runtime import Context, Server
from mcpgen_runtime.server import Csp, ProtocolError, ToolError, add_ui_resource, app_tool, client_supports_apps

# A 1x1 red PNG and a minimal WAV: the suite only checks type, mimeType and that data is present.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

# SEP-1613 / SEP-2106: the schema the json-schema-2020-12 scenario expects tools/list to carry unchanged.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

server = Server("mcpgen-conformance-server", version="1.0.0")


# -- tools ---------------------------------------------------------------------------------------------------------


@server.tool(description="Tests simple text content response")
async def test_simple_text() -> str:
    return "This is a simple text response for testing."


@server.tool(description="Tests image content response", structured_output=False)
async def test_image_content() -> dict[str, Any]:
    return {"type": "image", "data": PNG, "mimeType": "image/png"}


@server.tool(description="Tests audio content response", structured_output=False)
async def test_audio_content() -> dict[str, Any]:
    return {"type": "audio", "data": WAV, "mimeType": "audio/wav"}


@server.tool(description="Tests embedded resource content response", structured_output=False)
async def test_embedded_resource() -> dict[str, Any]:
    resource = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    return {"type": "resource", "resource": resource}


@server.tool(description="Tests response with multiple content types (text, image, resource)")
async def test_multiple_content_types() -> list[Any]:
    resource = {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
    }
    return [
        "Multiple content types test:",
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "resource", "resource": resource},
    ]


@server.tool(description="Tests tool that emits log messages during execution")
async def test_tool_with_logging(context: Context) -> str:
    await context.info("Tool execution started")
    await anyio.sleep(0.05)
    await context.info("Tool processing data")
    await anyio.sleep(0.05)
    await context.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool(description="Tests tool that reports progress notifications")
async def test_tool_with_progress(context: Context) -> str:
    for step in (0, 50, 100):
        if step:
            await anyio.sleep(0.05)
        await context.report_progress(step, 100, f"Completed step {step} of 100")
    token = (context.meta or {}).get("progressToken", 0)
    return str(token)


@server.tool(description="Tests error response handling")
async def test_error_handling() -> str:
    raise RuntimeError("This tool intentionally returns an error for testing")


@server.tool(
    description=(
        "Tests SSE stream disconnection and client reconnection (SEP-1699): the server closes the request's SSE "
        "stream mid-call and sends the result after the client reconnects."
    )
)
async def test_reconnection(context: Context) -> str:
    # Ends the HTTP response carrying this request's SSE stream; the client resumes it with GET + Last-Event-ID
    # after the retry interval and finds the answer there.
    await context.close_sse_stream()
    await anyio.sleep(0.1)
    return (
        "Reconnection test completed successfully. If you received this, the client properly reconnected after "
        "stream closure."
    )


@server.tool(description="Tests server-initiated sampling (LLM completion request)")
async def test_sampling(prompt: str = Field(description="The prompt to send to the LLM"), *, context: Context) -> str:
    result = await context.sample(prompt, max_tokens=100)
    content = result.content
    text = getattr(content, "text", None) or json.dumps(result.model_dump(mode="json", by_alias=True)["content"])
    return f"LLM response: {text}"


@server.tool(description="Tests server-initiated elicitation (user input request)")
async def test_elicitation(
    message: str = Field(description="The message to show the user"), *, context: Context
) -> str:
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    result = await context.elicit(message, schema)
    return f"User response: action={result.action}, content={json.dumps(result.content or {})}"


@server.tool(description="Tests elicitation with default values per SEP-1034")
async def test_elicitation_sep1034_defaults(context: Context) -> str:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": [],
    }
    result = await context.elicit("Please review and update the form fields with defaults", schema)
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}"


@server.tool(description="Tests elicitation with enum schema improvements per SEP-1330")
async def test_elicitation_sep1330_enums(context: Context) -> str:
    def titled(word: str) -> list[dict[str, str]]:
        return [
            {"const": f"value{n}", "title": f"{title} {word}"}
            for n, title in ((1, "First"), (2, "Second"), (3, "Third"))
        ]

    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option", "enum": options},
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": titled("Option"),
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": options},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {"anyOf": titled("Choice")},
            },
        },
        "required": [],
    }
    result = await context.elicit("Please select options from the enum fields", schema)
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}"


@server.tool(description="Tool with JSON Schema 2020-12 features", input_schema=JSON_SCHEMA_2020_12)
async def json_schema_2020_12_tool(**arguments: Any) -> str:
    return "JSON Schema 2020-12 tool called"


# -- the modern era: input rounds (SEP-2322) and the stateless diagnostics (SEP-2575) ------------------------------
# Each Context.elicit / sample / list_roots below is an ordinary server->client request in the legacy era; in the
# modern era it becomes an input request of an InputRequiredResult, under the key the scenario expects (input_key).

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ROOTS_TEXT = "roots: {}"


def _roots_text(roots: list[Any]) -> str:
    return ROOTS_TEXT.format(", ".join(str(root.uri) for root in roots))


@server.tool(description="Asks the user's name (an elicitation input request, key user_name)")
async def test_input_required_result_elicitation(context: Context) -> str:
    answer = await context.elicit("What is your name?", NAME, input_key="user_name")
    return f"Hello, {(answer.content or {}).get('name', 'stranger')} ({answer.action})"


@server.tool(description="Asks the client's LLM (a sampling input request, key capital_question)")
async def test_input_required_result_sampling(context: Context) -> str:
    result = await context.sample("What is the capital of France?", max_tokens=100, input_key="capital_question")
    return f"LLM response: {getattr(result.content, 'text', '')}"


@server.tool(description="Asks for the client's roots (a roots/list input request, key client_roots)")
async def test_input_required_result_list_roots(context: Context) -> str:
    return _roots_text(await context.list_roots(input_key="client_roots"))


@server.tool(description="An input round whose requestState the server verifies on the retry")
async def test_input_required_result_request_state(context: Context) -> str:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = await context.elicit("Please confirm", schema, input_key="confirm")
    # The runtime verified the signed requestState before this line could run with the answer.
    return f"state-ok: confirmed={(answer.content or {}).get('ok')}"


@server.tool(description="Three input requests in one round: elicitation, sampling and roots")
async def test_input_required_result_multiple_inputs(context: Context) -> str:
    name, greeting, roots = await context.gather(
        context.elicit("What is your name?", NAME, input_key="user_name"),
        context.sample("Generate a greeting", max_tokens=50, input_key="greeting"),
        context.list_roots(input_key="client_roots"),
    )
    text = getattr(greeting.content, "text", "")
    return f"{text} {(name.content or {}).get('name')}; {_roots_text(roots)}"


@server.tool(description="Two input rounds, one after the other")
async def test_input_required_result_multi_round(context: Context) -> str:
    name = await context.elicit("Step 1: What is your name?", NAME, input_key="step1")
    color_schema = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
    color = await context.elicit("Step 2: What is your favorite color?", color_schema, input_key="step2")
    return f"{(name.content or {}).get('name')} likes {(color.content or {}).get('color')}"


@server.tool(description="An input round with a signed requestState (the suite tampers with it)")
async def test_input_required_result_tampered_state(context: Context) -> str:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = await context.elicit("Please confirm", schema, input_key="confirm")
    return f"confirmed: {(answer.content or {}).get('ok')}"


@server.tool(description="Asks only for what the client declared it can answer")
async def test_input_required_result_capabilities(context: Context) -> str:
    calls = []
    if "elicitation" in context.client_capabilities:
        calls.append(context.elicit("What is your name?", NAME, input_key="user_name"))
    if "sampling" in context.client_capabilities:
        calls.append(context.sample("Say hello", max_tokens=20, input_key="greeting"))
    if "roots" in context.client_capabilities:
        calls.append(context.list_roots(input_key="client_roots"))
    answers = await context.gather(*calls)
    return f"{len(answers)} answers"


@server.prompt(description="A prompt that asks the user for context first")
async def test_input_required_result_prompt(context: Context) -> str:
    schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    answer = await context.elicit("What context should the prompt use?", schema, input_key="user_context")
    return f"Use this context: {(answer.content or {}).get('context')}"


@server.tool(description="Needs sampling: without the client's sampling capability the request fails (-32021)")
async def test_missing_capability(context: Context) -> str:
    result = await context.sample("Hello?", max_tokens=10)
    return f"LLM response: {getattr(result.content, 'text', '')}"


@server.tool(description="Elicits during the call (an input request, never a request on the response stream)")
async def test_streaming_elicitation(context: Context) -> str:
    answer = await context.elicit("What is your name?", NAME, input_key="user_name")
    return f"Hello, {(answer.content or {}).get('name')}"


@server.tool(description="Logs at info; a request without io.modelcontextprotocol/logLevel gets no log messages")
async def test_logging_tool(context: Context) -> str:
    await context.info("Logging tool called")
    return "logged"


@server.tool(description="Runs in a region given as an argument and mirrored in the Mcp-Param-Region header")
async def test_param_header(
    region: str = Field(description="Where to run", json_schema_extra={"x-mcp-header": "Region"}),
) -> str:
    return f"ran in {region}"


@server.tool(description="Changes the tool list (notifications/tools/list_changed to listening clients)")
async def test_trigger_tool_change() -> str:
    @server.tool(name="dynamic_tool", description="Added by test_trigger_tool_change", replace=True)
    async def dynamic_tool() -> str:
        return "dynamic"

    await server.notify_tools_changed()
    return "tools changed"


@server.tool(description="Changes the prompt list (notifications/prompts/list_changed to listening clients)")
async def test_trigger_prompt_change() -> str:
    @server.prompt(name="dynamic_prompt", description="Added by test_trigger_prompt_change", replace=True)
    async def dynamic_prompt() -> str:
        return "dynamic"

    await server.notify_prompts_changed()
    return "prompts changed"


# -- resources -----------------------------------------------------------------------------------------------------


@server.resource(
    "test://static-text", name="static-text", description="A static text resource for testing", mime_type="text/plain"
)
async def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary",
    name="static-binary",
    description="A static binary resource (image) for testing",
    mime_type="image/png",
)
async def static_binary() -> dict[str, str]:
    return {"blob": PNG}


@server.resource(
    "test://template/{id}/data",
    name="template",
    description="A resource template with parameter substitution",
    mime_type="application/json",
)
async def template(id: str) -> dict[str, str]:
    data = {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}
    return {"text": json.dumps(data, separators=(",", ":"))}


@server.resource(
    "test://watched-resource",
    name="watched-resource",
    description="A resource that can be subscribed to",
    mime_type="text/plain",
)
async def watched_resource() -> str:
    return "Watched resource content"


subscriptions: set[str] = set()


@server.on_subscribe
async def subscribe(uri: str) -> None:
    subscriptions.add(uri)


@server.on_unsubscribe
async def unsubscribe(uri: str) -> None:
    subscriptions.discard(uri)


# -- tasks (the 2026-07-28 extension io.modelcontextprotocol/tasks: the tasks-* scenarios' fixtures) ----------------
# "Task-supporting" tools are task="optional" (a task when the request declares the extension, a plain call
# otherwise), except those the suite calls without the extension expecting -32021 (failing_job) or describes as
# taskSupport=required (test_tool_with_task).


@server.tool(description="Sync-only: greets by name")
async def greet(name: str) -> str:
    return f"Hello, {name}!"


@server.tool(task="optional", description="Sleeps `seconds` seconds, then answers (cancellable while it sleeps)")
async def slow_compute(seconds: float, label: str = "", *, context: Context) -> str:
    await context.task_status(f"computing {label}".strip())
    await anyio.sleep(seconds)
    return f"computed {label} in {seconds}s"


@server.tool(task="required", description="Fails with a tool error (isError) after about a second")
async def failing_job() -> str:
    await anyio.sleep(1)
    raise ToolError("the job failed")


@server.tool(task="optional", description="Fails with a JSON-RPC error: the task ends failed")
async def protocol_error_job() -> str:
    raise ProtocolError(-32603, "Internal error: the job crashed")


@server.tool(task="optional", description="Asks to confirm the deletion (elicitation), then answers")
async def confirm_delete(filename: str, context: Context) -> str:
    schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}
    answer = await context.elicit(f"Delete {filename}?", schema)
    confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
    return f"{filename} {'deleted' if confirmed else 'kept'}"


@server.tool(task="optional", description="Asks two questions at once (two elicitations pending together)")
async def multi_input(context: Context) -> str:
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}}
    first, second = await context.gather(context.elicit("First name?", schema), context.elicit("Second?", schema))
    names = [str((answer.content or {}).get("name")) for answer in (first, second)]
    return " and ".join(names)


@server.tool(
    task="required",
    deferred_task=True,
    description="Asks the user's name by multi round-trip (key user_name), then runs as a task",
)
async def test_tool_with_task(context: Context) -> str:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answer = await context.elicit("What is your name?", schema, input_key="user_name")
    name = (answer.content or {}).get("name", "stranger")
    await context.start_task(f"greeting {name}")
    await anyio.sleep(0.1)
    return f"Hello, {name}!"


# -- prompts and completion ----------------------------------------------------------------------------------------


@server.prompt(description="A simple prompt without arguments")
async def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@server.prompt(description="A prompt with required arguments")
async def test_prompt_with_arguments(
    arg1: str = Field(description="First test argument"),
    arg2: str = Field(description="Second test argument"),
) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(description="A prompt that includes an embedded resource")
async def test_prompt_with_embedded_resource(
    resourceUri: str = Field(description="URI of the resource to embed"),
) -> list[Any]:
    resource = {"uri": resourceUri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}
    return [{"type": "resource", "resource": resource}, "Please process the embedded resource above."]


@server.prompt(description="A prompt that includes image content")
async def test_prompt_with_image() -> list[Any]:
    return [{"type": "image", "data": PNG, "mimeType": "image/png"}, "Please analyze the image above."]


@server.completion(prompt="test_prompt_with_arguments", argument="arg1")
async def complete_arg1(value: str) -> list[str]:
    return [word for word in ("paris", "park", "party", "test", "testing") if word.startswith(value)]


# -- skills (SEP-2640: the sep-2640-skills-* scenarios) ---------------------------------------------------------------

# Every file of tests/conformance/skills/<name>/ is a skill://<name>/<path> resource; in 2026-07-28 the skills extension
# is declared (with directoryRead) and skills/list, skills/get and resources/directory/read are served.
server.add_skills(Path(__file__).parent / "skills")

# -- MCP Apps (io.modelcontextprotocol/ui): no scenario checks it yet; declared so that every scenario also runs
# against a server that serves a UI resource and a tool bound to it (lists, reads and the capabilities they change).
add_ui_resource(
    server,
    "ui://conformance/app.html",
    "<!doctype html><html><body><p>mcpgen conformance app</p></body></html>",
    csp=Csp(connect_domains=["https://api.example.com"]),
)


@app_tool(server, "ui://conformance/app.html", visibility=["model", "app"])
def test_app_tool(context: Context) -> str:
    """A tool whose results a host renders in the conformance app."""
    return "shown in the app" if client_supports_apps(context) else "text only"


# -- running -------------------------------------------------------------------------------------------------------


async def main(port: int) -> None:
    async with anyio.create_task_group() as tg:
        base = await tg.start(server.serve_http, "127.0.0.1", port)
        print(f"{base}/mcp", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    try:
        asyncio.run(main(parser.parse_args().port))
    except KeyboardInterrupt:
        pass

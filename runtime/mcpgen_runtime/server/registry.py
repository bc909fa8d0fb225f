"""What a server serves: its name and instructions, the registered tools, resources, resource templates, prompts,
completions and subscribe hooks, and the capabilities they imply.

Where it sits: in the ``server`` layer, above ``authoring`` (the decorators build its definitions) and below
``handlers`` and ``connection`` (which answer from a ``Registry`` without knowing about the ``Server`` that owns the
connections) and ``server`` (``Server`` is a ``Registry`` that also serves). Nothing here knows about connections,
sessions or protocol versions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .authoring import (
    AnyFunction,
    CompletionDef,
    PromptDef,
    ResourceDef,
    ResourceTemplateDef,
    ToolDef,
    description_of,
)

__all__ = ["Registry"]

F = TypeVar("F", bound=AnyFunction)


class Registry:
    """The definitions of an MCP server, filled by the decorators; ``Server`` adds serving them."""

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        logging: bool = True,
    ) -> None:
        """``logging``: declare the logging capability (``Context.log`` sends nothing without it)."""
        self.name, self.version, self.title, self.instructions = name, version, title, instructions
        self.logging = logging
        self.tools: dict[str, ToolDef] = {}
        self.resources: dict[str, ResourceDef] = {}
        self.templates: dict[str, ResourceTemplateDef] = {}
        self.prompts: dict[str, PromptDef] = {}
        self.completions: dict[tuple[str, str, str], CompletionDef] = {}
        self.subscribe_hook: AnyFunction | None = None
        self.unsubscribe_hook: AnyFunction | None = None

    # -- registration ---------------------------------------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> Callable[[F], F]:
        """Register a tool: name from the function, description from its docstring, ``inputSchema`` from its
        parameters, ``outputSchema`` from an object-typed return annotation (unless ``structured_output=False``).
        A tool that returns a generated ``CallToolResult``, or is annotated ``-> CallToolResult`` and returns a dict,
        answers with that whole result, validated against the negotiated version (see ``authoring``)."""

        def register(fn: F) -> F:
            tool = ToolDef.build(
                fn,
                name,
                title=title,
                description=description,
                annotations=annotations,
                structured_output=structured_output,
            )
            self.tools[tool.name] = tool
            return fn

        return register

    def remove_tool(self, name: str) -> None:
        del self.tools[name]

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> Callable[[F], F]:
        """Register a resource; a URI with ``{variables}`` registers a resource template whose variables are bound
        to the function's parameters of the same names."""

        def register(fn: F) -> F:
            info: dict[str, Any] = {
                "name": name or fn.__name__,
                "title": title,
                "description": description_of(fn, description),
                "mime_type": mime_type,
            }
            if "{" in uri:
                self.templates[uri] = ResourceTemplateDef.build(fn, uri, **info)
            else:
                self.resources[uri] = ResourceDef.build(fn, uri, **info)
            return fn

        return register

    def prompt(
        self, name: str | None = None, *, title: str | None = None, description: str | None = None
    ) -> Callable[[F], F]:
        """Register a prompt; its parameters are the prompt's arguments (required unless they have a default)."""

        def register(fn: F) -> F:
            prompt = PromptDef.build(fn, name, title, description)
            self.prompts[prompt.name] = prompt
            return fn

        return register

    def completion(self, *, argument: str, prompt: str | None = None, resource: str | None = None) -> Callable[[F], F]:
        """Register the completion of ``argument`` of prompt ``prompt``, or of variable ``argument`` of the resource
        template ``resource``. The function takes ``(value)`` or ``(value, other_arguments)`` and returns values."""
        if (prompt is None) == (resource is None):
            raise TypeError("completion() needs exactly one of prompt= or resource=")
        key = ("ref/prompt", prompt, argument) if prompt is not None else ("ref/resource", resource or "", argument)

        def register(fn: F) -> F:
            self.completions[key] = CompletionDef.build(fn)
            return fn

        return register

    def on_subscribe(self, fn: F) -> F:
        """Called with the URI of each ``resources/subscribe``; registering it declares ``resources.subscribe``."""
        self.subscribe_hook = fn
        return fn

    def on_unsubscribe(self, fn: F) -> F:
        self.unsubscribe_hook = fn
        return fn

    # -- capabilities ---------------------------------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """The capabilities derived from what is registered (version-neutral; fitted per version on initialize)."""
        capabilities: dict[str, Any] = {}
        if self.tools:
            capabilities["tools"] = {"listChanged": True}
        if self.resources or self.templates:
            subscribe = self.subscribe_hook is not None or self.unsubscribe_hook is not None
            capabilities["resources"] = {"listChanged": True, **({"subscribe": True} if subscribe else {})}
        if self.prompts:
            capabilities["prompts"] = {"listChanged": True}
        if self.logging:
            capabilities["logging"] = {}
        if self.completions:
            capabilities["completions"] = {}
        return capabilities

"""What a server author writes against: the functions they register, what those functions receive, and what they
may raise. Nothing here dispatches a request or knows a transport (``dispatch`` builds on it, never the other way).

Modules, bottom up:
- ``errors``: the errors a registered function raises on purpose (``ToolError``, ``ResourceNotFoundError``,
  ``InvalidParamsError``, ``CapabilityError`` ...) and ``InputRequired``, which stops a modern handler that needs
  the client's input.
- ``caching``: ``CacheHint``, the 2026-07-28 cache hints of list and read results.
- ``lifespan``: ``LifespanRunner``, the state started once per run of a server (``Server(lifespan=...)``).
- ``elicitation``: typed elicitation (``Accepted`` / ``Declined`` / ``Cancelled``, a model's requested schema).
- ``context``: ``Context``, what a registered function can do for its request, over the ``ConnectionView`` of
  either era.
- ``middleware``: ``IncomingRequest`` and ``run_chain``, the functions wrapped around every request.
- ``signatures``: a function's signature -> its JSON schemas and the call that binds validated arguments.
- ``definitions``: resource, resource template, prompt and completion definitions built from functions, and what
  every kind of definition shares; ``tool_definition``: ``ToolDef``, a tool built from a function.
- ``registry``: ``Registry``, what a server serves, and the decorators that fill it.
- ``apps``: MCP Apps (``io.modelcontextprotocol/ui``): ``ui://`` UI resources and tools bound to them
  (``add_ui_resource``, ``app_tool``, ``client_supports_apps``), over a ``Registry``.
"""

"""The typed MCP server: ``Server``, a ``Registry`` of tools, resources, prompts and completions that serves them.

Where it sits: the top of the ``server`` layer. ``Server`` adds to ``registry.Registry`` (what is served, filled
by the decorators) the serving: one ``connection.ServerConnection`` per client (``serve_stream``), change
notifications to the live connections, and the transports to run on (``transports.stdio.ndjson``; the streamable HTTP
server is imported only when it is used, so that a stdio server does not import starlette and uvicorn).

It also holds what surrounds the handlers: the lifespan (``lifespan``: shared state, started once per run; a run
is ``serve_stdio``, ``serve_http``, ``serve_stream`` alone, or an explicit ``async with server.running()`` that
those then join) and the middleware (``middleware``) each connection runs around its requests. A run also runs the
task engine (``tasks.engine.TaskEngine``, ``Server.task_engine``) in which the calls of task tools
(``@server.tool(task=...)``) run in the background, their state in ``task_store`` (``Server(task_store=...)``).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Awaitable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio

from ..jsonrpc.eager import Started, first_step
from ..jsonrpc.inflight import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_REQUESTS_IN_FLIGHT
from ..jsonrpc.streams import MessageStream
from ..task_store import InMemoryTaskStore, TaskStore
from ..transports.stdio.ndjson import DEFAULT_MAX_FRAME_BYTES, stdio_server_stream
from .authoring.caching import CacheHint
from .authoring.lifespan import Lifespan, LifespanRunner, StateT
from .authoring.middleware import Middleware
from .authoring.registry import Registry
from .dispatch.connection import ServerConnection
from .dispatch.direct_call import answer_direct, direct_plan
from .dispatch.generated import declared
from .dispatch.modern import ExchangeIO, ModernServing, answer_http
from .dispatch.request_state import DEFAULT_MAX_REQUEST_STATE_BYTES, DEFAULT_REQUEST_STATE_TTL, RequestStateCodec
from .dispatch.subscriptions import Audience, NotificationRelay
from .hosting import options as run_options
from .hosting.options import DEFAULT_LOG_LEVEL, check_http_options
from .tasks.engine import DEFAULT_MAX_RUNNING_TASKS, TaskEngine

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..jsonrpc.envelopes import Request
    from ..scaleout.settings import ScaleOutSettings
    from ..scaleout.worker import ScaleOutWorker
    from .hosting.asgi import MCPApp, MountOptions
    from .hosting.options import HTTPServingOptions
    from .skills import SkillCatalog, SkillLimits

__all__ = ["Server", "start_scaled_worker"]


class Server(Registry, Generic[StateT]):
    """An MCP server: register functions with the decorators, then ``run_stdio()`` or ``await serve_stream(s)``.

    Generic in its lifespan state: ``Server("x", lifespan=f)`` is a ``Server[T]`` when ``f`` returns an
    ``AsyncContextManager[T]``, and handlers annotated ``Context[T]`` see ``context.lifespan_state`` as a ``T``."""

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        logging: bool = True,
        lifespan: Lifespan[StateT] | None = None,
        cache_hints: Mapping[str, CacheHint] | None = None,
        request_state_key: bytes | str | None = None,
        request_state_ttl: float = DEFAULT_REQUEST_STATE_TTL,
        max_request_state_bytes: int = DEFAULT_MAX_REQUEST_STATE_BYTES,
        task_store: TaskStore | None = None,
        max_running_tasks: int = DEFAULT_MAX_RUNNING_TASKS,
    ) -> None:
        """``logging``: declare the logging capability (``Context.log`` sends nothing without it).
        ``cache_hints``: method -> ``CacheHint`` (``ttl_ms``, ``scope``) for the results of ``server/discover``,
        ``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list`` and ``resources/read``
        (MCP 2026-07-28; default TTL 0, "public" except ``resources/read``, "private"; a resource's own
        ``cache=`` wins for its reads).
        ``request_state_key``: the secret that signs the modern era's ``requestState`` (HMAC-SHA256, at least 16
        bytes; see ``request_state``). Default None: a random key per ``Server``, so per process (the workers of a
        scaled-out server share one: ``ScaleOutSettings.request_state_key``, else this one, else a random key kept in
        Redis); give every worker the same key when a client's retry may reach another process. ``request_state_ttl``: seconds a state stays
        valid (default 600); ``max_request_state_bytes``: the longest state minted or accepted (default 64 KiB).
        ``lifespan``: ``lifespan(server)`` returns an async context manager (``@asynccontextmanager``), entered once
        per run of the server before any client is served and exited when the run ends, however it ends; what it
        yields is ``Context.lifespan_state``. If it raises on entry, the server does not start (``LifespanError``).
        ``task_store``: where the tasks of tools registered ``task="optional"/"required"`` are kept (default: an
        ``InMemoryTaskStore``, this process's memory; a scaled-out server uses Redis's). ``max_running_tasks``
        (default 32): task bodies running at once; later ones wait, working, for a slot (``server.tasks.engine``).
        """
        super().__init__(
            name, version, title=title, instructions=instructions, logging=logging, cache_hints=cache_hints
        )
        self.request_states = RequestStateCodec(
            request_state_key, ttl=request_state_ttl, max_bytes=max_request_state_bytes
        )
        self.request_state_key_given = request_state_key is not None  # (else a scaled-out worker shares one)
        # Who change notifications reach: the live connections, and the modern HTTP listen requests.
        self.connections: set[Audience] = set()
        # Set by scaleout.broadcast: change notifications raised here reach the other workers' listen streams.
        self.relay: NotificationRelay | None = None
        self.middleware_stack: list[Middleware] = []  # wrapped around every request, the first outermost
        # Tasks run in the engine's task group, which lives as long as the run (``running``).
        self.task_engine = TaskEngine(task_store or InMemoryTaskStore(), max_running=max_running_tasks)
        enter = functools.partial(lifespan, self) if lifespan is not None else None
        self._lifespan: LifespanRunner[StateT] = LifespanRunner(name, enter)
        self._modern: ModernServing | None = None  # see _modern_serving
        self.skills: SkillCatalog | None = None  # the skills served (add_skills), made by the first call

    # -- lifespan and middleware ----------------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[StateT]:
        """One run of the server: enters the lifespan (or joins the run that has it) and yields its state. The
        ``serve_*`` methods do this themselves; use it to share one lifespan between runs they would otherwise each
        start (several ``serve_stream`` calls, an HTTP app mounted in another ASGI app's lifespan, tests)."""
        # The task engine around the lifespan, entered by the run that owns the lifespan (the first) and joined by
        # the others: its task group is left in the task that entered it, after the last joined run ended. (Not
        # inside the lifespan's enter: that is exited under cancel scopes of its own, which a task group may not
        # straddle.) Tasks still running then are cancelled and marked failed.
        async with self.task_engine.running(), self._lifespan.run() as state:
            yield state

    @property
    def lifespan_state(self) -> StateT:
        """What the lifespan yielded; RuntimeError when the server is not running."""
        return self._lifespan.state

    def middleware(self, fn: Middleware) -> Middleware:
        """Register ``fn`` (``async def fn(request: IncomingRequest, call_next: CallNext) -> Any``) to run around
        every request, after those registered before it (see ``middleware`` for what it sees and may return)."""
        self.middleware_stack.append(fn)
        return fn

    # -- skills (SEP-2640) ------------------------------------------------------------------------------------------

    def add_skills(
        self,
        root: str | os.PathLike[str],
        *,
        replace: bool = False,
        directory_read: bool = True,
        page_size: int | None = None,
        cache: CacheHint | None = None,
        limits: SkillLimits | None = None,
    ) -> list[str]:
        """Serve the agent skills under ``root`` (a skill directory with a ``SKILL.md``, or a directory of them) with
        the skills extension (``io.modelcontextprotocol/skills``): each file a ``skill://<name>/<path>`` resource,
        and in 2026-07-28 ``skills/list``, ``skills/get`` and (``directory_read``) ``resources/directory/read``.
        Returns the names of the skills loaded. Needs PyYAML: ``pip install 'mcpgen-runtime[skills]'``.

        Loaded once, now: every file is read, hashed and checked (``server.skills.directory``: path safety, the
        SEP's limits, frontmatter rules; ``SkillError`` names what breaks one) and served from memory, so a change
        on disk is served only when loaded again: ``add_skills(root, replace=True)`` (a skill of the same name, or a
        resource of the same URI, is otherwise a ``ValueError``), then ``await notify_resources_changed()``;
        ``remove_skill(name)`` stops serving one. ``page_size`` (default 50) and ``cache`` (default TTL 0,
        "public"): the pages and cache hints of the skills results and the files' reads; with ``directory_read``
        they apply to every skill served, from this call on. ``limits``: ``SkillLimits``."""
        from .skills import DEFAULT_PAGE_SIZE, DEFAULT_SKILLS_CACHE, SkillCatalog, SkillLimits, load_skills

        bounds = limits if limits is not None else SkillLimits()
        loaded = load_skills(root, bounds)
        catalog = self.skills if self.skills is not None else SkillCatalog(self)
        catalog.add(
            loaded,
            limits=bounds,
            replace=replace,
            directory_read=directory_read,
            page_size=DEFAULT_PAGE_SIZE if page_size is None else page_size,
            cache=DEFAULT_SKILLS_CACHE if cache is None else cache,
        )
        self.skills = catalog
        return [skill.name for skill in loaded]

    def remove_skill(self, name: str) -> None:
        """Stop serving the skill ``name`` and its files (``KeyError`` when it is not served)."""
        if self.skills is None:
            raise KeyError(f"no skill named {name!r} is served")
        self.skills.remove(name)

    # -- change notifications -------------------------------------------------------------------------------------

    async def notify_tools_changed(self) -> None:
        await self._broadcast("tools.listChanged", "notifications/tools/list_changed")

    async def notify_resources_changed(self) -> None:
        await self._broadcast("resources.listChanged", "notifications/resources/list_changed")

    async def notify_prompts_changed(self) -> None:
        await self._broadcast("prompts.listChanged", "notifications/prompts/list_changed")

    async def notify_resource_updated(self, uri: str) -> None:
        """``notifications/resources/updated`` to the clients subscribed to ``uri`` (``resources/subscribe``, or a
        ``subscriptions/listen`` whose ``resourceSubscriptions`` name it)."""
        for connection in list(self.connections):
            await connection.notify_resource_updated(uri)
        if self.relay is not None:
            self.relay.publish("resources.subscribe", "notifications/resources/updated", {"uri": uri})

    def end_subscriptions(self) -> None:
        """End every open ``subscriptions/listen`` request gracefully (answered with its result), as at shutdown;
        later ones end at once too, on the connections that exist now."""
        for connection in list(self.connections):
            connection.listeners.close()

    async def _broadcast(self, capability: str, method: str) -> None:
        for connection in list(self.connections):
            await connection.notify(capability, method, None)
        if self.relay is not None:
            self.relay.publish(capability, method, None)

    # -- running --------------------------------------------------------------------------------------------------

    async def serve_stream(
        self,
        stream: MessageStream,
        *,
        max_requests_in_flight: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    ) -> None:
        """Serve one client over ``stream`` until it closes its side.

        ``max_requests_in_flight`` (default 100): requests handled at once; as many more may wait, read but not
        started, and beyond that the server stops reading until one finishes (over stdio the client's writes then
        block). ``max_batch_size`` (default 100): messages in one JSON-RPC batch (2025-03-26); longer ones are
        refused whole with -32600. The connection belongs to the run in progress (``running``), if any; else it is
        a run of its own, and the lifespan is entered for it."""
        async with self.running() as state:
            connection = ServerConnection(
                self,
                stream,
                max_requests_in_flight=max_requests_in_flight,
                max_batch_size=max_batch_size,
                middleware=self.middleware_stack,
                lifespan_state=state,
                request_states=self.request_states,
                task_engine=self.task_engine,
            )
            self.connections.add(connection)
            try:
                await connection.run()
            finally:
                self.connections.discard(connection)

    async def serve_modern(self, request: Request, call: ExchangeIO) -> tuple[dict[str, Any], bytes]:
        """Serve one modern request over streamable HTTP, as one call (the transport's ``ModernHandler``): in the
        caller's task, inside this server's run, through the middleware to the handler table; the JSON-RPC response
        as (message, frame). No ``Session`` or ``ServerConnection`` is made for it (``dispatch.modern``)."""
        lifespan = self._lifespan
        if lifespan.join_running():
            # The usual case (serve_http, a mounted app): the run is in progress; joined without an async context
            # manager, which per request cost a generator, its frames and a few awaits.
            try:
                serving = self._modern_serving(lifespan.state)
                plan = direct_plan(
                    serving, request.method, request.params
                )  # a plain tools/call: answered in one function (direct_call)
                if plan is not None:
                    return await answer_direct(plan, request)
                return await answer_http(serving, request, call, self.connections)
            finally:
                lifespan.leave()
        async with self.running() as state:
            return await answer_http(self._modern_serving(state), request, call, self.connections)

    def start_modern(self, request: Request, task: asyncio.Task[Any]) -> tuple[dict[str, Any], bytes] | Started | None:
        """The transport's ``ModernEager`` (beside ``serve_modern``): a request of the direct lane (``direct_call``)
        started at once in ``task``, its HTTP request's, inside this server's run: its response as (message, frame)
        when it finished without suspending; a ``Started`` when it suspended (it leaves the run when it ends); None,
        with nothing done, for any other request (``serve_modern`` serves it) or when the server is not running."""
        lifespan = self._lifespan
        if not lifespan.join_running():
            return None
        try:
            plan = direct_plan(self._modern_serving(lifespan.state), request.method, request.params)
        except BaseException:
            lifespan.leave()
            raise
        if plan is None:
            lifespan.leave()
            return None
        # The run is left when the request ends: at once if its first step finished it, else when it finishes.
        outcome: tuple[dict[str, Any], bytes] | Started = first_step(
            _in_run(lifespan, answer_direct(plan, request)), task
        )[1]
        return outcome

    def _modern_serving(self, state: Any) -> ModernServing:
        """The ``ModernServing`` of the run in progress: one per run (its lifespan state) and ``requestState``
        codec (a scaled-out worker replaces the codec once it starts), so that what it caches per version is
        derived once, not per request."""
        serving = self._modern
        if (
            serving is None
            or serving.lifespan_state is not state
            or serving.request_states is not self.request_states
            or serving.middleware is not self.middleware_stack  # (appended to in place: seen; replaced: a new one)
        ):
            serving = self._modern = ModernServing(self, self.middleware_stack, state, self.request_states)
        return serving

    async def serve_stdio(
        self,
        *,
        max_requests_in_flight: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        """Serve one client over this process's stdin/stdout. The limits: see ``serve_stream``;
        ``max_frame_bytes`` (default 256 MiB): the longest line read, longer ones are answered -32600. The lifespan
        is entered before stdin is read."""
        async with self.running(), stdio_server_stream(max_frame_bytes=max_frame_bytes) as stream:
            await self.serve_stream(
                stream, max_requests_in_flight=max_requests_in_flight, max_batch_size=max_batch_size
            )

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        task_status: Any = anyio.TASK_STATUS_IGNORED,
        scale_out: ScaleOutSettings | None = None,
        **options: Unpack[HTTPServingOptions],
    ) -> None:
        """Serve over streamable HTTP at http://host:port/mcp until cancelled; each HTTP session gets its own
        connection, each modern request is one call of ``serve_modern``. Binds to 127.0.0.1 unless told otherwise.
        ``options`` (limits, timeouts, resumability): see ``transports.http.server.app.StreamableHTTPApp``; its
        per-session in-flight and batch limits also bound each connection's own session; ``shutdown_timeout`` and
        ``reuse_port``: see ``transports.http.server.app.run_http``. A misspelt option is a TypeError naming it.
        ``auth`` (None): a ``server.auth.BearerAuth`` that protects the endpoint with bearer tokens (bound to this
        server's tool scopes), or any ``transports.http.server.auth.HTTPAuthenticator``.
        ``scale_out`` (None): a ``scaleout.ScaleOutSettings`` with a Redis URL makes this process one worker of a
        scaled-out server (``scaleout.worker.ScaleOut``: sessions, SSE events and answers shared through Redis; its
        ``request_state_key``, or one the workers share in Redis, replaces this server's); ``reuse_port``: other
        processes listen on the same port (``run_http(workers=N)`` starts them). Without redis-py (the runtime's
        ``redis`` extra) a shared ``scale_out`` raises ``scaleout.settings.SettingsError`` naming the extra."""
        from ..transports.http.server.app import AppFactory, run_http  # only HTTP servers need starlette, uvicorn

        check_http_options(options, "serve_http")
        app_factory: AppFactory | None = None
        if scale_out is not None and scale_out.shared:
            from ..scaleout.settings import require_redis_client

            require_redis_client()  # a SettingsError naming the extra, rather than redis-py's ModuleNotFoundError
            from ..scaleout.worker import ScaleOut  # only scaled-out servers need redis

            settings = scale_out

            async def start_worker(worker: ScaleOutWorker) -> None:
                await start_scaled_worker(self, worker, settings)

            app_factory = ScaleOut(settings, on_started=[start_worker])
        serve_stream = functools.partial(
            self.serve_stream,
            max_requests_in_flight=options.get("max_requests_in_flight", DEFAULT_MAX_REQUESTS_IN_FLIGHT),
            max_batch_size=options.get("max_batch_size", DEFAULT_MAX_BATCH_SIZE),
        )
        bound = self.http_auth_options(dict(options))
        async with self.running():  # before the port is bound: one lifespan for every session, joined by each
            await run_http(
                serve_stream,
                host,
                port,
                app_factory=app_factory,
                modern_handler=self.serve_modern,
                modern_eager=self.start_modern,
                task_status=task_status,
                **bound,
            )

    def http_auth_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` with its ``auth`` bound to this server's tool scopes (``server.auth.bind_auth``)."""
        if options.get("auth") is None:
            return options
        from .auth import bind_auth  # only protected servers load it

        return {**options, "auth": bind_auth(options["auth"], self.tool_scopes)}

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        log_level: str | int | None = DEFAULT_LOG_LEVEL,
        workers: int | None = None,
        redis: str | None = None,
        scale_out: ScaleOutSettings | None = None,
        **options: Unpack[HTTPServingOptions],
    ) -> None:
        """Blocking form of ``serve_http``: configures logging (stderr, ``log_level``), prints the URL it listens on,
        and lets the allowed Host/Origin list follow ``host`` (see ``run_options.http_options``).

        ``workers`` (1) processes serve the port, sharing sessions through the Redis at ``redis`` (a URL; needed
        for more than one worker); both default to the environment (``MCPGEN_WORKERS``, ``MCPGEN_REDIS_URL``, and
        the other settings of ``scaleout.ScaleOutSettings``), unless ``scale_out`` gives the settings. Bad settings,
        an unreachable Redis or redis-py not installed (``pip install 'mcpgen-runtime[redis]'``): one error line on
        stderr and exit code 2."""
        run_options.run_http(
            self, host, port, log_level=log_level, workers=workers, redis=redis, scale_out=scale_out, **options
        )

    def run_stdio(
        self,
        *,
        log_level: str | int | None = DEFAULT_LOG_LEVEL,
        max_requests_in_flight: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        """Serve one client over this process's stdin/stdout (logs go to stderr at ``log_level``; stdout carries only
        protocol). The limits: see ``serve_stdio``."""
        run_options.run_stdio(
            self,
            log_level=log_level,
            max_requests_in_flight=max_requests_in_flight,
            max_batch_size=max_batch_size,
            max_frame_bytes=max_frame_bytes,
        )

    def asgi_app(self, **options: Unpack[MountOptions]) -> MCPApp:
        """This server as an ASGI app to route or mount in a Starlette/FastAPI app (see ``asgi.mount_mcp``, which
        also runs it inside the app's lifespan); ``options`` as for ``StreamableHTTPApp`` (not ``path``)."""
        from .hosting.asgi import MCPApp  # only mounted servers need starlette

        return MCPApp(self, **options)


_T = TypeVar("_T")


async def _in_run(lifespan: LifespanRunner[Any], answering: Awaitable[_T]) -> _T:
    """``answering``, inside the run ``lifespan`` was joined for (``join_running``), which it leaves when done."""
    try:
        return await answering
    finally:
        lifespan.leave()


async def start_scaled_worker(server: Server[Any], app: ScaleOutWorker, settings: ScaleOutSettings) -> None:
    """What a worker of a scaled-out server (``app``: a running ``scaleout.worker.ScaleOutWorker``) does
    before its first request: share the task store through Redis, take the requestState key every worker shares
    (``settings``', else the one given to ``Server``, else a random one kept in Redis), and relay
    change notifications to the other workers' listen streams and legacy sessions (``scaleout.broadcast``)."""
    from ..scaleout.broadcast import serve_broadcast

    # Tasks: every worker shares one store, so that any worker answers tasks/get, tasks/update and tasks/cancel, and
    # the leases name the worker running each task (a store the user gave is kept).
    engine = server.task_engine
    if isinstance(engine.store, InMemoryTaskStore):
        engine.store = app.task_store_like(engine.store)
    engine.worker_id = app.worker
    codec = server.request_states
    if settings.request_state_key is not None or not server.request_state_key_given:
        key = await app.shared_request_state_key()
        server.request_states = RequestStateCodec(key, ttl=codec.ttl, max_bytes=codec.max_bytes)
    fanout = app.session_fanout(lambda capability: declared(server.capabilities(), capability))
    await app.task_group.start(functools.partial(serve_broadcast, fanout=fanout), server, app.redis, settings)

"""Server-wide change notifications to the legacy-era sessions of every worker: ``RedisSessionFanout``, the Redis
``transports.http.server.storage.SessionFanout``.

Where it sits: in ``scaleout``, beside ``broadcast`` (which runs it from its publisher task) and under
``worker`` (which makes it, knowing the sessions this worker holds through its ``directory``). ``Server.notify_tools_changed`` (prompts,
resources list changed) and ``notify_resource_updated(uri)`` reach the sessions this worker holds a copy of through
their connections, as with one worker (a session's own tool call gets it on its POST stream, the others on their
GET streams, all stored in Redis). Every other live session, whichever worker serves it, gets it appended to its GET
stream in Redis (``KeyLayout.events`` of ``{key}.0``), which is what every worker's GET streams follow: delivered
and resumable like any other event.

Exactly once: the sessions the raising worker delivered to itself are left out (``prepare``, at the moment the
notification is raised: list changes, every local copy; a resource update, the local copies subscribed to the
URI, as far as their last sync knows, see ``ScaleOutSettings.session_refresh``), and the appends and the
broadcast's PUBLISH run in one Lua script guarded by the notification's own id (``SET NX``): a retry after a lost
reply does not append twice. The live sessions are the index ``KeyLayout.sessions`` (a sorted set by expiry
deadline, bounded by ``max_sessions``); a resource update goes only to those whose subscription set holds the URI,
a list change only when the server declares its capability (``declared``, as a legacy-era connection checks).
The script runs in Redis for O(live sessions) steps (about 1 us each): a single Redis, not Redis Cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

import redis.asyncio

from ..transports.http.server.stores import FanoutJob, fanout_job
from .keys import STANDALONE_STREAM, KeyLayout, session_stream_key
from .settings import ScaleOutSettings

__all__ = ["FanoutJob", "RedisSessionFanout"]
# How long the id of a delivered notification is remembered (a retry of it within this long appends nothing).
_DEDUPE_TTL: Final = 300
# KEYS[1]: the notification's dedupe key; then pairs (subscription set, GET stream's events) of each session.
# ARGV: uri ('' for a list change), frame, MAXLEN, event TTL, channel ('' for none), payload, dedupe TTL.
_FANOUT: Final = """
if not redis.call('set', KEYS[1], '1', 'NX', 'EX', ARGV[7]) then return -1 end
local n = 0
for i = 2, #KEYS, 2 do
  local subs, events = redis.call('type', KEYS[i]).ok, redis.call('type', KEYS[i + 1]).ok
  if (subs ~= 'set' and subs ~= 'none') or (events ~= 'stream' and events ~= 'none') then
    -- junk of the wrong type under a session's key: that session is skipped, the others get the notification
  elseif ARGV[1] == '' or redis.call('sismember', KEYS[i], ARGV[1]) == 1 then
    redis.call('xadd', KEYS[i + 1], 'MAXLEN', ARGV[3], '*', 'm', ARGV[2])
    redis.call('expire', KEYS[i + 1], ARGV[4])
    n = n + 1
  end
end
if ARGV[5] ~= '' then redis.call('publish', ARGV[5], ARGV[6]) end
return n
"""


class RedisSessionFanout:
    """See the module docstring. ``local()``: the sessions this worker holds, each with the URIs it is subscribed to
    (``SharedDirectory.subscriptions``); ``declared(capability)``: whether the server declares it."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        keys: KeyLayout,
        settings: ScaleOutSettings,
        local: Callable[[], Mapping[str, Collection[str]]],
        declared: Callable[[str], bool],
    ) -> None:
        self._redis, self._keys, self._local, self._declared = client, keys, local, declared
        self._max_events, self._event_ttl = settings.max_events_per_stream, max(1, round(settings.event_ttl))
        self._script = client.register_script(_FANOUT)
        self.appended = 0  # events appended so far (for tests and a curious operator)

    def prepare(self, capability: str, method: str, params: Mapping[str, Any] | None) -> FanoutJob | None:
        """The job for a notification raised here (synchronous, at once: it notes which local copies had it), or
        None when no legacy-era session is to get it."""
        return fanout_job(capability, method, params, self._local(), self._declared)

    async def run(self, job: FanoutJob, channel: str = "", payload: bytes = b"") -> int:
        """Append ``job`` to every other live session's GET stream and PUBLISH ``payload`` on ``channel`` (if any),
        atomically; the number of sessions appended to (-1: this job ran already)."""
        live = await self._redis.zrangebyscore(self._keys.sessions, time.time(), "+inf")
        keys = [self._keys.prefix + ":fanout:" + job.notification_id]
        for raw in live:
            session_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            if session_id in job.skip:
                continue
            stream_id = f"{session_stream_key(session_id)}.{STANDALONE_STREAM}"
            keys += [self._keys.subscriptions(session_id), self._keys.events(stream_id)]
        arguments: list[bytes | str | int] = [
            job.uri or "",
            job.frame,
            self._max_events,
            self._event_ttl,
            channel,
            payload,
            _DEDUPE_TTL,
        ]
        appended = int(await self._script(keys=keys, args=arguments))
        self.appended += max(0, appended)
        return appended

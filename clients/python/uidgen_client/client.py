"""The thread-safe client."""

import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Union

from ._servers import Servers
from ._state import Options, SnowflakeState, TagState
from .errors import ClosedError, UidgenError


class _Core:
    """What Client and AsyncClient share: the servers and the in-memory state."""

    def __init__(self, servers, token, timeout, retry_after, min_count, max_count,
                 prefetch_share, target_seconds, snowflake_batch, validity, clock):
        clock = clock or time.monotonic
        self.options = Options(min_count, max_count, prefetch_share, target_seconds,
                               snowflake_batch, validity, clock)
        self.servers = Servers(servers, token, float(timeout), float(retry_after), clock)
        self.tags: Dict[str, TagState] = {}
        self.tags_lock = threading.Lock()
        self.snowflakes = SnowflakeState(self.servers, self.options)
        self.closed = False

    def tag(self, tag: str) -> TagState:
        state = self.tags.get(tag)  # dict reads are atomic: no lock on the fast path
        if state is not None:
            return state
        if not isinstance(tag, str) or not tag:
            raise ValueError("a tag is a non-empty string")
        with self.tags_lock:
            if self.closed:
                raise ClosedError()
            return self.tags.setdefault(tag, TagState(tag, self.servers, self.options))

    def close(self) -> List[UidgenError]:
        with self.tags_lock:
            if self.closed:
                return []
            self.closed = True
            tags = list(self.tags.values())
        self.snowflakes.close()
        failed: List[UidgenError] = []
        for state in tags:
            ranges = state.close()
            # A second range goes back only to the process that took the first back: a
            # tail given back after another process's range would sit below what that
            # process last handed out, which its data-loss check takes for a store that
            # went back.
            if len(ranges) == 2 and ranges[0][0].server is not ranges[1][0].server:
                ranges = ranges[:1]
            for rng, first in ranges:
                path = f"{state.path}/giveback?first={first}&receipt={rng.receipt}"
                try:
                    # To the process that handed the range out: only it can take it back.
                    self.servers.request_at(rng.server, "POST", path)
                except UidgenError as e:
                    # Not given back is only a gap in the tag's IDs.
                    failed.append(e)
        return failed


class Client:
    """Hands out IDs of a uidgen service from memory; safe to share between threads.

    `servers` is a list (or a comma-separated string) of `host:port` or `http(s)://`
    base URLs. `clock` (seconds, monotonic) is for tests."""

    def __init__(
        self,
        servers: Union[str, Sequence[str]],
        token: Optional[str] = None,
        timeout: float = 2.0,
        retry_after: float = 5.0,
        min_count: int = 1000,
        max_count: int = 100_000,
        prefetch_share: float = 0.5,
        target_seconds: float = 10,
        snowflake_batch: int = 1000,
        validity: float = 1.0,
        *,
        clock: Optional[Callable[[], float]] = None,
    ):
        self._core = _Core(servers, token, timeout, retry_after, min_count, max_count,
                           prefetch_share, target_seconds, snowflake_batch, validity, clock)

    def next_id(self, tag: str) -> int:
        """The next ID of segment tag `tag`."""
        state = self._core.tag(tag)
        while True:
            ids, pending = state.take(1)
            if ids:
                return ids[0]
            pending.result()  # raises the fetch's error

    def next_ids(self, tag: str, n: int) -> List[int]:
        """`n` IDs of `tag`, increasing."""
        if n < 0:
            raise ValueError("n must not be negative")
        state = self._core.tag(tag)
        out: List[int] = []
        while len(out) < n:
            ids, pending = state.take(n - len(out))
            out.extend(ids)
            if pending is not None:
                pending.result()
        return out

    def snowflake(self) -> int:
        """A snowflake ID, at most `validity` seconds older than its batch."""
        while True:
            found, pending = self._core.snowflakes.take()
            if found is not None:
                return found
            pending.result()

    @property
    def failovers(self) -> int:
        """Calls moved to another server so far."""
        return self._core.servers.failovers

    def close(self) -> List[UidgenError]:
        """Hands nothing out any more and gives the unused IDs back; returns the
        givebacks that failed (each only a gap in its tag's IDs)."""
        return self._core.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

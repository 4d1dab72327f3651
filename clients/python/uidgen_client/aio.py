"""The asyncio client: IDs in memory are handed out without awaiting; only a wait for a
fetch (run on a thread) awaits."""

import asyncio
from typing import Callable, List, Optional, Sequence, Union

from .client import _Core
from .errors import UidgenError


class AsyncClient:
    """Client's asyncio twin: the same options, `async` methods."""

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

    async def next_id(self, tag: str) -> int:
        state = self._core.tag(tag)
        while True:
            ids, pending = state.take(1)
            if ids:
                return ids[0]
            await asyncio.wrap_future(pending)

    async def next_ids(self, tag: str, n: int) -> List[int]:
        if n < 0:
            raise ValueError("n must not be negative")
        state = self._core.tag(tag)
        out: List[int] = []
        while len(out) < n:
            ids, pending = state.take(n - len(out))
            out.extend(ids)
            if pending is not None:
                await asyncio.wrap_future(pending)
        return out

    async def snowflake(self) -> int:
        while True:
            found, pending = self._core.snowflakes.take()
            if found is not None:
                return found
            await asyncio.wrap_future(pending)

    @property
    def failovers(self) -> int:
        return self._core.servers.failovers

    async def close(self) -> List[UidgenError]:
        # The givebacks are blocking HTTP calls: off the event loop.
        return await asyncio.get_running_loop().run_in_executor(None, self._core.close)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

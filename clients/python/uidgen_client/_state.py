"""What a client keeps in memory: per tag a current and a next range, and a snowflake
batch. Takes never touch the network: when nothing is left they return the Future of a
background fetch, which a thread waits on and an asyncio task awaits."""

import math
import threading
from concurrent.futures import Future
from typing import Callable, List, Optional, Tuple
from urllib.parse import quote

from ._servers import Server, Servers
from .errors import ClosedError, UidgenError


def _in_background(name: str, work: Callable[[], None]) -> None:
    # Daemon: a fetch in flight must not keep a finished program alive.
    threading.Thread(target=work, name=name, daemon=True).start()


def _number(body: dict, key: str) -> int:
    # The _str form first: it is exact whatever the JSON reader does with numbers.
    value = body.get(key + "_str", body.get(key))
    if isinstance(value, bool) or value is None:
        raise ValueError(f"no {key!r}")
    return int(value)


class Options:
    def __init__(self, min_count, max_count, prefetch_share, target_seconds,
                 snowflake_batch, validity, clock):
        if not 1 <= min_count <= max_count:
            raise ValueError("need 1 <= min_count <= max_count")
        if not 0 < prefetch_share <= 1:
            raise ValueError("prefetch_share must be in (0, 1]")
        if target_seconds <= 0 or validity <= 0:
            raise ValueError("target_seconds and validity must be positive")
        if snowflake_batch < 1:
            raise ValueError("snowflake_batch must be at least 1")
        self.min_count = int(min_count)
        self.max_count = int(max_count)
        self.prefetch_share = float(prefetch_share)
        self.target = float(target_seconds)
        self.snowflake_batch = int(snowflake_batch)
        self.validity = float(validity)
        self.clock = clock


class Range:
    __slots__ = ("first", "last", "cursor", "prefetch_at", "receipt", "server", "since")

    def __init__(self, first: int, last: int, receipt: str, server: Server, share: float):
        self.first = first
        self.last = last
        self.cursor = first
        # The take that reaches this ID asks for the next range.
        self.prefetch_at = first + max(1, math.ceil((last - first + 1) * share))
        self.receipt = receipt
        self.server = server
        self.since: Optional[float] = None


class TagState:
    def __init__(self, tag: str, servers: Servers, options: Options):
        self.tag = tag
        self.path = "/v1/segment/" + quote(tag, safe="")
        self.servers = servers
        self.options = options
        self.lock = threading.Lock()
        self.current: Optional[Range] = None
        self.next: Optional[Range] = None
        self.fetching: Optional[Future] = None
        self.count = options.min_count
        # The highest ID of any range received: a later one must start above it.
        self.high = -1
        self.closed = False

    def take(self, want: int) -> Tuple[List[int], Optional[Future]]:
        """Up to `want` IDs in order; when fewer, the fetch to wait for before asking
        again."""
        ids: List[int] = []
        with self.lock:
            while True:
                if self.closed:
                    raise ClosedError()
                cur = self.current
                if cur is not None and cur.cursor <= cur.last:
                    end = min(cur.last, cur.cursor + (want - len(ids)) - 1)
                    if end == cur.cursor:
                        ids.append(end)
                    else:
                        ids.extend(range(cur.cursor, end + 1))
                    cur.cursor = end + 1
                    if cur.cursor > cur.last:
                        self._adapt(cur)
                    if (self.next is None and self.fetching is None
                            and cur.cursor >= cur.prefetch_at):
                        self._fetch()
                    if len(ids) == want:
                        return ids, None
                elif self.next is not None:
                    # All of the current range went out before any of the next.
                    self.current, self.next = self.next, None
                    self.current.since = self.options.clock()
                else:
                    return ids, self.fetching or self._fetch()

    def _adapt(self, used_up: Range) -> None:
        # The size follows the rate: a range should last about target_seconds.
        lasted = self.options.clock() - (used_up.since or 0.0)
        if lasted < self.options.target:
            self.count = min(self.count * 2, self.options.max_count)
        elif lasted > 2 * self.options.target:
            self.count = max(self.count // 2, self.options.min_count)

    def _fetch(self) -> Future:
        """Starts the one background fetch (the lock is held by the caller)."""
        done: Future = Future()
        self.fetching = done
        count = self.count

        def work() -> None:
            try:
                server, body = self.servers.call("POST", f"{self.path}/range?count={count}")
                try:
                    rng = Range(_number(body, "first"), _number(body, "last"),
                                str(body.get("receipt", "")), server,
                                self.options.prefetch_share)
                except (ValueError, TypeError) as e:
                    raise UidgenError(f"{server.name} answered an unreadable range: {e}") from None
                if rng.first > rng.last or rng.first <= self.high:
                    raise UidgenError(
                        f"{server.name} answered range {rng.first}..={rng.last} of "
                        f"{self.tag!r}, not above {self.high}")
            except BaseException as e:  # noqa: B902 - handed to whoever waits
                with self.lock:
                    self.fetching = None
                done.set_exception(e)
                return
            with self.lock:
                self.high = rng.last
                self.next = rng
                self.fetching = None
            done.set_result(None)

        _in_background(f"uidgen-range-{self.tag}", work)
        return done

    def close(self) -> List[Tuple[Range, int]]:
        """Hands nothing out any more; returns what to give back, in order: the next
        range whole, then the current range's tail (range, first unused ID)."""
        with self.lock:
            self.closed = True
            pending = self.fetching
        if pending is not None:
            # A range on its way is the caller's too: wait for it so it is given back.
            try:
                pending.result()
            except BaseException:
                pass
        with self.lock:
            back = []
            if self.next is not None:
                back.append((self.next, self.next.first))
                self.next = None
            cur = self.current
            if cur is not None and cur.cursor <= cur.last:
                back.append((cur, cur.cursor))
                cur.cursor = cur.last + 1
            return back


class SnowflakeState:
    def __init__(self, servers: Servers, options: Options):
        self.servers = servers
        self.options = options
        self.lock = threading.Lock()
        self.ids: List[int] = []
        self.pos = 0
        self.arrived = 0.0
        self.fetching: Optional[Future] = None
        self.closed = False

    def take(self) -> Tuple[Optional[int], Optional[Future]]:
        with self.lock:
            if self.closed:
                raise ClosedError()
            if self.pos < len(self.ids):
                if self.options.clock() - self.arrived <= self.options.validity:
                    self.pos += 1
                    return self.ids[self.pos - 1], None
                # Too old: dropped, so the IDs handed out stay near time order.
                self.ids, self.pos = [], 0
            return None, self.fetching or self._fetch()

    def _fetch(self) -> Future:
        done: Future = Future()
        self.fetching = done
        path = f"/v1/snowflake?count={self.options.snowflake_batch}"

        def work() -> None:
            try:
                server, body = self.servers.call("GET", path)
                raw = body.get("ids_str", body.get("ids"))
                try:
                    ids = [int(x) for x in raw]
                except (TypeError, ValueError) as e:
                    raise UidgenError(f"{server.name} answered unreadable snowflake IDs: {e}") from None
                if not ids:
                    raise UidgenError(f"{server.name} answered no snowflake ID")
            except BaseException as e:  # noqa: B902 - handed to whoever waits
                with self.lock:
                    self.fetching = None
                done.set_exception(e)
                return
            with self.lock:
                self.ids, self.pos = ids, 0
                self.arrived = self.options.clock()
                self.fetching = None
            done.set_result(None)

        _in_background("uidgen-snowflake", work)
        return done

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.ids, self.pos = [], 0

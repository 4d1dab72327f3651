"""The server list: one HTTP call with failover, or one call pinned to a server."""

import http.client
import json
import random
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union
from urllib.parse import urlsplit

from .errors import RefusedError, UidgenError, UnavailableError

_FIRST_PAUSE = 0.05
_LONGEST_PAUSE = 1.0
_USER_AGENT = "uidgen-client-python/0.1"


class _Failed(Exception):
    """One server's failure that moves the call on (refused, timeout, 5xx, 408)."""


class Server:
    def __init__(self, spec: str):
        spec = spec.strip()
        if not spec:
            raise ValueError("an empty server address")
        self.name = spec
        url = spec if "://" in spec else "http://" + spec
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"server {spec!r} is not host:port or an http(s):// URL")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        # A base URL may sit under a path prefix (behind a proxy).
        self.prefix = parts.path.rstrip("/")
        # Monotonic time before which this server is skipped after a failure.
        self.failed_until = 0.0

    def __repr__(self) -> str:
        return self.name


class Servers:
    def __init__(
        self,
        servers: Union[str, Sequence[str]],
        token: Optional[str],
        timeout: float,
        retry_after: float,
        clock: Callable[[], float],
        sleep: Callable[[float], None] = time.sleep,
    ):
        if isinstance(servers, str):
            servers = servers.split(",")
        self.list: List[Server] = [Server(s) for s in servers if s.strip()]
        if not self.list:
            raise ValueError("no uidgen server given")
        self.token = token
        self.timeout = timeout
        self.retry_after = retry_after
        self.clock = clock
        self.sleep = sleep
        self.lock = threading.Lock()
        # Spread clients over the servers rather than all piling onto the first.
        self.current = random.randrange(len(self.list))
        self.failovers = 0

    def call(self, method: str, path: str) -> Tuple[Server, Dict[str, Any]]:
        """The answer of the first server that gives one, and that server."""
        with self.lock:
            start = self.current
        n = len(self.list)
        ring = [self.list[(start + i) % n] for i in range(n)]
        now = self.clock()
        # Servers that failed lately go last, so a call still tries every server once.
        fresh = [s for s in ring if s.failed_until <= now]
        resting = sorted((s for s in ring if s.failed_until > now), key=lambda s: s.failed_until)
        order = fresh + resting
        attempts: List[Tuple[str, str]] = []
        pause = _FIRST_PAUSE
        for i, server in enumerate(order):
            if i > 0:
                self.sleep(pause)
                pause = min(pause * 2, _LONGEST_PAUSE)
                with self.lock:
                    self.failovers += 1
            try:
                body = self.request(server, method, path)
            except _Failed as e:
                server.failed_until = self.clock() + self.retry_after
                attempts.append((server.name, str(e)))
                continue
            with self.lock:
                self.current = self.list.index(server)
            server.failed_until = 0.0
            return server, body
        raise UnavailableError(attempts)

    def request(self, server: Server, method: str, path: str) -> Dict[str, Any]:
        """One request to one server: its JSON answer, RefusedError, or _Failed."""
        kind = http.client.HTTPSConnection if server.https else http.client.HTTPConnection
        conn = kind(server.host, server.port, timeout=self.timeout)
        headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if method == "POST":
            headers["Content-Length"] = "0"
        try:
            conn.request(method, server.prefix + path, headers=headers)
            answer = conn.getresponse()
            raw = answer.read()
            status = answer.status
        except ConnectionRefusedError:
            raise _Failed("connection refused") from None
        except (socket.timeout, TimeoutError):
            raise _Failed(f"no answer within {self.timeout:g} s") from None
        except (OSError, http.client.HTTPException) as e:
            raise _Failed(f"{type(e).__name__}: {e}") from None
        finally:
            conn.close()
        try:
            body = json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError:
            body = None
        if 200 <= status < 300:
            if not isinstance(body, dict):
                raise _Failed(f"HTTP {status} with an answer that is not a JSON object")
            return body
        error = body.get("error") if isinstance(body, dict) else None
        text = str(error) if error is not None else raw[:200].decode("utf-8", "replace")
        if status == 408 or status >= 500:
            raise _Failed(f"HTTP {status}: {text}")
        if 400 <= status < 500:
            limit = body.get("limit") if isinstance(body, dict) else None
            raise RefusedError(status, text, None if limit is None else str(limit), server.name)
        raise _Failed(f"unexpected HTTP {status}: {text}")

    def request_at(self, server: Server, method: str, path: str) -> Dict[str, Any]:
        """One request pinned to `server` (a giveback belongs to the process that gave
        the range); a failure is raised as UidgenError, never moved elsewhere."""
        try:
            return self.request(server, method, path)
        except _Failed as e:
            raise UidgenError(f"{server.name}: {e}") from None

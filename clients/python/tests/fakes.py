"""A fake uidgen service on 127.0.0.1 (an ephemeral port), with the native routes a
client uses and knobs to make it refuse, fail or hang."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


def refused_address() -> str:
    """An address nothing listens on: a port just bound and freed."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"127.0.0.1:{port}"


class FakeServer:
    def __init__(self, first=1, snowflake_first=1 << 40, exact_numbers=True):
        self.lock = threading.Lock()
        self.requests = []  # (method, path, query, headers), in arrival order
        self.ranges = []  # (tag, first, last, receipt)
        self.givebacks = []  # (tag, first, receipt)
        self.snowflake_batches = []
        self.next_first = first
        self.next_snowflake = snowflake_first
        # JSON numbers as the service writes them; False writes them rounded to doubles,
        # as a JSON reader that loses precision would see them (the _str fields stay exact).
        self.exact_numbers = exact_numbers
        # A function (method, path, query) -> None (answer normally), (status, body),
        # or "hang" (answer nothing until stop()).
        self.override = None
        self.log = None  # a shared list to record (self, path) across servers
        self.release = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                fake._handle(self, "GET")

            def do_POST(self):
                fake._handle(self, "POST")

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.address = f"127.0.0.1:{self.httpd.server_address[1]}"
        # A short poll, so stop() (which waits for the loop to notice) is quick.
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()

    def stop(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def hits(self, path_part=""):
        with self.lock:
            return sum(1 for r in self.requests if path_part in r[1])

    def _number(self, n):
        return n if self.exact_numbers else float(n)

    def _handle(self, h, method):
        parts = urlsplit(h.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        with self.lock:
            self.requests.append((method, parts.path, query, dict(h.headers)))
            if self.log is not None:
                self.log.append((self, parts.path))
        answer = self.override(method, parts.path, query) if self.override else None
        if answer == "hang":
            self.release.wait(30)
            return
        if answer is None:
            answer = self._answer(method, parts.path, query)
        status, body = answer
        raw = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(raw)))
        h.end_headers()
        h.wfile.write(raw)

    def _answer(self, method, path, query):
        bits = path.strip("/").split("/")
        with self.lock:
            if method == "POST" and len(bits) == 4 and bits[:2] == ["v1", "segment"]:
                tag = bits[2]
                if bits[3] == "range":
                    count = int(query["count"])
                    first = self.next_first
                    last = first + count - 1
                    self.next_first = last + 1
                    receipt = f"receipt-{len(self.ranges)}-{self.address}"
                    self.ranges.append((tag, first, last, receipt))
                    return 200, {"tag": tag, "count": count, "first": self._number(first),
                                 "last": self._number(last), "first_str": str(first),
                                 "last_str": str(last), "receipt": receipt}
                if bits[3] == "giveback":
                    self.givebacks.append((tag, int(query["first"]), query["receipt"]))
                    return 200, {"tag": tag, "given_back": True}
            if method == "GET" and path == "/v1/snowflake":
                count = int(query["count"])
                ids = list(range(self.next_snowflake, self.next_snowflake + count))
                self.next_snowflake += count + 1000
                self.snowflake_batches.append(ids)
                return 200, {"count": count, "ids": [self._number(i) for i in ids],
                             "ids_str": [str(i) for i in ids]}
        return 404, {"error": f"no route {path}", "status": 404}


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, now=1000.0):
        self.now = now
        self.lock = threading.Lock()

    def __call__(self):
        with self.lock:
            return self.now

    def advance(self, seconds):
        with self.lock:
            self.now += seconds

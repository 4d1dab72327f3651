"""The driver every uidgen client has (clients/PROTOCOL.md), for the fleet test:

    python3 -m uidgen_client.driver SERVERS TAG THREADS IDS_PER_THREAD OUT

The token, if any, in UIDGEN_TOKEN. Thread t writes its segment IDs to OUT.t and its
snowflake IDs to OUT.t.snowflake, one decimal a line in the order taken; then one JSON
line of totals on stdout. Exit 0, or the error on stderr and exit 1."""

import json
import os
import sys
import threading
import time
from typing import List, Optional

from .client import Client

USAGE = "usage: python3 -m uidgen_client.driver SERVERS TAG THREADS IDS_PER_THREAD OUT"
SNOWFLAKES_PER_THREAD = 1000


def _count(what: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise SystemExit(f"{what} {text!r} is not a number") from None
    if value < 0:
        raise SystemExit(f"{what} {text!r} is negative")
    return value


def _write(path: str, ids: List[int]) -> None:
    with open(path, "w") as out:
        out.write("".join(f"{i}\n" for i in ids))


def run(argv: List[str]) -> dict:
    if len(argv) != 5:
        raise SystemExit(USAGE)
    servers, tag, threads_text, per_thread_text, out = argv
    threads = _count("THREADS", threads_text)
    per_thread = _count("IDS_PER_THREAD", per_thread_text)
    client = Client(servers.split(","), token=os.environ.get("UIDGEN_TOKEN") or None)
    # Started together, so the threads contend as the fleet test means them to.
    start = threading.Barrier(threads) if threads else None
    longest = [0.0] * threads
    errors: List[Optional[BaseException]] = [None] * threads

    def work(t: int) -> None:
        try:
            start.wait()
            ids = []
            for _ in range(per_thread):
                asked = time.perf_counter()
                ids.append(client.next_id(tag))
                longest[t] = max(longest[t], time.perf_counter() - asked)
            snowflakes = [client.snowflake() for _ in range(SNOWFLAKES_PER_THREAD)]
            _write(f"{out}.{t}", ids)
            _write(f"{out}.{t}.snowflake", snowflakes)
        except BaseException as e:  # noqa: B902 - reported by the main thread
            errors[t] = e
            start.abort()  # no thread waits forever for one that failed

    try:
        workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        failed = [e for e in errors if e is not None and not isinstance(e, threading.BrokenBarrierError)]
        if failed:
            raise failed[0]
    finally:
        not_given_back = client.close()
    for e in not_given_back:
        print(f"uidgen_client.driver: not given back: {e}", file=sys.stderr)
    return {
        "ids": threads * per_thread,
        "failovers": client.failovers,
        "max_call_ms": int(max(longest, default=0.0) * 1000),
    }


def main(argv: Optional[List[str]] = None) -> int:
    try:
        summary = run(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:
        print(f"uidgen_client.driver: {e.code}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: B902 - the driver's contract: the error, exit 1
        print(f"uidgen_client.driver: {e}", file=sys.stderr)
        return 1
    print(json.dumps(summary, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

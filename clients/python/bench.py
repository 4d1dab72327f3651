"""Benchmark: the client's next_id against one HTTP request per ID, on a live uidgen service.

    python3 clients/python/bench.py HOST:PORT [--tag order] [--client-ids N] [--http-ids N]

Standard library only. The service must serve TAG as a segment tag. Prints a markdown table:
IDs/s (a loop without timers, after a warm-up) and the p50/p99 of one call (a separate loop
timing each call with time.perf_counter_ns), for (a) Client.next_id on one thread, (b) one
kept-alive http.client GET /v1/segment/TAG (Accept: text/plain) per ID, and (c) the same
client shared by 4 threads (IDs/s in total). The ratio column is the client's figure divided
by the one-request-per-ID figure (IDs/s).
"""

import argparse
import http.client
import os
import sys
import threading
import time
from typing import Callable, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from uidgen_client import Client  # noqa: E402


def percentile(sorted_ns: List[int], p: float) -> int:
    """Nearest rank: the smallest value with at least p of the samples at or below it."""
    rank = max(1, -(-int(p * 1000) * len(sorted_ns) // 1000))  # ceil(p * n)
    return sorted_ns[rank - 1]


def throughput(take: Callable[[], object], n: int) -> float:
    """IDs per second over n calls; nothing but the calls inside the loop."""
    t0 = time.perf_counter_ns()
    for _ in range(n):
        take()
    return n * 1e9 / (time.perf_counter_ns() - t0)


def latencies(take: Callable[[], object], n: int) -> Tuple[int, int]:
    """p50 and p99 of one call, in ns, over n calls each timed alone."""
    clock = time.perf_counter_ns
    samples = [0] * n
    for i in range(n):
        t0 = clock()
        take()
        samples[i] = clock() - t0
    samples.sort()
    return percentile(samples, 0.50), percentile(samples, 0.99)


def threaded_throughput(take: Callable[[], object], threads: int, per_thread: int) -> float:
    """IDs per second in total, threads calling take() per_thread times each, started together."""
    start = threading.Barrier(threads + 1)
    errors: List[BaseException] = []

    def work() -> None:
        try:
            start.wait()
            for _ in range(per_thread):
                take()
        except BaseException as e:  # noqa: B902 - reported by the main thread
            errors.append(e)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    t0 = time.perf_counter_ns()
    for w in workers:
        w.join()
    elapsed = time.perf_counter_ns() - t0
    if errors:
        raise errors[0]
    return threads * per_thread * 1e9 / elapsed


def http_taker(server: str, tag: str) -> Tuple[Callable[[], int], http.client.HTTPConnection]:
    host, _, port = server.rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    path = f"/v1/segment/{tag}"
    headers = {"Accept": "text/plain"}

    def take() -> int:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()  # read to the end, so the connection is kept for the next request
        if resp.status != 200:
            raise RuntimeError(f"GET {path}: {resp.status} {body!r}")
        return int(body)

    return take, conn


def us(ns: float) -> str:
    return f"{ns / 1000:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("server", help="host:port of a live uidgen service")
    ap.add_argument("--tag", default="order")
    ap.add_argument("--client-ids", type=int, default=1_000_000, help="IDs per client loop")
    ap.add_argument("--http-ids", type=int, default=3_000, help="IDs per one-request-per-ID loop")
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    tag = args.tag

    client = Client([args.server])
    try:
        take_client = lambda: client.next_id(tag)  # noqa: E731
        throughput(take_client, min(args.client_ids, 20_000))  # warm-up: first ranges, growth
        c_rate = throughput(take_client, args.client_ids)
        c_p50, c_p99 = latencies(take_client, args.client_ids)
        threaded_throughput(take_client, args.threads, 5_000)  # warm-up
        t_rate = threaded_throughput(take_client, args.threads, args.client_ids // args.threads)
    finally:
        client.close()

    take_http, conn = http_taker(args.server, tag)
    try:
        throughput(take_http, min(args.http_ids, 300))  # warm-up: the connection, the server
        h_rate = throughput(take_http, args.http_ids)
        h_p50, h_p99 = latencies(take_http, args.http_ids)
    finally:
        conn.close()

    print(f"python {sys.version.split()[0]}, server {args.server}, tag {tag}; "
          f"client loops {args.client_ids} IDs, per-request loops {args.http_ids} IDs")
    print()
    print("| case | IDs/s | p50 µs | p99 µs | IDs/s ratio vs (b) |")
    print("|---|---:|---:|---:|---|")
    print(f"| (a) `client.next_id` | {c_rate:,.0f} | {us(c_p50)} | {us(c_p99)} | "
          f"×{c_rate / h_rate:,.0f} |")
    print(f"| (b) one HTTP request per ID (http.client, keep-alive) | {h_rate:,.0f} | "
          f"{us(h_p50)} | {us(h_p99)} | ×1 |")
    print(f"| (c) `client.next_id`, {args.threads} threads (total) | {t_rate:,.0f} | — | — | "
          f"×{t_rate / h_rate:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

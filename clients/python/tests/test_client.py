import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fakes import FakeClock, FakeServer, refused_address  # noqa: E402
from uidgen_client import (  # noqa: E402
    Client, ClosedError, RefusedError, UnavailableError)


def wait_until(condition, timeout=3.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.005)


class Base(unittest.TestCase):
    def server(self, **kw):
        s = FakeServer(**kw)
        self.addCleanup(s.stop)
        return s

    def client(self, servers, first=None, **kw):
        c = Client(servers, **kw)
        self.addCleanup(c.close)
        if first is not None:
            c._core.servers.current = first  # a fixed start instead of a random one
        return c


class Ranges(Base):
    def test_ids_increasing_and_distinct_across_8_threads(self):
        s = self.server()
        c = self.client([s.address], min_count=100, max_count=400)
        taken = [[] for _ in range(8)]
        start = threading.Barrier(8)

        def work(t):
            start.wait()
            for _ in range(3000):
                taken[t].append(c.next_id("order"))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for ids in taken:
            self.assertEqual(ids, sorted(ids))
            self.assertEqual(len(set(ids)), len(ids))
        every = [i for ids in taken for i in ids]
        self.assertEqual(len(set(every)), 24000)
        handed = {i for _, f, l, _ in s.ranges for i in range(f, l + 1)}
        self.assertTrue(set(every) <= handed)

    def test_next_range_fetched_before_current_runs_out_and_used_after_it(self):
        s = self.server(first=1)
        s.override = None
        c = self.client([s.address], min_count=100)
        first = [c.next_id("order") for _ in range(49)]
        time.sleep(0.1)
        self.assertEqual(s.hits("/range"), 1, "fetched the next range before 50% was used")
        first.append(c.next_id("order"))  # the 50th: half of the range used
        wait_until(lambda: len(s.ranges) == 2)
        r1, r2 = s.ranges[0], s.ranges[1]
        self.assertGreater(r2[1], r1[2])
        rest = [c.next_id("order") for _ in range(50)]
        self.assertEqual(first + rest, list(range(r1[1], r1[2] + 1)))
        self.assertEqual(c.next_id("order"), r2[1])
        self.assertEqual(s.hits("/range"), 2)

    def test_range_size_doubles_at_a_high_rate_and_halves_at_a_low_one(self):
        s = self.server()
        clock = FakeClock()
        c = self.client([s.address], min_count=10, max_count=1000, target_seconds=10,
                        clock=clock)
        counts = lambda: [l - f + 1 for _, f, l, _ in s.ranges]  # noqa: E731
        take = lambda n: [c.next_id("order") for _ in range(n)]  # noqa: E731
        take(40)  # three ranges used up with no time passing: fast
        wait_until(lambda: len(s.ranges) == 4)
        self.assertEqual(counts(), [10, 10, 20, 40])
        take(39)  # the 40-ID range, slowly
        wait_until(lambda: len(s.ranges) == 5)
        clock.advance(25)  # lasted over twice target_seconds
        take(1)
        take(40)  # half of the 80-ID range: its prefetch
        wait_until(lambda: len(s.ranges) == 6)
        self.assertEqual(counts(), [10, 10, 20, 40, 80, 40])

    def test_range_size_stays_within_min_and_max(self):
        s = self.server()
        clock = FakeClock()
        c = self.client([s.address], min_count=10, max_count=20, clock=clock)
        c.next_ids("order", 200)
        wait_until(lambda: s.hits("/range") >= 2 and not c._core.tags["order"].fetching)
        self.assertEqual(max(l - f + 1 for _, f, l, _ in s.ranges), 20)

    def test_ids_above_2_pow_53_kept_exact(self):
        big = (1 << 63) + 12345
        s = self.server(first=big, snowflake_first=(1 << 62) + 7, exact_numbers=False)
        c = self.client([s.address], min_count=10)
        self.assertEqual(c.next_ids("order", 3), [big, big + 1, big + 2])
        self.assertEqual(c.snowflake(), (1 << 62) + 7)
        self.assertEqual(c.snowflake(), (1 << 62) + 8)
        c.close()
        self.assertEqual(s.givebacks[-1][1], big + 3)


class Snowflakes(Base):
    def test_ids_older_than_validity_are_dropped(self):
        s = self.server()
        clock = FakeClock()
        c = self.client([s.address], snowflake_batch=5, validity=1.0, clock=clock)
        a, b = c.snowflake(), c.snowflake()
        clock.advance(0.5)
        self.assertEqual([a, b, c.snowflake()], s.snowflake_batches[0][:3])
        clock.advance(0.6)  # the batch is now 1.1 s old
        fresh = c.snowflake()
        self.assertEqual(len(s.snowflake_batches), 2)
        self.assertEqual(fresh, s.snowflake_batches[1][0])
        self.assertGreater(fresh, a)


class Failover(Base):
    def test_failover_past_a_refused_port(self):
        s = self.server()
        c = self.client([refused_address(), s.address], first=0)
        self.assertEqual(c.next_id("order"), s.ranges[0][1])
        self.assertEqual(c.failovers, 1)

    def test_500_and_a_hang_fail_over_with_a_bounded_wait(self):
        hang, err, good = self.server(), self.server(), self.server()
        hang.override = lambda *a: "hang"
        err.override = lambda *a: (500, {"error": "store down", "status": 500})
        clock = FakeClock()
        c = self.client([hang.address, err.address, good.address], first=0,
                        timeout=0.3, retry_after=5, clock=clock)
        began = time.monotonic()
        self.assertEqual(c.next_id("order"), good.ranges[0][1])
        waited = time.monotonic() - began
        self.assertLess(waited, 0.3 + 0.05 + 0.1 + 0.6)
        self.assertGreaterEqual(waited, 0.3)
        self.assertEqual(c.failovers, 2)
        self.assertEqual((hang.hits(), err.hits()), (1, 1))
        # Both failed lately: skipped for retry_after even from the start.
        c._core.servers.current = 0
        c.snowflake()
        self.assertEqual((hang.hits(), err.hits(), c.failovers), (1, 1, 2))
        # Past retry_after the failed servers are tried again.
        clock.advance(6)
        c._core.servers.current = 1
        clock.advance(2)  # the batch is too old: fetch again
        c.snowflake()
        self.assertEqual((err.hits(), c.failovers), (2, 3))

    def test_4xx_raised_at_once_with_the_error(self):
        cases = [
            (404, {"error": 'unknown tag "nope"', "status": 404}, None),
            (401, {"error": "no token or an unknown one", "status": 401}, None),
            (400, {"error": "count is too large", "limit": "100000", "status": 400}, "100000"),
        ]
        for status, body, limit in cases:
            with self.subTest(status=status):
                bad, good = self.server(), self.server()
                bad.override = lambda *a, st=status, b=body: (st, b)
                c = self.client([bad.address, good.address], first=0)
                with self.assertRaises(RefusedError) as caught:
                    c.next_id("nope")
                e = caught.exception
                self.assertEqual((e.status, e.error, e.limit, e.server),
                                 (status, body["error"], limit, bad.address))
                self.assertIn(body["error"], str(e))
                self.assertEqual((good.hits(), c.failovers), (0, 0))

    def test_408_fails_over(self):
        slow, good = self.server(), self.server()
        slow.override = lambda *a: (408, {"error": "too slow", "status": 408})
        c = self.client([slow.address, good.address], first=0)
        self.assertEqual(c.next_id("order"), good.ranges[0][1])
        self.assertEqual(c.failovers, 1)

    def test_every_server_down_names_each(self):
        down1, down2 = refused_address(), refused_address()
        sick = self.server()
        sick.override = lambda *a: (503, {"error": "the store does not answer", "status": 503})
        c = self.client([down1, sick.address, down2])
        with self.assertRaises(UnavailableError) as caught:
            c.next_id("order")
        text = str(caught.exception)
        for address in (down1, down2, sick.address):
            self.assertIn(address, text)
        self.assertIn("connection refused", text)
        self.assertIn("HTTP 503: the store does not answer", text)
        self.assertEqual(len(caught.exception.attempts), 3)
        self.assertEqual(c.failovers, 2)


class Token(Base):
    def test_token_header_sent(self):
        s = self.server()
        c = self.client([s.address], token="k3y-for-orders-0123456789", min_count=10)
        c.next_id("order")
        c.snowflake()
        c.close()
        self.assertEqual(len(s.requests), 3)
        for _, path, _, headers in s.requests:
            self.assertEqual(headers.get("Authorization"), "Bearer k3y-for-orders-0123456789", path)

    def test_no_header_without_a_token(self):
        s = self.server()
        self.client([s.address]).snowflake()
        self.assertNotIn("Authorization", s.requests[0][3])


class Close(Base):
    def test_giveback_to_the_server_that_handed_each_range_out(self):
        a, b = self.server(first=1000), self.server(first=5_000_000)
        log = []
        a.log = b.log = log
        # a hands out the first range only; the next comes from b.
        a.override = lambda m, p, q: (
            (500, {"error": "busy", "status": 500})
            if p.endswith("/range") and a.ranges else None)
        c = self.client([a.address, b.address], first=0, min_count=100)
        taken = c.next_ids("order", 60)
        wait_until(lambda: len(b.ranges) == 1)
        self.assertEqual(taken, list(range(1000, 1060)))
        c.close()
        (_, af, al, areceipt), (_, bf, bl, breceipt) = a.ranges[0], b.ranges[0]
        # The next range (from b) goes back whole; a's tail does not follow it, since
        # it would sit below what b handed out last.
        self.assertEqual(a.givebacks, [])
        self.assertEqual(b.givebacks, [("order", bf, breceipt)])
        gb = [srv for srv, path in log if path.endswith("/giveback")]
        self.assertEqual(gb, [b])
        with self.assertRaises(ClosedError):
            c.next_id("order")
        with self.assertRaises(ClosedError):
            c.snowflake()

    def test_context_manager_closes(self):
        s = self.server()
        with Client([s.address], min_count=10) as c:
            c.next_id("order")
        self.assertEqual(s.givebacks, [("order", s.ranges[0][1] + 1, s.ranges[0][3])])
        with self.assertRaises(ClosedError):
            c.next_id("order")


if __name__ == "__main__":
    unittest.main()

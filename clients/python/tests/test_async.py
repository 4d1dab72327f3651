import asyncio
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fakes import FakeServer, refused_address  # noqa: E402
from uidgen_client import AsyncClient, ClosedError, RefusedError, UnavailableError  # noqa: E402


class Async(unittest.TestCase):
    def server(self, **kw):
        s = FakeServer(**kw)
        self.addCleanup(s.stop)
        return s

    def test_100_concurrent_tasks_get_distinct_increasing_ids(self):
        s = self.server()

        async def main():
            async with AsyncClient([s.address], min_count=64, max_count=256) as c:
                async def task():
                    out = []
                    for _ in range(50):
                        out.append(await c.next_id("order"))
                        await asyncio.sleep(0)  # let the other tasks in between
                    return out
                results = await asyncio.gather(*(task() for _ in range(100)))
                batch = await c.next_ids("order", 300)
                flakes = [await c.snowflake() for _ in range(5)]
            return results, batch, flakes

        results, batch, flakes = asyncio.run(main())
        every = [i for ids in results for i in ids]
        for ids in results:
            self.assertEqual(ids, sorted(ids))
        self.assertEqual(len(set(every)), 5000)
        self.assertEqual(batch, sorted(batch))
        self.assertGreater(batch[0], max(every))
        self.assertEqual(flakes, s.snowflake_batches[0][:5])
        self.assertGreater(s.hits("/range"), 5)
        # `async with` gave back what was left, none of it handed out.
        self.assertTrue(s.givebacks)
        self.assertTrue(all(first > batch[-1] for _, first, _ in s.givebacks))

    def test_in_memory_take_does_not_await(self):
        s = self.server()

        async def main():
            c = AsyncClient([s.address], min_count=100)
            first = await c.next_id("order")
            coro = c.next_id("order")
            # A coroutine that never awaits finishes on its first step.
            with self.assertRaises(StopIteration) as done:
                coro.send(None)
            await c.close()
            with self.assertRaises(ClosedError):
                await c.next_id("order")
            return first, done.exception.value

        first, second = asyncio.run(main())
        self.assertEqual(second, first + 1)

    def test_errors_reach_the_task(self):
        bad = self.server()
        bad.override = lambda *a: (404, {"error": 'unknown tag "x"', "status": 404})
        down = refused_address()

        async def main():
            c = AsyncClient([bad.address])
            with self.assertRaises(RefusedError):
                await c.next_id("x")
            c2 = AsyncClient([down], timeout=0.5)
            with self.assertRaises(UnavailableError):
                await c2.snowflake()
            await c.close()
            await c2.close()

        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()

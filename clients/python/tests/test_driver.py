import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from fakes import FakeServer  # noqa: E402

PACKAGE_ROOT = os.path.dirname(HERE)


def run_driver(*args, token=None):
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    env.pop("UIDGEN_TOKEN", None)
    if token:
        env["UIDGEN_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "uidgen_client.driver", *args],
                          env=env, capture_output=True, text=True, timeout=60)


class Driver(unittest.TestCase):
    def setUp(self):
        self.s = FakeServer()
        self.addCleanup(self.s.stop)
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.out = os.path.join(self.dir.name, "out")

    def test_driver_writes_each_threads_ids_and_a_summary(self):
        done = run_driver(self.s.address, "order", "4", "2500", self.out,
                          token="k3y-for-everything-0123")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.strip().splitlines()
        self.assertEqual(len(lines), 1)
        summary = json.loads(lines[0])
        self.assertEqual(set(summary), {"ids", "failovers", "max_call_ms"})
        self.assertEqual((summary["ids"], summary["failovers"]), (10000, 0))
        self.assertIsInstance(summary["max_call_ms"], int)
        every, flakes = [], []
        for t in range(4):
            with open(f"{self.out}.{t}") as f:
                ids = [int(x) for x in f.read().split()]
            with open(f"{self.out}.{t}.snowflake") as f:
                sf = [int(x) for x in f.read().split()]
            self.assertEqual(len(ids), 2500)
            self.assertEqual(ids, sorted(ids))
            self.assertEqual(len(sf), 1000)
            self.assertEqual(sf, sorted(sf))
            every += ids
            flakes += sf
        self.assertEqual(len(set(every)), 10000)
        self.assertEqual(len(set(flakes)), 4000)
        self.assertFalse(os.path.exists(f"{self.out}.4"))
        self.assertTrue(self.s.givebacks, "closing gave the unused IDs back")
        self.assertTrue(all(h.get("Authorization") == "Bearer k3y-for-everything-0123"
                            for _, _, _, h in self.s.requests))

    def test_driver_fails_with_the_error_and_exit_1(self):
        self.s.override = lambda *a: (404, {"error": 'unknown tag "nope"', "status": 404})
        done = run_driver(self.s.address, "nope", "2", "10", self.out)
        self.assertEqual(done.returncode, 1)
        self.assertIn('unknown tag "nope"', done.stderr)
        self.assertEqual(done.stdout, "")

    def test_driver_bad_arguments(self):
        done = run_driver(self.s.address, "order", "two", "10", self.out)
        self.assertEqual(done.returncode, 1)
        self.assertIn("THREADS", done.stderr)
        done = run_driver(self.s.address, "order")
        self.assertEqual(done.returncode, 1)
        self.assertIn("usage", done.stderr)


if __name__ == "__main__":
    unittest.main()

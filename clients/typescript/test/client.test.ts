import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, ClosedError, RefusedError, UnavailableError } from "../src/index";
import { closedPort, fakeServer, idServer, json, Store } from "./fake";

const first = () => 0; // always start at the first server listed, so failover tests are deterministic
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, what: string, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

test("200 concurrent callers get distinct increasing IDs; one fetch in flight per tag", async () => {
  let inFlight = 0;
  let maxInFlight = 0;
  const srv = await idServer({
    delayMs: 5,
    override: (req) => {
      if (req.path.endsWith("/range")) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        setTimeout(() => inFlight--, 5);
      }
      return false;
    },
  });
  const c = new Client({ servers: [srv.addr], minCount: 100, maxCount: 400 });
  try {
    const perCaller = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const got: bigint[] = [];
        for (let k = 0; k < 50; k++) got.push(await c.nextId("order"));
        return got;
      }),
    );
    const all = new Set<bigint>();
    for (const got of perCaller) {
      for (let k = 1; k < got.length; k++) assert.ok(got[k] > got[k - 1], "increasing within a caller");
      for (const id of got) {
        assert.equal(typeof id, "bigint");
        all.add(id);
      }
    }
    assert.equal(all.size, 200 * 50, "distinct");
    for (const id of all) assert.ok(srv.store.ranges.some((r) => id >= r.first && id <= r.last), "from a range handed out");
    assert.equal(maxInFlight, 1, "one fetch in flight per tag");

  } finally {
    await c.close();
    await srv.close();
  }
});

test("the fast path resolves with no I/O: one microtask turn is enough", async () => {
  const srv = await idServer();
  const c = new Client({ servers: [srv.addr], minCount: 100 });
  try {
    assert.equal(await c.nextId("order"), 1n);
    let v: bigint | undefined;
    void c.nextId("order").then((x) => (v = x));
    await Promise.resolve();
    assert.equal(v, 2n);
    const many = c.nextIds("order", 10);
    let w: bigint[] | undefined;
    void many.then((x) => (w = x));
    await Promise.resolve();
    assert.deepEqual(w, Array.from({ length: 10 }, (_, k) => 3n + BigInt(k)));
  } finally {
    await c.close();
    await srv.close();
  }
});

test("the next range is fetched once prefetchShare is used, and not used before the current runs out", async () => {
  const srv = await idServer();
  const c = new Client({ servers: [srv.addr], minCount: 10, maxCount: 10 });
  try {
    const ids: bigint[] = [];
    for (let k = 0; k < 4; k++) ids.push(await c.nextId("order"));
    await sleep(50);
    assert.equal(srv.store.ranges.length, 1, "no prefetch before half is used");
    ids.push(await c.nextId("order")); // the 5th of 10: half used
    await until(() => srv.store.ranges.length === 2, "the prefetch");
    await sleep(20); // let the answer land
    for (let k = 0; k < 5; k++) ids.push(await c.nextId("order"));
    const [r1, r2] = srv.store.ranges;
    assert.deepEqual(ids, Array.from({ length: 10 }, (_, k) => r1.first + BigInt(k)), "all of the first range first");
    assert.equal(await c.nextId("order"), r2.first, "then the next range");
    assert.equal(srv.store.ranges.length, 2);
  } finally {
    await c.close();
    await srv.close();
  }
});

test("range size doubles at a high rate and halves at a low one", async () => {
  const srv = await idServer();
  let now = 0;
  const c = new Client({ servers: [srv.addr], minCount: 10, maxCount: 80, targetSeconds: 10, now: () => now });
  // Sizes are read when a fetch starts and changed when a range runs out, both on the injected clock,
  // so when answers land does not change the sequence.
  try {
    for (let k = 0; k < 160; k++) {
      await c.nextId("order");
    }
    const fast = srv.store.ranges.map((r) => r.count);
    assert.deepEqual(fast.slice(0, 5), [10, 10, 20, 40, 80], "doubling, one range behind");
    assert.ok(fast.every((n) => n <= 80), "never above maxCount");

    const before = srv.store.ranges.length;
    for (let k = 0; k < 400; k++) {
      now += 3000; // one ID every 3 s: even 10 IDs last 30 s, over twice the target
      await c.nextId("order");
    }
    const slow = srv.store.ranges.slice(before).map((r) => r.count);
    for (let k = 1; k < slow.length; k++) assert.ok(slow[k] <= slow[k - 1], `never growing at a low rate: ${slow}`);
    for (const n of [40, 20, 10]) assert.ok(slow.includes(n), `halving through ${n}: ${slow}`);
    assert.equal(slow[slow.length - 1], 10, "down to minCount");
  } finally {
    await c.close();
    await srv.close();
  }
});

test("snowflake IDs older than validityMs are dropped", async () => {
  const srv = await idServer();
  let now = 0;
  const c = new Client({ servers: [srv.addr], snowflakeBatch: 10, validityMs: 1000, now: () => now });
  try {
    const a = [await c.snowflake(), await c.snowflake(), await c.snowflake()];
    assert.deepEqual(a, [1000n, 1001n, 1002n]);
    now += 999;
    assert.equal(await c.snowflake(), 1003n, "still valid at 999 ms");
    assert.equal(srv.seen.length, 1);
    now += 2;
    assert.equal(await c.snowflake(), 1010n, "the rest of the old batch dropped; a new batch");
    assert.equal(srv.seen.length, 2);
    assert.equal(srv.seen[1].query.get("count"), "10");
  } finally {
    await c.close();
    await srv.close();
  }
});

test("fails over past a refused port", async () => {
  const dead = await closedPort();
  const srv = await idServer();
  const c = new Client({ servers: [dead, srv.addr], random: first });
  try {
    assert.equal(await c.nextId("order"), 1n);
    assert.equal(c.failovers, 1);
  } finally {
    await c.close();
    await srv.close();
  }
});

test("fails over past a 500 and a server that hangs past the timeout, in bounded time", async () => {
  const s500 = await fakeServer((_req, res) => json(res, 500, { error: "store down", status: 500 }));
  const hang = await fakeServer(() => {}); // never answers
  const srv = await idServer();
  const c = new Client({ servers: [s500.addr, hang.addr, srv.addr], timeoutMs: 300, random: first });
  try {
    const t0 = Date.now();
    assert.equal(await c.nextId("order"), 1n);
    const took = Date.now() - t0;
    assert.equal(c.failovers, 2);
    assert.equal(s500.seen.length, 1);
    assert.equal(hang.seen.length, 1);
    // 300 ms timeout plus pauses of 50 and 100 ms; well under the hang's forever.
    assert.ok(took >= 300 && took < 1500, `took ${took} ms`);
    // Failed servers are skipped for retryAfterMs: the next call goes straight to the good one.
    await c.snowflake();
    assert.equal(s500.seen.length, 1);
    assert.equal(hang.seen.length, 1);
    assert.equal(c.failovers, 2);
  } finally {
    await c.close();
    await Promise.all([s500.close(), hang.close(), srv.close()]);
  }
});

test("404 and 401 are thrown at once as RefusedError, not retried", async () => {
  const srv = await idServer();
  const s401 = await fakeServer((_req, res) => json(res, 401, { error: "no token", limit: "a Bearer token", status: 401 }));
  const c1 = new Client({ servers: [srv.addr, s401.addr], random: first });
  const c2 = new Client({ servers: [s401.addr, srv.addr], random: first });
  try {
    await assert.rejects(c1.nextId("nope"), (e: unknown) => {
      assert.ok(e instanceof RefusedError);
      assert.equal(e.status, 404);
      assert.equal(e.error, "no tag nope");
      assert.equal(e.server, srv.url);
      return true;
    });
    assert.equal(s401.seen.length, 0, "not tried elsewhere");
    const t0 = Date.now();
    await assert.rejects(c2.nextId("order"), (e: unknown) => {
      assert.ok(e instanceof RefusedError);
      assert.equal(e.status, 401);
      assert.equal(e.limit, "a Bearer token");
      assert.equal(e.server, s401.url);
      return true;
    });
    assert.ok(Date.now() - t0 < 40, "no pause, no retry");
    assert.equal(srv.store.ranges.length, 0);
    assert.equal(c1.failovers + c2.failovers, 0);
  } finally {
    await Promise.all([c1.close(), c2.close()]);
    await Promise.all([srv.close(), s401.close()]);
  }
});

test("every server down: UnavailableError naming each and what it answered", async () => {
  const dead = await closedPort();
  const s503 = await fakeServer((_req, res) => json(res, 503, { error: "draining", status: 503 }));
  const s408 = await fakeServer((_req, res) => json(res, 408, { error: "too slow", status: 408 }));
  const c = new Client({ servers: [dead, s503.addr, s408.addr], random: first });
  try {
    await assert.rejects(c.nextId("order"), (e: unknown) => {
      assert.ok(e instanceof UnavailableError);
      assert.equal(e.failures.length, 3);
      assert.match(e.message, new RegExp(`http://${dead} \\(connection refused\\)`));
      assert.match(e.message, new RegExp(`${s503.url} \\(HTTP 503: draining\\)`));
      assert.match(e.message, new RegExp(`${s408.url} \\(HTTP 408: too slow\\)`));
      return true;
    });
    assert.equal(c.failovers, 2);
  } finally {
    await c.close();
    await Promise.all([s503.close(), s408.close()]);
  }
});

test("the bearer token is sent with every call", async () => {
  const srv = await idServer();
  const c = new Client({ servers: [srv.url + "/"], token: "k3y-for-orders-0123456789", minCount: 2 });
  try {
    await c.nextIds("order", 3);
    await c.snowflake();
    await c.close();
    assert.ok(srv.seen.length >= 4, "ranges, a snowflake batch and a give-back");
    for (const s of srv.seen) assert.equal(s.headers.authorization, "Bearer k3y-for-orders-0123456789");
  } finally {
    await srv.close();
  }
});

test("close gives back the next range whole, and the current tail only to the same server, each to the server that handed it out", async () => {
  const store = new Store();
  let aRefusesRanges = false;
  const a = await idServer({
    store,
    override: (req, res) => {
      if (aRefusesRanges && req.path.endsWith("/range")) {
        json(res, 500, { error: "busy", status: 500 });
        return true;
      }
      return false;
    },
  });
  const b = await idServer({ store });
  const c = new Client({ servers: [a.addr, b.addr], minCount: 10, maxCount: 10, random: first });
  try {
    const ids = await c.nextIds("order", 3);
    assert.deepEqual(ids, [1n, 2n, 3n]);
    aRefusesRanges = true;
    await c.nextIds("order", 2); // half used: the next range is fetched, from b after a fails
    await until(() => store.ranges.length === 2, "the prefetch from b");
    await sleep(20);
    assert.equal(store.ranges[1].server, b.url);
    await c.close();
    assert.deepEqual(
      store.givebacks.map((g) => [g.server, g.first, g.receipt]),
      // The next range (from b) whole; a's tail does not follow it, since it would sit
      // below what b handed out last.
      [[b.url, 11n, store.ranges[1].receipt]],
    );
    await assert.rejects(c.nextId("order"), ClosedError);
    await assert.rejects(c.snowflake(), ClosedError);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test("close resolves to the give-backs that failed, naming the tag, the server, the IDs and the answer", async () => {
  const store = new Store();
  let givebacksFail = false;
  const srv = await idServer({
    store,
    override: (req, res) => {
      if (givebacksFail && req.path.endsWith("/giveback")) {
        json(res, 503, { error: "the store failed: down for a test", status: 503 });
        return true;
      }
      return false;
    },
  });
  const ok = new Client({ servers: [srv.addr], minCount: 10, maxCount: 10, random: first });
  const failing = new Client({ servers: [srv.addr], minCount: 10, maxCount: 10, random: first });
  try {
    await ok.nextIds("order", 3);
    assert.deepEqual(await ok.close(), [], "everything went back");
    const [firstId] = await failing.nextIds("order", 3);
    givebacksFail = true;
    const failed = await failing.close();
    assert.equal(failed.length, 1, JSON.stringify(failed, (_, v) => (typeof v === "bigint" ? String(v) : v)));
    assert.equal(failed[0].tag, "order");
    assert.equal(failed[0].server, srv.url);
    assert.equal(failed[0].first, firstId + 3n);
    assert.equal(failed[0].last, firstId + 9n);
    assert.match(failed[0].answer, /503.*down for a test/);
    assert.equal(await failing.close(), failed, "a second close resolves to the first's");
  } finally {
    await srv.close();
  }
});

test("IDs above 2^53 are exact bigints (ranges and snowflakes near 2^63)", async () => {
  const start = 2n ** 63n - 2500n;
  const store = new Store(start, 2n ** 63n + 12345n);
  const srv = await idServer({ store });
  const c = new Client({ servers: [srv.addr], minCount: 1000, snowflakeBatch: 100 });
  try {
    const got: unknown[] = [];
    for (let k = 0; k < 2000; k++) got.push(await c.nextId("order"));
    got.push(...(await c.nextIds("order", 100)));
    const s = await c.nextIdString("order");
    const snow: unknown[] = [];
    for (let k = 0; k < 150; k++) snow.push(await c.snowflake());

    for (const v of [...got, ...snow]) assert.equal(typeof v, "bigint", "never a number");
    // Each equals the decimal the server meant, computed here with bigint arithmetic.
    got.forEach((v, k) => assert.equal(String(v), (start + BigInt(k)).toString()));
    assert.equal(s, (start + 2100n).toString());
    assert.equal(String(got[0]), "9223372036854773308");
    // A client that read the JSON numbers would have got rounded values like this one.
    assert.notEqual(String(BigInt(Number(got[1]))), String(got[1]));
    snow.forEach((v, k) => assert.equal(String(v), (2n ** 63n + 12345n + BigInt(k)).toString()));
  } finally {
    await c.close();
    await srv.close();
  }
});

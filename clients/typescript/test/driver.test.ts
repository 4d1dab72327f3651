import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { idServer } from "./fake";

// The driver is the package's own build output, as the fleet test runs it.
const DRIVER = path.resolve(__dirname, "../../dist/driver.js");

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [DRIVER, ...args], { env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

test("driver: THREADS tasks write their IDs, then one JSON line", async () => {
  const srv = await idServer();
  const dir = await mkdtemp(path.join(tmpdir(), "uidgen-driver-"));
  try {
    const out = path.join(dir, "out");
    const r = await run([srv.addr, "order", "4", "1500", out], { UIDGEN_TOKEN: "k3y-for-orders-0123456789" });
    assert.equal(r.code, 0, r.stderr);
    const line = JSON.parse(r.stdout.trim());
    assert.equal(line.ids, 6000);
    assert.equal(line.failovers, 0);
    assert.equal(typeof line.max_call_ms, "number");

    const all = new Set<string>();
    for (let t = 0; t < 4; t++) {
      const ids = (await readFile(`${out}.${t}`, "utf8")).trimEnd().split("\n");
      assert.equal(ids.length, 1500);
      for (let k = 1; k < ids.length; k++) assert.ok(BigInt(ids[k]) > BigInt(ids[k - 1]), "in the order taken, increasing");
      ids.forEach((id) => all.add(id));
      const snow = (await readFile(`${out}.${t}.snowflake`, "utf8")).trimEnd().split("\n");
      assert.equal(snow.length, 1000);
      for (let k = 1; k < snow.length; k++) assert.ok(BigInt(snow[k]) > BigInt(snow[k - 1]));
    }
    assert.equal(all.size, 6000, "distinct across tasks");
    for (const s of srv.seen) assert.equal(s.headers.authorization, "Bearer k3y-for-orders-0123456789");
    assert.ok(srv.store.givebacks.length >= 1, "closed, giving the unused IDs back");
  } finally {
    await rm(dir, { recursive: true, force: true });
    await srv.close();
  }
});

test("driver: a refusal goes to stderr with exit 1", async () => {
  const srv = await idServer();
  const dir = await mkdtemp(path.join(tmpdir(), "uidgen-driver-"));
  try {
    const r = await run([srv.addr, "missing", "2", "10", path.join(dir, "out")], {});
    assert.equal(r.code, 1);
    assert.match(r.stderr, /HTTP 404/);
    assert.equal(r.stdout, "");
  } finally {
    await rm(dir, { recursive: true, force: true });
    await srv.close();
  }
});

#!/usr/bin/env node
// The fleet test's driver (clients/PROTOCOL.md): DRIVER SERVERS TAG THREADS IDS_PER_THREAD OUT.
import { writeFile } from "node:fs/promises";
import { Client } from "./client";

const SNOWFLAKES_PER_TASK = 1000;

function count(name: string, s: string | undefined): number {
  const n = Number(s);
  if (s === undefined || !/^[0-9]+$/.test(s) || !Number.isSafeInteger(n)) throw new Error(`${name} must be a count, not ${s}`);
  return n;
}

async function main(argv: string[]): Promise<void> {
  if (argv.length !== 5) throw new Error("usage: driver SERVERS TAG THREADS IDS_PER_THREAD OUT");
  const [servers, tag, threadsArg, perArg, out] = argv;
  const threads = count("THREADS", threadsArg);
  const perTask = count("IDS_PER_THREAD", perArg);
  const token = process.env.UIDGEN_TOKEN;
  const client = new Client({ servers, token: token === "" ? undefined : token });
  let maxCallMs = 0;
  let total = 0;

  // Times each take alone, so max_call_ms is the longest any caller waited for one ID.
  const timed = async (take: () => Promise<bigint>): Promise<bigint> => {
    const t0 = performance.now();
    const id = await take();
    maxCallMs = Math.max(maxCallMs, performance.now() - t0);
    return id;
  };

  const task = async (t: number): Promise<void> => {
    const ids: string[] = [];
    for (let k = 0; k < perTask; k++) ids.push(String(await timed(() => client.nextId(tag))));
    total += ids.length;
    const snow: string[] = [];
    for (let k = 0; k < SNOWFLAKES_PER_TASK; k++) snow.push(String(await timed(() => client.snowflake())));
    await writeFile(`${out}.${t}`, ids.length ? ids.join("\n") + "\n" : "");
    await writeFile(`${out}.${t}.snowflake`, snow.join("\n") + "\n");
  };

  try {
    // All tasks start together, sharing the one client, as threads would.
    await Promise.all(Array.from({ length: threads }, (_, t) => task(t)));
  } finally {
    await client.close();
  }
  process.stdout.write(
    JSON.stringify({ ids: total, failovers: client.failovers, max_call_ms: Math.round(maxCallMs * 1000) / 1000 }) + "\n",
  );
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);

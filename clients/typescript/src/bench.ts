#!/usr/bin/env node
// Benchmark: the client's nextId against one fetch per ID, on a live uidgen service.
//
//   node dist/bench.js HOST:PORT [TAG] [CLIENT_IDS] [FETCH_IDS]
//
// Prints a markdown table: IDs/s (a loop without timers, after a warm-up) and the p50/p99 of
// one call (a separate loop timing each call with process.hrtime.bigint()), for
// (a) `await client.nextId(TAG)` and (b) one `fetch` GET /v1/segment/TAG (Accept: text/plain)
// per ID, each on a single async loop. The ratio column is IDs/s divided by (b)'s.
import { Client } from "./client";

type Take = () => Promise<bigint>;

function count(name: string, s: string | undefined, dflt: number): number {
  if (s === undefined) return dflt;
  const n = Number(s);
  if (!/^[0-9]+$/.test(s) || !Number.isSafeInteger(n) || n === 0) throw new Error(`${name} must be a positive count, not ${s}`);
  return n;
}

/** IDs per second over n awaited calls; nothing but the calls inside the loop. */
async function throughput(take: Take, n: number): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await take();
  return (n * 1e9) / Number(process.hrtime.bigint() - t0);
}

/** Nearest rank: the smallest sample with at least p of the samples at or below it. */
function percentile(sorted: BigInt64Array, p: number): bigint {
  return sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1];
}

/** p50 and p99 of one awaited call, in ns, over n calls each timed alone. */
async function latencies(take: Take, n: number): Promise<[bigint, bigint]> {
  const samples = new BigInt64Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await take();
    samples[i] = process.hrtime.bigint() - t0;
  }
  samples.sort();
  return [percentile(samples, 0.5), percentile(samples, 0.99)];
}

const us = (ns: bigint): string => (Number(ns) / 1000).toFixed(2);
const rate = (r: number): string => Math.round(r).toLocaleString("en-US");

async function main(argv: string[]): Promise<void> {
  if (argv.length < 1 || argv.length > 4) throw new Error("usage: bench HOST:PORT [TAG] [CLIENT_IDS] [FETCH_IDS]");
  const server = argv[0];
  const tag = argv[1] ?? "order";
  const clientIds = count("CLIENT_IDS", argv[2], 1_000_000);
  const fetchIds = count("FETCH_IDS", argv[3], 3_000);

  const client = new Client({ servers: server });
  let cRate: number;
  let cP50: bigint;
  let cP99: bigint;
  try {
    const takeClient: Take = () => client.nextId(tag);
    await throughput(takeClient, Math.min(clientIds, 20_000)); // warm-up: JIT, first ranges, growth
    cRate = await throughput(takeClient, clientIds);
    [cP50, cP99] = await latencies(takeClient, clientIds);
  } finally {
    await client.close();
  }

  const url = `${/^https?:\/\//.test(server) ? server : `http://${server}`}/v1/segment/${encodeURIComponent(tag)}`;
  const init = { headers: { accept: "text/plain" } };
  const takeFetch: Take = async () => {
    const res = await fetch(url, init);
    const body = await res.text(); // read to the end, so the connection is kept for the next request
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${body}`);
    return BigInt(body.trim());
  };
  await throughput(takeFetch, Math.min(fetchIds, 300)); // warm-up: the connection, the JIT
  const fRate = await throughput(takeFetch, fetchIds);
  const [fP50, fP99] = await latencies(takeFetch, fetchIds);

  const out = [
    `node ${process.version}, server ${server}, tag ${tag}; client loops ${clientIds} IDs, fetch loops ${fetchIds} IDs`,
    "",
    "| case | IDs/s | p50 µs | p99 µs | IDs/s ratio vs (b) |",
    "|---|---:|---:|---:|---|",
    `| (a) \`await client.nextId\` | ${rate(cRate)} | ${us(cP50)} | ${us(cP99)} | ×${rate(cRate / fRate)} |`,
    `| (b) one \`fetch\` per ID (keep-alive) | ${rate(fRate)} | ${us(fP50)} | ${us(fP99)} | ×1 |`,
  ];
  process.stdout.write(out.join("\n") + "\n");
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);

// Fake uidgen servers on 127.0.0.1 ephemeral ports, speaking the calls of clients/PROTOCOL.md.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  server: string;
}

export interface Fake {
  url: string;
  /** `127.0.0.1:PORT`, as a client is usually given it. */
  addr: string;
  seen: Seen[];
  close(): Promise<void>;
}

export type Handler = (req: Seen, res: http.ServerResponse) => void;

export function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
}

export async function fakeServer(handler: Handler): Promise<Fake> {
  const seen: Seen[] = [];
  let url = "";
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    const s: Seen = { method: req.method ?? "", path: u.pathname, query: u.searchParams, headers: req.headers, server: url };
    seen.push(s);
    req.resume();
    req.on("end", () => handler(s, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  url = `http://127.0.0.1:${port}`;
  return {
    url,
    addr: `127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        // Keep-alive and hanging connections would otherwise hold close() open.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on: connections to it are refused. */
export async function closedPort(): Promise<string> {
  const f = await fakeServer(() => {});
  await f.close();
  return f.addr;
}

/** The store behind one or more fake ID servers: every range is above every earlier one. */
export class Store {
  next = new Map<string, bigint>();
  ranges: { tag: string; first: bigint; last: bigint; count: number; server: string; receipt: string }[] = [];
  givebacks: { tag: string; first: bigint; receipt: string; server: string }[] = [];
  snowNext: bigint;
  constructor(
    readonly start: bigint = 1n,
    snowStart: bigint = 1000n,
  ) {
    this.snowNext = snowStart;
  }
}

export interface IdOptions {
  store?: Store;
  /** Milliseconds before each range answer, so fetches overlap with callers. */
  delayMs?: number;
  /** Answers this instead, where it returns true. */
  override?: (req: Seen, res: http.ServerResponse) => boolean;
  tags?: string[];
}

/** A fake ID server: ranges, give-backs and snowflake IDs, with JSON numbers that lose precision as real JSON does. */
export async function idServer(opts: IdOptions = {}): Promise<Fake & { store: Store }> {
  const store = opts.store ?? new Store();
  const tags = opts.tags ?? ["order"];
  const f = await fakeServer((req, res) => {
    if (opts.override?.(req, res)) return;
    const m = /^\/v1\/segment\/([^/]+)\/(range|giveback)$/.exec(req.path);
    if (m && req.method === "POST") {
      const tag = decodeURIComponent(m[1]);
      if (!tags.includes(tag)) return json(res, 404, { error: `no tag ${tag}`, status: 404 });
      if (m[2] === "range") {
        const count = Number(req.query.get("count"));
        const first = store.next.get(tag) ?? store.start;
        const last = first + BigInt(count) - 1n;
        store.next.set(tag, last + 1n);
        const receipt = `r${store.ranges.length}@${f.url}`;
        store.ranges.push({ tag, first, last, count, server: f.url, receipt });
        const body =
          `{"tag":${JSON.stringify(tag)},"count":${count},"first":${first},"last":${last},` +
          `"first_str":"${first}","last_str":"${last}","receipt":${JSON.stringify(receipt)}}`;
        setTimeout(() => json(res, 200, body), opts.delayMs ?? 0);
        return;
      }
      store.givebacks.push({ tag, first: BigInt(req.query.get("first") ?? "-1"), receipt: req.query.get("receipt") ?? "", server: f.url });
      return json(res, 200, { tag, given_back: true });
    }
    if (req.path === "/v1/snowflake" && req.method === "GET") {
      const count = Number(req.query.get("count"));
      const ids: bigint[] = [];
      for (let k = 0; k < count; k++) ids.push(store.snowNext++);
      // The raw numbers are written as JSON numbers, exactly as a server would: above 2^53 they round when parsed.
      const body = `{"count":${count},"ids":[${ids.join(",")}],"ids_str":[${ids.map((i) => `"${i}"`).join(",")}]}`;
      return json(res, 200, body);
    }
    json(res, 404, { error: "no route", status: 404 });
  });
  return Object.assign(f, { store });
}

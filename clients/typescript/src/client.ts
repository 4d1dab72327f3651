import { ClosedError, GivebackFailure, RefusedError, ServerFailure, UnavailableError } from "./errors";

export interface ClientOptions {
  /** `host:port` or `http(s)://…` base URLs; a string may hold several, comma-separated. */
  servers: string[] | string;
  /** Sent as `Authorization: Bearer TOKEN` with every request. */
  token?: string;
  /** Time allowed for one request to one server, answer included (default 2000). */
  timeoutMs?: number;
  /** How long a server that failed is tried only after the others (default 5000). */
  retryAfterMs?: number;
  /** First and smallest range size (default 1000). */
  minCount?: number;
  /** Largest range size; keep it at or below the service's max_count (default 100000). */
  maxCount?: number;
  /** Share of the current range handed out before the next is fetched (default 0.5). */
  prefetchShare?: number;
  /** A range used up faster than this doubles the next; one lasting twice as long halves it (default 10). */
  targetSeconds?: number;
  /** Snowflake IDs fetched per request (default 1000). */
  snowflakeBatch?: number;
  /** A snowflake ID older than this after its batch arrived is dropped (default 1000). */
  validityMs?: number;
  /** Monotonic clock in milliseconds; injectable so tests can control time. */
  now?: () => number;
  /** Picks the first server; injectable so tests can be deterministic. */
  random?: () => number;
}

/** A range held by the client: `next..=last` are still to be handed out. */
interface Held {
  first: bigint;
  last: bigint;
  next: bigint;
  /** `next` at or past this starts the background fetch of the following range. */
  prefetchAt: bigint;
  receipt: string | undefined;
  /** The server that handed it out: the only one a give-back may go to. */
  server: string;
  /** When it became the current range, for sizing the ranges that follow. */
  startedAt: number;
}

interface TagState {
  current: Held | undefined;
  next: Held | undefined;
  /** The one fetch in flight for this tag, shared by every waiter. */
  fetching: Promise<void> | undefined;
  count: number;
}

interface SnowBatch {
  ids: bigint[];
  i: number;
  arrivedAt: number;
}

type Attempt<T> =
  | { kind: "ok"; value: T }
  | { kind: "failed"; answer: string }
  | { kind: "refused"; error: RefusedError };

const DIGITS = /^[0-9]+$/;

/** Reads a decimal ID from the server's string field; JSON numbers above 2^53 would be rounded. */
function idFrom(body: Record<string, unknown>, field: string): bigint {
  const v = body[field];
  if (typeof v !== "string" || !DIGITS.test(v)) throw new Error(`no decimal ${field} in the answer`);
  return BigInt(v);
}

function baseUrl(s: string): string {
  const t = s.trim().replace(/\/+$/, "");
  if (t === "") throw new Error("an empty server address");
  return /^https?:\/\//i.test(t) ? t : `http://${t}`;
}

function positiveInt(name: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer, not ${v}`);
  return v;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A client of the uidgen ID service. One client serves any number of concurrent callers:
 * IDs come from ranges held in memory, so most calls resolve without a request.
 */
export class Client {
  /** How many times a call moved on from a failed server to another. */
  failovers = 0;

  private readonly servers: string[];
  private readonly downUntil: number[];
  private cursor: number;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly retryAfterMs: number;
  private readonly minCount: number;
  private readonly maxCount: number;
  private readonly prefetchShare: number;
  private readonly targetMs: number;
  private readonly snowflakeBatch: number;
  private readonly validityMs: number;
  private readonly now: () => number;

  private readonly tags = new Map<string, TagState>();
  private snow: SnowBatch | undefined;
  private snowFetching: Promise<void> | undefined;
  private closed = false;
  private closing: Promise<GivebackFailure[]> | undefined;

  constructor(options: ClientOptions) {
    const list = typeof options.servers === "string" ? options.servers.split(",") : options.servers;
    this.servers = list.filter((s) => s.trim() !== "").map(baseUrl);
    if (this.servers.length === 0) throw new Error("no uidgen server given");
    this.downUntil = this.servers.map(() => -Infinity);
    const random = options.random ?? Math.random;
    // A random start spreads many clients over the servers.
    this.cursor = Math.min(this.servers.length - 1, Math.floor(random() * this.servers.length));
    this.headers = { accept: "application/json" };
    if (options.token !== undefined) this.headers.authorization = `Bearer ${options.token}`;
    this.timeoutMs = positiveInt("timeoutMs", options.timeoutMs ?? 2000);
    this.retryAfterMs = options.retryAfterMs ?? 5000;
    this.minCount = positiveInt("minCount", options.minCount ?? 1000);
    this.maxCount = positiveInt("maxCount", options.maxCount ?? 100_000);
    if (this.maxCount < this.minCount) throw new RangeError("maxCount must be at least minCount");
    this.prefetchShare = options.prefetchShare ?? 0.5;
    if (!(this.prefetchShare >= 0 && this.prefetchShare <= 1)) throw new RangeError("prefetchShare must be from 0 to 1");
    this.targetMs = (options.targetSeconds ?? 10) * 1000;
    this.snowflakeBatch = positiveInt("snowflakeBatch", options.snowflakeBatch ?? 1000);
    this.validityMs = options.validityMs ?? 1000;
    this.now = options.now ?? (() => performance.now());
  }

  /** The next ID of a segment tag. */
  nextId(tag: string): Promise<bigint> {
    if (this.closed) return Promise.reject(new ClosedError());
    const st = this.state(tag);
    const id = this.take(tag, st);
    // The fast path: no await, so concurrent callers never interleave inside it.
    if (id !== undefined) return Promise.resolve(id);
    return this.nextIdSlow(tag, st);
  }

  /** `n` IDs of a segment tag, increasing. */
  nextIds(tag: string, n: number): Promise<bigint[]> {
    if (!Number.isSafeInteger(n) || n < 0) return Promise.reject(new RangeError(`n must be a count, not ${n}`));
    if (this.closed) return Promise.reject(new ClosedError());
    const st = this.state(tag);
    const out: bigint[] = [];
    while (out.length < n) {
      const id = this.take(tag, st);
      if (id === undefined) return this.nextIdsSlow(tag, st, n, out);
      out.push(id);
    }
    return Promise.resolve(out);
  }

  /** The next ID of a segment tag as a decimal string. */
  nextIdString(tag: string): Promise<string> {
    return this.nextId(tag).then(String);
  }

  /** A snowflake ID, from a batch no older than `validityMs`. */
  snowflake(): Promise<bigint> {
    if (this.closed) return Promise.reject(new ClosedError());
    const id = this.takeSnow();
    if (id !== undefined) return Promise.resolve(id);
    return this.snowflakeSlow();
  }

  /**
   * Hands nothing out from now on and gives the unused IDs back to the servers that handed
   * them out. Resolves (never rejects) to the give-backs that failed, each only a gap in its
   * tag's IDs: empty when everything went back. A second call resolves to the first's.
   */
  close(): Promise<GivebackFailure[]> {
    if (this.closing) return this.closing;
    this.closed = true;
    this.snow = undefined;
    this.closing = (async () => {
      // A range still on its way must be given back too, so let it land first.
      await Promise.allSettled([...this.tags.values()].map((st) => st.fetching));
      await Promise.allSettled([this.snowFetching]);
      const jobs: Promise<(GivebackFailure | undefined)[]>[] = [];
      for (const [tag, st] of this.tags) {
        const next = st.next;
        const current = st.current;
        st.next = undefined;
        st.current = undefined;
        jobs.push(
          (async () => {
            // The next range first: only the tag's latest range can go back to the store.
            const failed = [next && (await this.giveBack(tag, next, next.first))];
            // The tail only to the process that took the next range back (or when there
            // is none): after another process's range went back, it would sit below what
            // that process last handed out, which its data-loss check takes for a store
            // that went back.
            if (current && (!next || next.server === current.server)) {
              failed.push(await this.giveBack(tag, current, current.next));
            }
            return failed;
          })(),
        );
      }
      const failed = (await Promise.all(jobs)).flat();
      return failed.filter((f): f is GivebackFailure => f !== undefined);
    })();
    return this.closing;
  }

  private state(tag: string): TagState {
    let st = this.tags.get(tag);
    if (!st) {
      if (typeof tag !== "string" || tag === "") throw new TypeError("a tag must be a non-empty string");
      st = { current: undefined, next: undefined, fetching: undefined, count: this.minCount };
      this.tags.set(tag, st);
    }
    return st;
  }

  /** Takes one ID synchronously, or answers undefined when none is held. */
  private take(tag: string, st: TagState): bigint | undefined {
    if (!st.current) this.promote(st);
    const cur = st.current;
    if (!cur) return undefined;
    const id = cur.next++;
    if (cur.next > cur.last) {
      this.resize(st, cur);
      st.current = undefined;
      this.promote(st);
    }
    if (!st.next && !st.fetching && !this.closed) {
      const c = st.current;
      if (!c || c.next >= c.prefetchAt) this.startFetch(tag, st);
    }
    return id;
  }

  private promote(st: TagState): void {
    if (!st.next) return;
    st.current = st.next;
    st.current.startedAt = this.now();
    st.next = undefined;
  }

  /** Follows the rate: the size of later requests doubles or halves with how long a range lasted. */
  private resize(st: TagState, used: Held): void {
    const lasted = this.now() - used.startedAt;
    if (lasted < this.targetMs) st.count = Math.min(st.count * 2, this.maxCount);
    else if (lasted > 2 * this.targetMs) st.count = Math.max(Math.floor(st.count / 2), this.minCount);
  }

  private startFetch(tag: string, st: TagState): Promise<void> {
    const count = st.count;
    const p = (async () => {
      try {
        st.next = await this.fetchRange(tag, count);
      } finally {
        st.fetching = undefined;
      }
    })();
    st.fetching = p;
    // A failed prefetch is not lost: the next caller short of IDs fetches again and sees the error.
    p.catch(() => {});
    return p;
  }

  private async nextIdSlow(tag: string, st: TagState): Promise<bigint> {
    for (;;) {
      if (this.closed) throw new ClosedError();
      const id = this.take(tag, st);
      if (id !== undefined) return id;
      await (st.fetching ?? this.startFetch(tag, st));
    }
  }

  private async nextIdsSlow(tag: string, st: TagState, n: number, out: bigint[]): Promise<bigint[]> {
    while (out.length < n) out.push(await this.nextIdSlow(tag, st));
    return out;
  }

  private fetchRange(tag: string, count: number): Promise<Held> {
    const path = `/v1/segment/${encodeURIComponent(tag)}/range?count=${count}`;
    return this.call("POST", path, (body, server) => {
      const first = idFrom(body, "first_str");
      const last = idFrom(body, "last_str");
      if (last < first) throw new Error("last_str below first_str");
      const size = last - first + 1n;
      const share = BigInt(Math.ceil(Number(size) * this.prefetchShare));
      return {
        first,
        last,
        next: first,
        prefetchAt: first + share,
        receipt: typeof body.receipt === "string" ? body.receipt : undefined,
        server,
        startedAt: this.now(),
      };
    });
  }

  private takeSnow(): bigint | undefined {
    const b = this.snow;
    if (!b) return undefined;
    // Dropping stale IDs keeps snowflake IDs near the time they are handed out.
    if (b.i >= b.ids.length || this.now() - b.arrivedAt > this.validityMs) {
      this.snow = undefined;
      return undefined;
    }
    return b.ids[b.i++];
  }

  private async snowflakeSlow(): Promise<bigint> {
    for (;;) {
      if (this.closed) throw new ClosedError();
      const id = this.takeSnow();
      if (id !== undefined) return id;
      if (!this.snowFetching) {
        const p = (async () => {
          try {
            const ids = await this.call("GET", `/v1/snowflake?count=${this.snowflakeBatch}`, (body) => {
              const strs = body.ids_str;
              if (!Array.isArray(strs) || strs.length === 0) throw new Error("no ids_str in the answer");
              return strs.map((s) => {
                if (typeof s !== "string" || !DIGITS.test(s)) throw new Error("an ids_str entry that is not decimal");
                return BigInt(s);
              });
            });
            this.snow = { ids, i: 0, arrivedAt: this.now() };
          } finally {
            this.snowFetching = undefined;
          }
        })();
        this.snowFetching = p;
        p.catch(() => {});
      }
      await this.snowFetching;
    }
  }

  /** Servers to try for one call: from the last good one on, those that failed lately last. */
  private order(): number[] {
    const n = this.servers.length;
    const now = this.now();
    const up: number[] = [];
    const down: number[] = [];
    for (let k = 0; k < n; k++) {
      const i = (this.cursor + k) % n;
      (this.downUntil[i] > now ? down : up).push(i);
    }
    return up.concat(down);
  }

  private async call<T>(
    method: string,
    path: string,
    parse: (body: Record<string, unknown>, server: string) => T,
  ): Promise<T> {
    const failures: ServerFailure[] = [];
    let pause = 50;
    const order = this.order();
    for (let k = 0; k < order.length; k++) {
      const i = order[k];
      if (k > 0) {
        this.failovers++;
        await sleep(pause);
        pause = Math.min(pause * 2, 1000);
      }
      const server = this.servers[i];
      const r = await this.attempt(method, server, path, parse);
      if (r.kind === "ok") {
        this.cursor = i;
        this.downUntil[i] = -Infinity;
        return r.value;
      }
      if (r.kind === "refused") throw r.error;
      failures.push({ server, answer: r.answer });
      this.downUntil[i] = this.now() + this.retryAfterMs;
    }
    throw new UnavailableError(`${method} ${path}`, failures);
  }

  /** One request to one server, bounded by timeoutMs from the start to the end of the answer. */
  private async attempt<T>(
    method: string,
    server: string,
    path: string,
    parse: (body: Record<string, unknown>, server: string) => T,
  ): Promise<Attempt<T>> {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), this.timeoutMs);
    try {
      const res = await fetch(server + path, { method, headers: this.headers, signal: ac.signal });
      const text = await res.text();
      let body: Record<string, unknown> | undefined;
      try {
        const parsed: unknown = JSON.parse(text);
        if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
      } catch {
        body = undefined;
      }
      const error = typeof body?.error === "string" ? body.error : text.slice(0, 200);
      if (res.status >= 400 && res.status < 500 && res.status !== 408) {
        const limit = typeof body?.limit === "string" ? body.limit : undefined;
        return { kind: "refused", error: new RefusedError(res.status, error, limit, server) };
      }
      if (!res.ok) return { kind: "failed", answer: `HTTP ${res.status}${error ? `: ${error}` : ""}` };
      if (!body) return { kind: "failed", answer: "an answer that is not a JSON object" };
      try {
        return { kind: "ok", value: parse(body, server) };
      } catch (e) {
        return { kind: "failed", answer: `a bad answer: ${(e as Error).message}` };
      }
    } catch (e) {
      if (ac.signal.aborted) return { kind: "failed", answer: `no answer within ${this.timeoutMs} ms` };
      return { kind: "failed", answer: describe(e) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Offers `first..=last` back to the server that handed the range out; what failed, if it did (only a gap). */
  private async giveBack(tag: string, range: Held, first: bigint): Promise<GivebackFailure | undefined> {
    if (range.receipt === undefined || first > range.last) return undefined;
    const path =
      `/v1/segment/${encodeURIComponent(tag)}/giveback` +
      `?first=${first}&receipt=${encodeURIComponent(range.receipt)}`;
    const r = await this.attempt("POST", range.server, path, () => undefined);
    if (r.kind === "ok") return undefined;
    const answer = r.kind === "refused" ? r.error.message : r.answer;
    return { tag, server: range.server, first, last: range.last, answer };
  }
}

/** Names what went wrong with a request that got no answer, such as ECONNREFUSED. */
function describe(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return cause.code === "ECONNREFUSED" ? "connection refused" : cause.code;
  if (cause?.message) return cause.message;
  return e instanceof Error ? e.message : String(e);
}

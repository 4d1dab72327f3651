/** The service refused the call (a 4xx other than 408): the caller's mistake, so never retried. */
export class RefusedError extends Error {
  override readonly name = "RefusedError";
  constructor(
    /** The HTTP status, such as 401, 403, 404 or 400. */
    readonly status: number,
    /** The service's `error` text. */
    readonly error: string,
    /** The service's `limit`, where the refusal has one. */
    readonly limit: string | undefined,
    /** The base URL of the server that refused. */
    readonly server: string,
  ) {
    super(`${server} refused (HTTP ${status}): ${error}${limit !== undefined ? ` (limit: ${limit})` : ""}`);
  }
}

/** What one server answered (or failed to) during a call that found no server able to answer. */
export interface ServerFailure {
  server: string;
  answer: string;
}

/** Every server failed once in the same call. */
export class UnavailableError extends Error {
  override readonly name = "UnavailableError";
  constructor(
    /** The request, as `METHOD /path`. */
    readonly request: string,
    readonly failures: ServerFailure[],
  ) {
    super(
      `no uidgen server could answer ${request}: ` +
        failures.map((f) => `${f.server} (${f.answer})`).join(", "),
    );
  }
}

/** A call made on (or waiting in) a client that has been closed. */
export class ClosedError extends Error {
  override readonly name = "ClosedError";
  constructor() {
    super("the uidgen client is closed");
  }
}

/** A give-back `close()` could not make: the IDs `first..=last` of `tag` are only a gap, never handed out. */
export interface GivebackFailure {
  tag: string;
  /** The base URL of the server that handed the range out (only it can take it back). */
  server: string;
  first: bigint;
  last: bigint;
  /** What the server answered, or why there was no answer. */
  answer: string;
}

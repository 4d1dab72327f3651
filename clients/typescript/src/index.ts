export { Client } from "./client";
export type { ClientOptions } from "./client";
export { RefusedError, UnavailableError, ClosedError } from "./errors";
export type { GivebackFailure, ServerFailure } from "./errors";

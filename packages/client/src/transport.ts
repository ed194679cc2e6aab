// One HTTP request to Parley as both families make it: the credential's headers, JSON or multipart bodies,
// errors as ParleyError, 429 and 503 retried after Retry-After (bounded), and an expired session token
// refreshed once through the caller's callback. Uses only fetch, so it runs in browsers and Node alike.
import { ParleyError } from './errors.ts';

/** The longest wait for one retry; a server asking for longer is answered with its error instead. */
export const MAX_RETRY_WAIT_MS = 30_000;
export const DEFAULT_MAX_RETRIES = 2;

export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

export interface Credentials {
  /** The headers that authenticate a request (read again on each attempt: a refresh changes them). */
  headers(): Record<string, string>;
  /** Replaces an expired credential; called at most once per request, on 401 session_token_expired. */
  refresh?(): Promise<void>;
}

export interface TransportOptions {
  baseUrl: string;
  credentials: Credentials;
  /** Default: the global fetch. */
  fetch?: Fetch | undefined;
  /** Retries of one request on 429, 503 or (when it is safe) a network failure. Default 2. */
  maxRetries?: number | undefined;
}

export type Query = Record<string, string | number | boolean | null | undefined>;

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query | undefined;
  /** A JSON body. */
  json?: unknown;
  /** A multipart body. */
  form?: FormData | undefined;
  headers?: Record<string, string> | undefined;
  accept?: string;
  /**
   * Whether repeating the request cannot do it twice (reads, upserts, terminate, a send with its
   * Idempotency-Key): then a network failure and every 503 are retried too. Otherwise only answers that
   * refused the request before any work (429, 503 shard_moving or service_unavailable) are.
   */
  idempotent: boolean;
  /** Network failures are thrown at once, as `network_error` (the caller reconnects on its own terms). */
  noNetworkRetry?: boolean;
  signal?: AbortSignal | undefined;
}

/** 503 codes that mean the request was refused before anything was done. */
const REFUSED_503 = new Set(['shard_moving', 'service_unavailable']);

export class Transport {
  readonly #base: string;
  readonly #credentials: Credentials;
  readonly #fetch: Fetch;
  readonly maxRetries: number;

  constructor(options: TransportOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, '');
    this.#credentials = options.credentials;
    const given = options.fetch;
    // Called as a plain function: a browser's fetch refuses to run as a method of another object.
    this.#fetch = given
      ? (input, init) => given(input, init)
      : (input, init) => globalThis.fetch(input, init);
    this.maxRetries = countOption(options.maxRetries, DEFAULT_MAX_RETRIES);
  }

  url(path: string, query?: Query): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null) params.set(key, String(value));
    }
    const search = params.toString();
    return `${this.#base}${path}${search ? `?${search}` : ''}`;
  }

  /** The successful answer to `spec`, after the retries it allows; a refusal throws its ParleyError. */
  async request(spec: RequestSpec): Promise<Response> {
    const url = this.url(spec.path, spec.query);
    const body = spec.form ?? (spec.json === undefined ? undefined : JSON.stringify(spec.json));
    let retries = 0;
    let refreshed = false;
    for (;;) {
      spec.signal?.throwIfAborted();
      const headers: Record<string, string> = {
        accept: spec.accept ?? 'application/json',
        ...this.#credentials.headers(),
        ...spec.headers,
      };
      if (spec.json !== undefined) headers['content-type'] = 'application/json';
      let response: Response;
      try {
        response = await this.#fetch(url, {
          method: spec.method,
          headers,
          body,
          ...(spec.signal ? { signal: spec.signal } : {}),
        });
      } catch (err) {
        spec.signal?.throwIfAborted();
        if (spec.idempotent && !spec.noNetworkRetry && retries < this.maxRetries) {
          retries++;
          await sleep(backoffMs(retries), spec.signal);
          continue;
        }
        throw networkError(err);
      }
      if (response.ok) return response;
      const error = await ParleyError.fromResponse(response);
      if (error.code === 'session_token_expired' && !refreshed && this.#credentials.refresh) {
        refreshed = true;
        await this.#credentials.refresh();
        continue;
      }
      const wait = this.#retryWait(error, spec, retries);
      if (wait === null) throw error;
      retries++;
      await sleep(wait, spec.signal);
    }
  }

  /** The JSON of the successful answer to `spec`. */
  async json<T>(spec: RequestSpec): Promise<T> {
    const response = await this.request(spec);
    return (await response.json()) as T;
  }

  /** How long to wait before retrying after `error`, or null when it is not retried. */
  #retryWait(error: ParleyError, spec: RequestSpec, retries: number): number | null {
    if (retries >= this.maxRetries) return null;
    const retried =
      error.status === 429 || (error.status === 503 && (spec.idempotent || REFUSED_503.has(error.code)));
    if (!retried) return null;
    if (error.retryAfterSeconds === undefined) return backoffMs(retries + 1);
    const ms = error.retryAfterSeconds * 1000;
    return ms > MAX_RETRY_WAIT_MS ? null : ms;
  }
}

/**
 * A count given as an option: a finite number is rounded down to at least 0; anything else (NaN from a
 * parsed attribute, Infinity, nothing) is the default, so that a bad value never means "retry forever".
 */
export function countOption(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) ? Math.max(0, Math.floor(value)) : fallback;
}

/** 0.5 s, 1 s, 2 s, … up to 8 s: the wait before the `attempt`-th retry when the server names none. */
export const backoffMs = (attempt: number) => Math.min(500 * 2 ** (attempt - 1), 8000);

export function networkError(cause: unknown): ParleyError {
  return new ParleyError({
    status: 0,
    code: 'network_error',
    errorName: 'NetworkError',
    message: `The request did not get an answer: ${cause instanceof Error ? cause.message : String(cause)}`,
    cause,
  });
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const done = () => {
      signal?.removeEventListener('abort', abort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/** A path segment from an id (ids never need it, but a caller's typo must not name another route). */
export const seg = (id: string) => encodeURIComponent(id);

// ParleyError: every refusal the client meets, built from the server's error envelope (or its 422 body), so
// that a caller reads one shape: status, code, name, the 422 detail, Retry-After and the request id.
import type { ErrorBody, ValidationIssue } from './types.ts';

export interface ParleyErrorInit {
  status: number;
  code: string;
  errorName: string;
  message: string;
  context?: Record<string, unknown>;
  detail?: ValidationIssue[];
  retryAfterSeconds?: number;
  requestId?: string;
  cause?: unknown;
}

export class ParleyError extends Error {
  /** The HTTP status; 0 when no answer came (the network failed, or a stream could not be resumed). */
  readonly status: number;
  /** The catalogue code (`session_closed`, `rate_limited`, …); `validation_error` for a 422; `network_error`, `stream_interrupted` or `invalid_response` from the client itself. */
  readonly code: string;
  /** The catalogue name (`SessionClosedError`, …). */
  readonly errorName: string;
  /** The envelope's `error.context`, where the server gives one. */
  readonly context: Record<string, unknown> | undefined;
  /** A 422's `detail`: `{ loc, msg, type }` for each refused field. */
  readonly detail: ValidationIssue[] | undefined;
  /** What Retry-After (or the error's `retry_after_seconds`) asked for. */
  readonly retryAfterSeconds: number | undefined;
  /** The server's request id (X-Request-Id), to find the request in its log. */
  readonly requestId: string | undefined;

  constructor(init: ParleyErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'ParleyError';
    this.status = init.status;
    this.code = init.code;
    this.errorName = init.errorName;
    this.context = init.context;
    this.detail = init.detail;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.requestId = init.requestId;
  }

  /** The error a non-2xx answer carries; reads (and so consumes) its body. */
  static async fromResponse(response: Response): Promise<ParleyError> {
    const status = response.status;
    const requestId = response.headers.get('x-request-id') ?? undefined;
    const retryAfter = retryAfterSeconds(response.headers.get('retry-after'));
    let body: unknown;
    try {
      body = JSON.parse(await response.text());
    } catch {
      body = undefined;
    }
    if (isValidationBody(body)) {
      return new ParleyError({
        status,
        code: 'validation_error',
        errorName: 'ValidationError',
        message: body.detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ') || 'Invalid request',
        detail: body.detail,
        retryAfterSeconds: retryAfter,
        requestId,
      });
    }
    if (isEnvelope(body)) {
      const { error } = body;
      const fromBody = error.context?.retry_after_seconds;
      return new ParleyError({
        status,
        code: error.code,
        errorName: error.name,
        message: error.message,
        context: error.context,
        retryAfterSeconds: retryAfter ?? (typeof fromBody === 'number' ? fromBody : undefined),
        requestId: body.request_id ?? requestId,
      });
    }
    return new ParleyError({
      status,
      code: 'invalid_response',
      errorName: 'InvalidResponseError',
      message: `HTTP ${status} without an error body`,
      retryAfterSeconds: retryAfter,
      requestId,
    });
  }
}

/** Retry-After as seconds: a number of seconds or an HTTP date. */
export function retryAfterSeconds(header: string | null): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function isValidationBody(body: unknown): body is { detail: ValidationIssue[] } {
  return isObject(body) && Array.isArray(body.detail);
}

function isEnvelope(body: unknown): body is ErrorBody {
  return (
    isObject(body) &&
    isObject(body.error) &&
    typeof body.error.code === 'string' &&
    typeof body.error.name === 'string' &&
    typeof body.error.message === 'string'
  );
}

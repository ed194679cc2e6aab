// The one error catalogue: every error the service answers with has a stable snake_case code,
// a PascalCase name and an HTTP status here. docs/reference/errors.md lists every code (a test checks).

interface ErrorSpec {
  readonly status: number;
  readonly name: string;
  readonly message: string;
}

export const errorCatalogue = {
  bad_request: { status: 400, name: 'BadRequestError', message: 'The request could not be read.' },
  unauthorized: { status: 401, name: 'UnauthorizedError', message: 'Authentication is required.' },
  invalid_api_key: { status: 401, name: 'InvalidApiKeyError', message: 'The API key is unknown or revoked.' },
  session_token_invalid: {
    status: 401,
    name: 'SessionTokenInvalidError',
    message: 'The session token is invalid.',
  },
  session_token_expired: {
    status: 401,
    name: 'SessionTokenExpiredError',
    message: 'The session token has expired; refresh it with POST /v1/agents/conversations/{id}/token.',
  },
  forbidden: { status: 403, name: 'ForbiddenError', message: 'Not allowed for this resource.' },
  agent_forbidden: {
    status: 403,
    name: 'AgentForbiddenError',
    message: 'The API key is not allowed to use this agent.',
  },
  role_not_allowed: { status: 403, name: 'RoleNotAllowedError', message: 'This role may not be sent here.' },
  handoff_not_allowed: {
    status: 403,
    name: 'HandoffNotAllowedError',
    message: "This agent's conversations may not ask for a human.",
  },
  not_found: { status: 404, name: 'NotFoundError', message: 'No such route.' },
  agent_not_found: { status: 404, name: 'AgentNotFoundError', message: 'No such agent.' },
  user_not_found: { status: 404, name: 'UserNotFoundError', message: 'No such user.' },
  budget_not_found: { status: 404, name: 'BudgetNotFoundError', message: 'No budget is set here.' },
  session_not_found: { status: 404, name: 'SessionNotFoundError', message: 'No such session.' },
  conversation_not_found: {
    status: 404,
    name: 'ConversationNotFoundError',
    message: 'No such conversation.',
  },
  message_not_found: { status: 404, name: 'MessageNotFoundError', message: 'No such message.' },
  turn_not_found: { status: 404, name: 'TurnNotFoundError', message: 'No such turn in this session.' },
  response_not_found: { status: 404, name: 'ResponseNotFoundError', message: 'No such response.' },
  file_not_found: { status: 404, name: 'FileNotFoundError', message: 'No such file.' },
  webhook_not_found: { status: 404, name: 'WebhookNotFoundError', message: 'No such webhook endpoint.' },
  user_reference_conflict: {
    status: 409,
    name: 'UserReferenceConflictError',
    message: 'A user with this reference already exists.',
  },
  webhook_limit_reached: {
    status: 409,
    name: 'WebhookLimitReachedError',
    message: 'The tenant has as many webhook endpoints as allowed; delete one first.',
  },
  session_closed: { status: 409, name: 'SessionClosedError', message: 'The session is closed.' },
  session_expired: { status: 409, name: 'SessionExpiredError', message: 'The session has expired.' },
  session_busy: {
    status: 409,
    name: 'SessionBusyError',
    message: 'Too many messages are waiting for this session; retry shortly.',
  },
  session_message_limit_reached: {
    status: 409,
    name: 'SessionMessageLimitReachedError',
    message: 'The session has reached its message limit.',
  },
  approval_not_pending: {
    status: 409,
    name: 'ApprovalNotPendingError',
    message: 'This tool call is not waiting for a decision.',
  },
  approval_pending: {
    status: 409,
    name: 'ApprovalPendingError',
    message: 'A turn of this session waits for decisions on its tool calls; decide or cancel it first.',
  },
  approval_forbidden: {
    status: 403,
    name: 'ApprovalForbiddenError',
    message: 'Only the integrator (an API key) may decide this tool call.',
  },
  headers_too_large: {
    status: 431,
    name: 'HeadersTooLargeError',
    message: 'The request headers are too large.',
  },
  request_timeout: {
    status: 408,
    name: 'RequestTimeoutError',
    message: 'The request was not received in time.',
  },
  idempotency_key_reused: {
    status: 409,
    name: 'IdempotencyKeyReusedError',
    message: 'This Idempotency-Key was used with a different request.',
  },
  payload_too_large: { status: 413, name: 'PayloadTooLargeError', message: 'The request body is too large.' },
  file_too_large: { status: 413, name: 'FileTooLargeError', message: 'The file is too large.' },
  conversation_file_quota: {
    status: 413,
    name: 'ConversationFileQuotaError',
    message: 'The conversation has no room for this file (too many files or bytes).',
  },
  tenant_file_quota: {
    status: 413,
    name: 'TenantFileQuotaError',
    message: "The tenant's files would exceed its storage quota; delete some first.",
  },
  unsupported_media_type: {
    status: 415,
    name: 'UnsupportedMediaTypeError',
    message: 'This media type is not supported here.',
  },
  shard_not_owned: {
    status: 421,
    name: 'MisdirectedRequestError',
    message: 'This process does not own the session; ask the owner.',
  },
  host_not_allowed: {
    status: 421,
    name: 'HostNotAllowedError',
    message: 'This service does not answer for the host this request names.',
  },
  event_stream_limit: {
    status: 429,
    name: 'EventStreamLimitError',
    message: 'Too many event streams are open on this conversation; close one, or retry after Retry-After.',
  },
  rate_limited: {
    status: 429,
    name: 'RateLimitExceededError',
    message: 'Rate limit exceeded; retry after the time in Retry-After.',
  },
  budget_exceeded: {
    status: 429,
    name: 'BudgetExceededError',
    message: "The end-user's usage budget for this period is spent; retry after the time in Retry-After.",
  },
  internal_error: { status: 500, name: 'InternalServerError', message: 'Something went wrong on our side.' },
  agent_unavailable: {
    status: 502,
    name: 'AgentUnavailableError',
    message: 'The agent could not produce a reply: its model server did not answer or failed.',
  },
  agent_rejected: {
    status: 502,
    name: 'AgentRejectedError',
    message: 'The agent could not produce a reply: its model server refused the request.',
  },
  agent_misconfigured: {
    status: 502,
    name: 'AgentMisconfiguredError',
    message: "The agent could not produce a reply: its model server refused the agent's key or model.",
  },
  shard_moving: {
    status: 503,
    name: 'ShardMovingError',
    message: 'The session is moving between processes; retry shortly.',
  },
  turn_interrupted: {
    status: 503,
    name: 'TurnInterruptedError',
    message:
      'The turn ended without a reply (its process stopped, or it failed); send the message again with the same Idempotency-Key to finish it.',
  },
  service_unavailable: {
    status: 503,
    name: 'ServiceUnavailableError',
    message: 'The service is unavailable; retry shortly.',
  },
  server_busy: {
    status: 503,
    name: 'ServerBusyError',
    message:
      'The service has no memory free for this turn now; nothing was stored. Retry after the time in Retry-After.',
  },
  agent_rate_limited: {
    status: 503,
    name: 'AgentRateLimitedError',
    message: "The agent's model server is rate limiting; retry after the time in Retry-After.",
  },
  agent_timeout: { status: 504, name: 'AgentTimeoutError', message: 'The agent did not reply in time.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof errorCatalogue;

export interface AppErrorOptions {
  /** Error-specific structured context (ids, limits, hints), sent as `error.context`. */
  context?: Record<string, unknown>;
  /** Response headers that belong to this error (Retry-After, WWW-Authenticate). */
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An error with a catalogue code; the error handler turns it into the envelope. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly errorName: string;
  readonly context: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message?: string, options: AppErrorOptions = {}) {
    const spec = errorCatalogue[code];
    super(message ?? spec.message, { cause: options.cause });
    this.name = spec.name;
    this.code = code;
    this.statusCode = spec.status;
    this.errorName = spec.name;
    this.context = options.context;
    this.headers = options.headers;
  }
}

/** 503 shard_moving: the session's shard is between owners; a retry a second later reaches the new one. */
export const shardMoving = (context?: Record<string, unknown>, cause?: unknown) =>
  new AppError('shard_moving', undefined, { headers: { 'retry-after': '1' }, context, cause });

/** 503 service_unavailable: this process cannot serve now (draining, cut off, closing); another may. */
export const serviceUnavailable = (message: string, cause?: unknown) =>
  new AppError('service_unavailable', message, { headers: { 'retry-after': '1' }, cause });

/** 409 approval_pending: turn `turnId` waits for decisions on `callIds` (those the caller may see). */
export const approvalPending = (turnId: string, callIds: readonly string[]) =>
  new AppError('approval_pending', undefined, { context: { turn_id: turnId, call_ids: [...callIds] } });

export const sessionNotFound = (sessionId: string) =>
  new AppError('session_not_found', undefined, { context: { session_id: sessionId } });

/** A session error in the words of the conversation family: `session_not_found` becomes `conversation_not_found`. */
export function asConversationError<E>(err: E, conversationId: string): E | AppError {
  if (err instanceof AppError && err.code === 'session_not_found') {
    return new AppError('conversation_not_found', undefined, {
      context: { conversation_id: conversationId },
      cause: err,
    });
  }
  return err;
}

/** One entry of a 422 body: FastAPI's `{ loc, msg, type }`. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** A 422 answer; carries `detail` instead of the envelope. */
export class ValidationError extends Error {
  readonly statusCode = 422;
  readonly detail: ValidationIssue[];

  constructor(detail: ValidationIssue[]) {
    super(detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '));
    this.name = 'ValidationError';
    this.detail = detail;
  }

  static at(loc: (string | number)[], msg: string, type: string): ValidationError {
    return new ValidationError([{ loc, msg, type }]);
  }
}

// Every failure leaves as the error envelope (docs/reference/errors.md) (or the 422 `detail` body), including
// the ones Fastify and its plugins produce: unknown route, bad JSON, body too large, wrong content type.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode, errorCatalogue, ValidationError } from '../../errors.ts';

/** Fastify and plugin error codes that have a catalogue code of their own. */
const frameworkCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_INVALID_MULTIPART_CONTENT_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_REQ_FILE_TOO_LARGE: 'file_too_large',
  FST_ERR_NOT_FOUND: 'not_found',
};

/** Multipart count limits: the body is refused as too large. */
const partLimits: Record<string, string> = {
  FST_PARTS_LIMIT: 'Too many parts in the multipart body.',
  FST_FIELDS_LIMIT: 'Too many fields in the multipart body.',
};

/** Multipart parts the plugin refuses for their content: the body is malformed, a 422. */
const malformedParts: Record<string, string> = {
  FST_INVALID_JSON_FIELD_ERROR: 'A part declared application/json does not parse as JSON.',
  FST_PROTO_VIOLATION: 'A part may not be named after an Object.prototype property.',
};

const statusCodes: Record<number, ErrorCode> = {
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

export function errorBody(request: FastifyRequest, error: AppError) {
  return {
    error: {
      code: error.code,
      name: error.errorName,
      message: error.message,
      ...(error.context ? { context: error.context } : {}),
    },
    request_id: request.id,
    timestamp: new Date().toISOString(),
  };
}

function isMultipart(request: FastifyRequest): boolean {
  return (request.headers['content-type'] ?? '').toLowerCase().startsWith('multipart/');
}

/** Turns anything thrown into an AppError or a ValidationError; unknown errors become `internal_error`. */
export function classify(error: FastifyError, request: FastifyRequest): AppError | ValidationError {
  if (error instanceof AppError || error instanceof ValidationError) return error;
  // A method Fastify reads a body for (QUERY) without Content-Type fails before the 404 handler: no route
  // takes it, so it is the 404 every unknown method gets, not a 400.
  if (error.code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE' && request.is404) return noRoute(request);
  const code = error.code ? frameworkCodes[error.code] : undefined;
  if (error.code && malformedParts[error.code]) {
    return ValidationError.at(['body'], malformedParts[error.code], 'multipart_invalid');
  }
  // A second file is a body of the wrong shape (the schema takes one `file` part), not a large one.
  if (error.code === 'FST_FILES_LIMIT') {
    return ValidationError.at(['body', 'file'], 'Send one file per request', 'too_long');
  }
  if (error.code && partLimits[error.code]) {
    return new AppError('payload_too_large', partLimits[error.code], { cause: error });
  }
  if (code) {
    const context =
      code === 'file_too_large' || code === 'payload_too_large' ? limitContext(request) : undefined;
    return new AppError(code, undefined, { context, cause: error });
  }
  const status = error.statusCode;
  if (status === undefined && isMultipart(request)) {
    // busboy reports a malformed multipart body without a status.
    return ValidationError.at(['body'], `Malformed multipart body: ${error.message}`, 'multipart_invalid');
  }
  if (status !== undefined && status >= 400 && status < 500) {
    return new AppError(statusCodes[status] ?? 'bad_request', undefined, { cause: error });
  }
  return new AppError('internal_error', undefined, { cause: error });
}

function limitContext(request: FastifyRequest): Record<string, unknown> | undefined {
  const limit = request.routeOptions.config.uploadLimitBytes ?? request.routeOptions.bodyLimit;
  return limit === undefined ? undefined : { limit_bytes: limit };
}

export function sendError(reply: FastifyReply, error: AppError | ValidationError) {
  if (error instanceof ValidationError) {
    return reply.code(422).send({ detail: error.detail });
  }
  if (error.headers) reply.headers(error.headers);
  return reply.code(error.statusCode).send(errorBody(reply.request, error));
}

/** The error handler: logs what is our fault, answers with the envelope; a scope may `translate` errors. */
export function handleError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
  translate: (e: AppError | ValidationError) => AppError | ValidationError = (e) => e,
) {
  const classified = translate(classify(error, request));
  if (classified instanceof AppError && classified.statusCode >= 500) {
    request.log.error({ err: error }, 'request failed');
  }
  return sendError(reply, classified);
}

export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError, request, reply) => handleError(error, request, reply));

  app.setNotFoundHandler(notFound);
}

/** The 404 of an unknown route; a scope may install it again so that its own hooks (CORS) run first. */
export function notFound(request: FastifyRequest, reply: FastifyReply) {
  return sendError(reply, noRoute(request));
}

function noRoute(request: FastifyRequest): AppError {
  return new AppError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`, {
    context: { method: request.method },
  });
}

/** For errors Fastify raises before routing (a malformed URL): no hooks ran, so set the request id here. */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('x-request-id', request.id);
  const code: ErrorCode = error.statusCode === 404 ? 'not_found' : 'bad_request';
  return sendError(reply, new AppError(code, `${errorCatalogue[code].message} ${error.message}`));
}

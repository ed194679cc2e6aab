// The Open Responses surface (docs/guides/openai-sdks.md): `/v1/responses…` (and `/v1/conversations…`) for the
// OpenAI SDKs and Open Responses clients. The API key comes as `Authorization: Bearer` (what the SDKs send)
// or X-API-Key, requests are rate-limited per key like the server-side family, and every error answers in
// OpenAI's envelope `{ error: { message, type, code, param } }`.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { SessionService } from '../../actors/session-service.ts';
import type { Config } from '../../config.ts';
import { AppError, ValidationError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import { requireApiKey } from '../auth/api-key.ts';
import { classify } from '../server/error-handler.ts';
import { registerRateLimit } from '../server/rate-limit.ts';
import type { LiveTurns } from '../turns/log.ts';
import { conversationRoutes } from './conversations.ts';
import { responsesRoutes } from './routes.ts';
import { storedResponseRoutes } from './stored.ts';

export interface ResponsesFamilyOptions {
  store: Store;
  config: Config;
  sessions: SessionService;
  redis?: Redis;
  /** This process's streamed turns (shared with the other families), which a dropped client may resume. */
  turns: LiveTurns;
}

export async function responsesFamily(
  scope: FastifyInstance,
  { store, config, sessions, redis, turns }: ResponsesFamilyOptions,
) {
  scope.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, security: [{ apiKey: [] }, { bearerApiKey: [] }] };
  });
  scope.setErrorHandler(openAiErrorHandler);
  requireApiKey(scope, store, { bearer: true });
  await registerRateLimit(scope, {
    perMinute: config.rateLimit.perApiKey,
    key: (request) => `key:${request.apiKey?.id ?? request.ip}`,
    redis,
  });
  await scope.register(responsesRoutes, { store, sessions, pingMs: config.ssePingMs, turns });
  await scope.register(storedResponseRoutes, { store, sessions, pingMs: config.ssePingMs, turns });
  await scope.register(conversationRoutes, { store, sessions });
}

/** OpenAI's error `type` for a status. */
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** An error as OpenAI's envelope: Parley's code and status, the field at fault as `param`. */
export function openAiErrorBody(error: AppError | ValidationError) {
  if (error instanceof ValidationError) {
    const [first] = error.detail;
    return {
      error: {
        message: error.detail.map((d) => `${d.loc.slice(1).join('.') || d.loc[0]}: ${d.msg}`).join('; '),
        type: 'invalid_request_error',
        code: first?.type ?? 'validation_error',
        param: first ? first.loc.slice(1).join('.') || null : null,
      },
    };
  }
  return {
    error: { message: error.message, type: errorType(error.statusCode), code: error.code, param: null },
  };
}

function openAiErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const classified = classify(error, request);
  if (classified instanceof AppError) {
    if (classified.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    if (classified.headers) reply.headers(classified.headers);
  }
  return reply.code(classified.statusCode).send(openAiErrorBody(classified));
}

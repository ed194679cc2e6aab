// The public conversation family (`/v1/public/agents/conversations/{id}/…`): what a front-end calls with
// a session token. CORS first (a preflight carries no token), then the token, then its own rate limit.
import cors from '@fastify/cors';
import type { FastifyError, FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { SessionService } from '../../actors/session-service.ts';
import type { SessionTokens } from '../../auth/session-tokens.ts';
import type { Config } from '../../config.ts';
import { asConversationError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import { requireSessionToken } from '../auth/session-token.ts';
import { handleError, notFound } from '../server/error-handler.ts';
import { registerRateLimit } from '../server/rate-limit.ts';
import type { EventStreams } from '../turns/event-streams.ts';
import type { LiveTurns } from '../turns/log.ts';
import { publicConversationRoutes } from './conversation.ts';
import { publicFilesRoutes } from './files.ts';
import { registerTenantBounds, type TenantBounds } from './tenant-bounds.ts';

export const PUBLIC_PREFIX = '/v1/public/agents/conversations';

export interface PublicFamilyOptions {
  store: Store;
  config: Config;
  sessions: SessionService;
  tokens: SessionTokens;
  /** Rate-limit counters shared by every process (rateLimitRedis); unset, this process counts alone. */
  redis?: Redis;
  /** This process's streamed turns (shared by both families). */
  turns: LiveTurns;
  /** This process's conversation event streams (shared by both families). */
  streams: EventStreams;
  /** Tighter bounds for one tenant's conversations (the demo page's). */
  bounded?: TenantBounds;
}

export async function publicFamily(scope: FastifyInstance, options: PublicFamilyOptions) {
  const { config } = options;
  scope.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, security: [{ sessionToken: [] }] };
  });
  if (config.corsOrigins.length > 0) {
    await scope.register(cors, {
      origin: config.corsOrigins.includes('*') ? '*' : [...config.corsOrigins],
      methods: ['GET', 'POST'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'Last-Event-ID', 'X-Request-Id'],
      exposedHeaders: [
        'X-Request-Id',
        'Idempotent-Replayed',
        'Retry-After',
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'WWW-Authenticate',
      ],
      maxAge: 600,
      // A bare OPTIONS that is not a preflight gets the CORS answer too, never a plain-text 400.
      strictPreflight: false,
    });
  }
  // An unknown path under this prefix answers through this scope (CORS headers, token first), like its routes.
  scope.setNotFoundHandler(notFound);
  requireSessionToken(scope, options.tokens, options.store);
  await registerRateLimit(scope, {
    perMinute: config.rateLimit.perSessionToken,
    // One budget per conversation, shared by its tokens: minting a fresh token does not reset it.
    key: (request) => `conversation:${request.sessionToken?.conversationId ?? request.ip}`,
    redis: options.redis,
  });
  // Inside this family a session is a conversation, and its errors say so.
  scope.setErrorHandler((error: FastifyError, request, reply) =>
    handleError(error, request, reply, (e) =>
      asConversationError(e, request.sessionToken?.conversationId ?? ''),
    ),
  );
  const { store, sessions, bounded } = options;
  if (bounded) registerTenantBounds(scope, bounded, store);
  await scope.register(publicConversationRoutes, {
    store,
    sessions,
    pingMs: config.ssePingMs,
    turns: options.turns,
    streams: options.streams,
  });
  await scope.register(publicFilesRoutes, {
    store,
    config,
    sessions,
    quotaOf: (tenantId) => (tenantId === bounded?.tenantId ? bounded.fileQuota : config.fileQuota),
  });
}

// The server-side family (`/v1/agents/…`): every route in this scope is authenticated by X-API-Key and
// rate-limited per key. Session tokens are never accepted here; this family mints them.
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { SessionService } from '../../actors/session-service.ts';
import type { Catalogue } from '../../agents/catalogue.ts';
import type { SessionTokens } from '../../auth/session-tokens.ts';
import type { Config } from '../../config.ts';
import type { Store } from '../../store/store.ts';
import { requireApiKey } from '../auth/api-key.ts';
import { registerRateLimit } from '../server/rate-limit.ts';
import type { EventStreams } from '../turns/event-streams.ts';
import type { LiveTurns } from '../turns/log.ts';
import { agentsRoutes } from './agents.ts';
import { conversationsRoutes } from './conversations.ts';
import { filesRoutes } from './files.ts';
import { messagesRoutes } from './messages.ts';
import { runRoutes } from './run.ts';
import { sessionsRoutes } from './sessions.ts';
import { usageRoutes } from './usage.ts';
import { usersRoutes } from './users.ts';
import { webhooksRoutes } from './webhooks.ts';

export interface ApiFamilyOptions {
  store: Store;
  config: Config;
  /** The agents (GET /v1/agents lists those a key may use). */
  catalogue: Catalogue;
  sessions: SessionService;
  tokens: SessionTokens;
  /** Rate-limit counters shared by every process (rateLimitRedis); unset, this process counts alone. */
  redis?: Redis;
  /** This process's streamed turns (shared by both families). */
  turns: LiveTurns;
  /** This process's conversation event streams (shared by both families). */
  streams: EventStreams;
}

export async function apiFamily(
  scope: FastifyInstance,
  { store, config, catalogue, sessions, tokens, redis, turns, streams }: ApiFamilyOptions,
) {
  // Documents the credential on every route of the family, for /docs and generated clients.
  scope.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, security: [{ apiKey: [] }] };
  });
  requireApiKey(scope, store);
  await registerRateLimit(scope, {
    perMinute: config.rateLimit.perApiKey,
    key: (request) => `key:${request.apiKey?.id ?? request.ip}`,
    redis,
  });
  await scope.register(agentsRoutes, { catalogue });
  await scope.register(usersRoutes, { store });
  await scope.register(usageRoutes, { store });
  await scope.register(filesRoutes, {
    store,
    uploadLimitBytes: config.limits.uploadBytes,
    fileQuota: config.fileQuota,
  });
  await scope.register(sessionsRoutes, { store, sessions });
  await scope.register(messagesRoutes, { store, sessions, pingMs: config.ssePingMs, turns, streams });
  await scope.register(runRoutes, { sessions });
  await scope.register(conversationsRoutes, { sessions, tokens });
  await scope.register(webhooksRoutes, { store, allowPrivate: config.webhooks.allowPrivate });
}

// Per-credential rate limits with @fastify/rate-limit: RateLimit-* headers on every response,
// 429 `rate_limited` with Retry-After beyond the budget. Counters live in this process, or in Redis when a
// client is given, so that a budget holds across every process of a cluster.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError } from '../../errors.ts';

/** Prefix of the counter keys in Redis, beside the cluster's `parley:member:…` and `parley:shard:…`. */
export const RATE_LIMIT_NAMESPACE = 'parley:rl:';

export interface RateLimitOptions {
  /** Requests per minute for one credential. */
  perMinute: number;
  /** The credential a request counts against; runs after authentication. */
  key: (request: FastifyRequest) => string;
  /** Shared counters (see rateLimitRedis); without it, each process counts on its own. */
  redis?: Redis;
}

export async function registerRateLimit(scope: FastifyInstance, options: RateLimitOptions) {
  await scope.register(rateLimit, {
    max: options.perMinute,
    timeWindow: 60_000,
    keyGenerator: options.key,
    enableDraftSpec: true,
    ...(options.redis ? { redis: options.redis, nameSpace: RATE_LIMIT_NAMESPACE } : {}),
    // Availability over limits: when Redis cannot count a request, serve it uncounted rather than fail
    // it. An outage of the counters then lifts the limits for its duration instead of taking the API down.
    skipOnError: true,
    errorResponseBuilder: (_request, context) => {
      const retryAfter = Math.max(1, Math.ceil(context.ttl / 1000));
      return new AppError('rate_limited', undefined, {
        context: { limit: context.max, window_seconds: 60, retry_after_seconds: retryAfter },
        headers: { 'retry-after': String(retryAfter) },
      });
    },
  });
}

// Per-credential rate limits with @fastify/rate-limit: RateLimit-* headers on every response,
// 429 `rate_limited` with Retry-After beyond the budget. In-process counters for now.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';

export interface RateLimitOptions {
  /** Requests per minute for one credential. */
  perMinute: number;
  /** The credential a request counts against; runs after authentication. */
  key: (request: FastifyRequest) => string;
}

export async function registerRateLimit(scope: FastifyInstance, options: RateLimitOptions) {
  await scope.register(rateLimit, {
    max: options.perMinute,
    timeWindow: 60_000,
    keyGenerator: options.key,
    enableDraftSpec: true,
    errorResponseBuilder: (_request, context) => {
      const retryAfter = Math.max(1, Math.ceil(context.ttl / 1000));
      return new AppError('rate_limited', undefined, {
        context: { limit: context.max, window_seconds: 60, retry_after_seconds: retryAfter },
        headers: { 'retry-after': String(retryAfter) },
      });
    },
  });
}

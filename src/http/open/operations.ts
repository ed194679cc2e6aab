// Unauthenticated operations endpoints: liveness, readiness (store and coordination answer) and metrics.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorEnvelope } from '#schemas';
import type { Coordinator } from '../../cluster/coordinator.ts';
import { serviceUnavailable } from '../../errors.ts';
import type { Store } from '../../store/store.ts';

export interface OperationsOptions {
  store: Store;
  /** Draining: the process hands its shards over before stopping. Not connected: it cannot coordinate. */
  coordinator: Pick<Coordinator, 'draining' | 'connected'>;
}

export const operationsRoutes: FastifyPluginAsyncZod<OperationsOptions> = async (
  app,
  { store, coordinator },
) => {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness',
        response: { 200: z.object({ status: z.literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Readiness: the store and the coordination service answer, and the process is not draining',
        response: { 200: z.object({ status: z.literal('ready') }), 503: errorEnvelope },
      },
    },
    async () => {
      if (coordinator.draining) throw serviceUnavailable('The process is draining; send requests elsewhere.');
      if (!coordinator.connected) {
        throw serviceUnavailable('The process cannot reach Redis to coordinate shards.');
      }
      try {
        await store.ping();
      } catch (err) {
        throw serviceUnavailable('The store does not answer.', err);
      }
      return { status: 'ready' as const };
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics',
        response: {
          200: { description: 'Prometheus text format', content: { 'text/plain': { schema: z.string() } } },
        },
      },
    },
    async (_request, reply) => {
      const body = await app.metrics.metrics();
      return reply.header('content-type', app.metrics.contentType).send(body);
    },
  );
};

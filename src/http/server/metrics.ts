// Prometheus metrics (prom-client), one registry per app so that several apps in one test process
// do not collide. Request counts and latency by route and status, and the event streams open now; the
// actors (actors/actor-metrics.ts) and the cluster (cluster/cluster-metrics.ts) register theirs on the same
// registry.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Registry;
    /** Turn streams being answered now, by protocol: `sse` (Parley's events) and `chat` (the AI SDK's). */
    openStreams: Gauge<'protocol'>;
  }
}

/** Counts `reply` as an open stream until its response is closed, whether finished or cut off. */
export function countOpenStream(reply: FastifyReply, protocol: 'sse' | 'chat'): void {
  const gauge = reply.server.openStreams;
  if (reply.raw.destroyed) return;
  gauge.inc({ protocol });
  reply.raw.once('close', () => gauge.dec({ protocol }));
}

export function registerMetrics(app: FastifyInstance) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'parley_' });
  const requests = new Counter({
    name: 'parley_http_requests_total',
    help: 'HTTP requests answered, by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'parley_http_request_duration_seconds',
    help: 'HTTP request latency, by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  app.decorate('metrics', registry);
  const openStreams = new Gauge({
    name: 'parley_open_streams',
    help: 'Turn streams being answered now, by protocol (sse, chat)',
    labelNames: ['protocol'] as const,
    registers: [registry],
  });
  // Both series from the start, so that a dashboard shows 0 rather than nothing.
  for (const protocol of ['sse', 'chat']) openStreams.set({ protocol }, 0);
  app.decorate('openStreams', openStreams);
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, not the URL: ids must not explode the label space.
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
  });
}

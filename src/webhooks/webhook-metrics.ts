// Metrics of webhook deliveries: attempts by outcome and their latency, and deliveries refused by the
// outbox's cap. Registered on the app's own registry (see http/server/metrics.ts).
import { Counter, Histogram, type Registry } from 'prom-client';

const latencyBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createWebhookMetrics(registry: Registry) {
  return {
    deliveries: new Counter({
      name: 'parley_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by outcome (delivered; retry: to be tried again; failed: for good)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    refused: new Counter({
      name: 'parley_webhook_refused_total',
      help: "Webhook deliveries stored failed without an attempt: their tenant's outbox was past its cap",
      registers: [registry],
    }),
    attemptDuration: new Histogram({
      name: 'parley_webhook_delivery_seconds',
      help: 'Time a webhook delivery attempt took, until its answer or its failure',
      buckets: latencyBuckets,
      registers: [registry],
    }),
  };
}

export type WebhookMetrics = ReturnType<typeof createWebhookMetrics>;

// What tracing costs and loses, on /metrics: spans exported, dropped (a full queue, an export that failed)
// and queued. Registered only with tracing on; read from the batch processor's counts when scraped.
import { Counter, Gauge, type Registry } from 'prom-client';
import { traceStats } from './tracer.ts';

export function registerTraceMetrics(registry: Registry): void {
  new Counter({
    name: 'parley_trace_spans_exported_total',
    help: 'Spans sent to the OpenTelemetry collector',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(traceStats()?.exported ?? 0);
    },
  });
  const dropped = new Counter({
    name: 'parley_trace_spans_dropped_total',
    help: 'Spans lost, by reason (queue_full: the export queue was full; export_failed: the collector did not take them)',
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      const stats = traceStats();
      this.reset();
      dropped.inc({ reason: 'queue_full' }, stats?.dropped.queue_full ?? 0);
      dropped.inc({ reason: 'export_failed' }, stats?.dropped.export_failed ?? 0);
    },
  });
  new Gauge({
    name: 'parley_trace_queue_spans',
    help: 'Spans waiting in the export queue',
    registers: [registry],
    collect() {
      this.set(traceStats()?.queued ?? 0);
    },
  });
}

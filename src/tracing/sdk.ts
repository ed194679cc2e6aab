// Starts OpenTelemetry when an endpoint is configured (src/server.ts imports this only then, and before the
// app's modules load): the trace SDK with an OTLP/HTTP exporter built from the options config.ts read (no
// package here reads the environment for them), W3C propagation, the official instrumentations, and
// Parley's own spans (tracing/spans.ts). See docs/guides/tracing.md for why each piece is set up as it is.

import { register } from 'node:module';
import { hostname } from 'node:os';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import {
  type Attributes,
  context,
  createNoopMeter,
  type DiagLogger,
  DiagLogLevel,
  diag,
  type Meter,
  type MeterProvider,
  type ObservableCallback,
  propagation,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { type Instrumentation, registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import {
  createOtlpHttpExportDelegate,
  httpAgentFactoryFromOptions,
} from '@opentelemetry/otlp-exporter-base/node-http';
import {
  JsonTraceSerializer,
  ProtobufTraceSerializer,
  TraceExporterMetricsHelper,
} from '@opentelemetry/otlp-transformer';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { register as registerSyncHooks, supportsSyncHooks } from 'import-in-the-middle/register-hooks.mjs';
import { VERSION } from '../version.ts';
import type { Sampler as SamplerOption, TracingOptions } from './options.ts';
import { otelTracing, WITHOUT_URL_PATH } from './spans.ts';
import { installTracing, type TraceStats } from './tracer.ts';

/** Where Parley's logs go; set to the app's logger once it exists. */
export type TraceLog = (message: string) => void;

export interface TracingHandle {
  /** Warnings of the SDK (an export failed, the queue is full) go here from now on, at most one a minute each. */
  useLog(log: TraceLog): void;
  /** Exports what is queued and stops, within `timeoutMs`; false when some spans could not be sent in time. */
  shutdown(timeoutMs: number): Promise<boolean>;
}

/** Requests that say nothing about a conversation and come every few seconds: not traced. */
const UNTRACED_PATHS = /^\/(healthz|readyz|metrics)(\?|$)/;

/**
 * Packages imported as ES modules whose instrumentation patches their main export, which only a loader hook
 * sees; the others (http, pg) are patched through require, undici and Fastify through diagnostics channels.
 */
const HOOKED_IMPORTS = ['ioredis'];

export async function startTracing(options: TracingOptions, log: TraceLog): Promise<TracingHandle> {
  let sink = log;
  diag.setLogger(
    throttled((message) => sink(message)),
    {
      logLevel: DiagLogLevel.WARN,
      suppressOverrideMessage: true,
    },
  );
  const acknowledged = hookImports();

  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  const counts = new SpanCounts();
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes(resourceAttributes(options))),
    sampler: samplerOf(options.sampler),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: exporterOf(options),
        scheduledDelayMillis: options.batch.scheduleDelayMs,
        exportTimeoutMillis: options.batch.exportTimeoutMs,
        maxQueueSize: options.batch.maxQueueSize,
        maxExportBatchSize: options.batch.maxExportBatchSize,
        selfObsMeterProvider: counts.meterProvider(),
      }),
    ],
  });
  trace.setGlobalTracerProvider(provider);
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.test(request.url ?? ''),
        requireParentforOutgoingSpans: true,
      }),
      new UndiciInstrumentation({
        requireParentforSpans: true,
        startSpanHook: (request) =>
          urlAttributes(request.origin, request.path, context.active().getValue(WITHOUT_URL_PATH) === true),
      }),
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
      // Hooks are not spans of their own: Parley's run on every request (ids, metrics, rate limits, auth).
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        instrumentHooks: false,
        ignorePaths: (route) => UNTRACED_PATHS.test(route.url),
        // Typed against the older @opentelemetry/instrumentation it depends on; the same interface.
      }) as unknown as Instrumentation,
    ],
  });
  await acknowledged;
  installTracing(
    otelTracing(provider.getTracer('parley', VERSION), {
      captureContent: options.captureContent,
      stats: () => counts.stats(),
    }),
  );
  return {
    useLog(next) {
      sink = next;
    },
    async shutdown(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const flushed = await Promise.race([
        provider.shutdown().then(
          () => counts.stats().queued === 0,
          () => false,
        ),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      installTracing(null);
      return flushed;
    },
  };
}

/**
 * The loader hook that lets the instrumentations patch HOOKED_IMPORTS, and only those: in the thread itself
 * where Node can (module.registerHooks, Node 22.22.3 and 24.11.1 on), else on the loader thread. Resolves
 * once the hook knows of every module to patch.
 */
function hookImports(): Promise<void> {
  if (supportsSyncHooks()) {
    registerSyncHooks({ include: HOOKED_IMPORTS });
    return Promise.resolve();
  }
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  return waitForAllMessagesAcknowledged();
}

/** The exporter, configured only from `options`: none of the exporter packages' environment reading runs. */
function exporterOf(options: TracingOptions): SpanExporter {
  const json = options.protocol === 'http/json';
  const headers = {
    ...options.headers,
    'Content-Type': json ? 'application/json' : 'application/x-protobuf',
  };
  const delegate = createOtlpHttpExportDelegate(
    {
      url: options.url,
      headers: async () => headers,
      timeoutMillis: options.timeoutMs,
      concurrencyLimit: 2,
      compression: options.compression,
      agentFactory: httpAgentFactoryFromOptions({ keepAlive: true }),
      userAgent: `Parley/${VERSION}`,
    },
    json ? JsonTraceSerializer : ProtobufTraceSerializer,
    'otlp_http_span_exporter',
    TraceExporterMetricsHelper,
    undefined,
  );
  return new OTLPExporterBase<ReadableSpan[]>(delegate);
}

function resourceAttributes(options: TracingOptions): Attributes {
  return {
    'service.version': VERSION,
    'service.instance.id': `${hostname()}-${process.pid}`,
    'host.name': hostname(),
    'process.pid': process.pid,
    'process.runtime.name': 'nodejs',
    'process.runtime.version': process.versions.node,
    ...options.resourceAttributes,
    'service.name': options.serviceName,
  };
}

function samplerOf(option: SamplerOption): Sampler {
  switch (option.kind) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(option.ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(option.ratio) });
  }
}

/**
 * An outgoing request's URL without its query's values (an API key in a query string), and for a webhook
 * delivery without its path either: receivers put their secret there (a chat service's incoming webhook).
 */
export function urlAttributes(origin: string, path: string, withoutPath: boolean): Attributes {
  let url: URL;
  try {
    url = new URL(path, origin);
  } catch {
    return { 'url.full': origin, 'url.path': '', 'url.query': '' };
  }
  if (withoutPath) return { 'url.full': `${url.origin}/REDACTED`, 'url.path': '/REDACTED', 'url.query': '' };
  const names = [...new Set(url.searchParams.keys())];
  const query = names.length === 0 ? '' : `?${names.map((n) => `${n}=REDACTED`).join('&')}`;
  return { 'url.full': `${url.origin}${url.pathname}${query}`, 'url.path': url.pathname, 'url.query': query };
}

/**
 * The batch processor's own counts, from the self-observability metrics it reports
 * (`otel.sdk.processor.span.processed`, with `error.type` `queue_full` for a span dropped from a full queue,
 * or the error of an export that failed), kept as numbers for Parley's /metrics (tracing/metrics.ts).
 */
class SpanCounts {
  exported = 0;
  queueFull = 0;
  exportFailed = 0;
  readonly #queue = new Set<ObservableCallback>();

  meterProvider(): MeterProvider {
    const meter: Meter = createNoopMeter();
    const noopCounter = meter.createCounter('noop');
    meter.createCounter = ((name: string) =>
      name !== 'otel.sdk.processor.span.processed'
        ? noopCounter
        : {
            add: (value: number, attributes?: Attributes) => {
              const error = attributes?.['error.type'];
              if (error === undefined) this.exported += value;
              else if (error === 'queue_full') this.queueFull += value;
              else this.exportFailed += value;
            },
          }) as Meter['createCounter'];
    const noopObservable = meter.createObservableUpDownCounter('noop');
    meter.createObservableUpDownCounter = ((name: string) =>
      name !== 'otel.sdk.processor.span.queue.size'
        ? noopObservable
        : {
            addCallback: (callback: ObservableCallback) => this.#queue.add(callback),
            removeCallback: (callback: ObservableCallback) => this.#queue.delete(callback),
          }) as Meter['createObservableUpDownCounter'];
    return { getMeter: () => meter };
  }

  stats(): TraceStats {
    let queued = 0;
    for (const callback of this.#queue) void callback({ observe: (value) => (queued += value) });
    return {
      exported: this.exported,
      dropped: { queue_full: this.queueFull, export_failed: this.exportFailed },
      queued,
    };
  }
}

/** The SDK's warnings, each at most once a minute: a collector that is down would otherwise fill the log. */
function throttled(write: (message: string) => void): DiagLogger {
  const last = new Map<string, number>();
  const say = (message: string, ...args: unknown[]) => {
    const key = message.slice(0, 80);
    const now = Date.now();
    if ((last.get(key) ?? 0) > now - 60_000) return;
    last.set(key, now);
    const detail = args.map((a) => (a instanceof Error ? a.message : String(a))).join(' ');
    write(`OpenTelemetry: ${message}${detail ? ` ${detail}` : ''}`);
  };
  return { error: say, warn: say, info: say, debug: () => {}, verbose: () => {} };
}

// The standard OTEL_* variables Parley reads, as a zod shape config.ts spreads into its schema, and what they
// become: the tracing options, or null when no endpoint is set (then nothing of OpenTelemetry is loaded).
// Values that may hold secrets (the exporter's headers) are never echoed in an error.
import { z } from 'zod';

export type Sampler =
  | { kind: 'always_on' | 'always_off' | 'parentbased_always_on' | 'parentbased_always_off' }
  | { kind: 'traceidratio' | 'parentbased_traceidratio'; ratio: number };

export interface TracingOptions {
  /** Where spans are POSTed: the traces endpoint itself, or `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`. */
  readonly url: string;
  readonly protocol: 'http/protobuf' | 'http/json';
  /** Sent with every export (an API key of the backend, often): never logged. */
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly compression: 'gzip' | 'none';
  readonly serviceName: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: Sampler;
  /** The batch span processor: its wait between exports, an export's time, the queue, one export's spans. */
  readonly batch: {
    readonly scheduleDelayMs: number;
    readonly exportTimeoutMs: number;
    readonly maxQueueSize: number;
    readonly maxExportBatchSize: number;
  };
  /** Message and tool contents on the spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). */
  readonly captureContent: boolean;
}

const blankIsUnset = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));
const number = blankIsUnset.transform((v) => (v === undefined ? undefined : Number(v)));
const integer = (min: number, max: number) => number.pipe(z.number().int().min(min).max(max).optional());
const flag = blankIsUnset.pipe(
  z
    .enum(['true', 'false', 'TRUE', 'FALSE', 'True', 'False'], { error: 'must be true or false' })
    .optional()
    .transform((v) => (v === undefined ? undefined : v.toLowerCase() === 'true')),
);
const endpoint = blankIsUnset.pipe(
  z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
);
const protocol = blankIsUnset.pipe(
  z
    .enum(['http/protobuf', 'http/json', 'grpc'], { error: 'must be http/protobuf or http/json' })
    .refine((v) => v !== 'grpc', 'grpc is not supported: use http/protobuf or http/json (port 4318)')
    .optional(),
);
const compression = blankIsUnset.pipe(z.enum(['gzip', 'none'], { error: 'must be gzip or none' }).optional());

/** `key=value,key=value`, values percent-decoded (the W3C baggage form the OTLP variables use). */
const keyValues = (what: string) =>
  blankIsUnset.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const pairs: Record<string, string> = {};
    for (const item of v.split(',')) {
      if (item.trim() === '') continue;
      const at = item.indexOf('=');
      const key = at > 0 ? item.slice(0, at).trim() : '';
      let value: string | undefined;
      try {
        value = at > 0 ? decodeURIComponent(item.slice(at + 1).trim()) : undefined;
      } catch {
        value = undefined;
      }
      if (key === '' || value === undefined) {
        // The value is not repeated: it may be a secret.
        ctx.addIssue({ code: 'custom', message: `must be a comma-separated list of ${what}=value pairs` });
        return z.NEVER;
      }
      pairs[key] = value;
    }
    return pairs;
  });

const samplers = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** The variables, spread into config.ts's schema (its names are what config.ts reads). */
export const otelEnvShape = {
  OTEL_SDK_DISABLED: flag,
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint,
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
  OTEL_EXPORTER_OTLP_HEADERS: keyValues('header'),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: keyValues('header'),
  OTEL_EXPORTER_OTLP_TIMEOUT: integer(1, 600_000),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: integer(1, 600_000),
  OTEL_EXPORTER_OTLP_COMPRESSION: compression,
  OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: compression,
  OTEL_SERVICE_NAME: blankIsUnset,
  OTEL_RESOURCE_ATTRIBUTES: keyValues('key'),
  OTEL_TRACES_SAMPLER: blankIsUnset.pipe(
    z.enum(samplers, { error: `must be one of ${samplers.join(', ')}` }).optional(),
  ),
  OTEL_TRACES_SAMPLER_ARG: number.pipe(z.number().min(0).max(1).optional()),
  OTEL_BSP_SCHEDULE_DELAY: integer(0, 3_600_000),
  OTEL_BSP_EXPORT_TIMEOUT: integer(1, 3_600_000),
  OTEL_BSP_MAX_QUEUE_SIZE: integer(1, 1_000_000),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: integer(1, 1_000_000),
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: flag,
};

type OtelEnv = z.output<z.ZodObject<typeof otelEnvShape>>;

/** The traces URL: the per-signal endpoint as given, or the base endpoint with `v1/traces` appended. */
function tracesUrl(e: OtelEnv): string | undefined {
  if (e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = e.OTEL_EXPORTER_OTLP_ENDPOINT;
  return base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`;
}

function samplerOf(e: OtelEnv): Sampler {
  const kind = e.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on';
  if (kind === 'traceidratio' || kind === 'parentbased_traceidratio')
    return { kind, ratio: e.OTEL_TRACES_SAMPLER_ARG ?? 1 };
  return { kind };
}

/** What the variables ask for; null when tracing is off (no endpoint, or OTEL_SDK_DISABLED=true). */
export function tracingOptions(e: OtelEnv): TracingOptions | null {
  const url = tracesUrl(e);
  if (url === undefined || e.OTEL_SDK_DISABLED === true) return null;
  const maxQueueSize = e.OTEL_BSP_MAX_QUEUE_SIZE ?? 2048;
  return {
    url,
    protocol: e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    headers: { ...e.OTEL_EXPORTER_OTLP_HEADERS, ...e.OTEL_EXPORTER_OTLP_TRACES_HEADERS },
    timeoutMs: e.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? e.OTEL_EXPORTER_OTLP_TIMEOUT ?? 10_000,
    compression: e.OTEL_EXPORTER_OTLP_TRACES_COMPRESSION ?? e.OTEL_EXPORTER_OTLP_COMPRESSION ?? 'none',
    serviceName: e.OTEL_SERVICE_NAME ?? e.OTEL_RESOURCE_ATTRIBUTES?.['service.name'] ?? 'parley',
    resourceAttributes: e.OTEL_RESOURCE_ATTRIBUTES ?? {},
    sampler: samplerOf(e),
    batch: {
      scheduleDelayMs: e.OTEL_BSP_SCHEDULE_DELAY ?? 5000,
      exportTimeoutMs: e.OTEL_BSP_EXPORT_TIMEOUT ?? 30_000,
      maxQueueSize,
      // The processor would lower it to the queue's size anyway; saying so here keeps the options true.
      maxExportBatchSize: Math.min(e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE ?? 512, maxQueueSize),
    },
    captureContent: e.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT ?? false,
  };
}

// A real OTLP/HTTP trace receiver on loopback, for the tracing tests: it takes POST /v1/traces in the OTLP
// JSON encoding (the services under test export with OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and keeps every
// span, flattened with its resource's attributes; a protobuf export is counted, not decoded (the
// OpenTelemetry packages ship its encoder only). Tests wait for the spans they expect.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

type AnyValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };
type Scalar = string | number | boolean;
export type Attributes = Record<string, Scalar | Scalar[]>;

/** A span as received. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client (the OTLP enum). */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Attributes;
  /** The attributes of the resource that sent it (service.name, service.instance.id, …). */
  resource: Attributes;
  scope: string;
  /** 0 unset, 1 ok, 2 error. */
  status: number;
}

interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      scope?: { name?: string };
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        startTimeUnixNano: string | number;
        endTimeUnixNano: string | number;
        attributes?: KeyValue[];
        status?: { code?: number };
      }[];
    }[];
  }[];
}

function scalar(value: AnyValue): Scalar | Scalar[] {
  if (value.arrayValue) return (value.arrayValue.values ?? []).map((v) => scalar(v) as Scalar);
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return '';
}

const attributesOf = (list: KeyValue[] | undefined): Attributes =>
  Object.fromEntries((list ?? []).map(({ key, value }) => [key, scalar(value)]));

/** Flattens one OTLP JSON export request. */
export function spansOf(request: ExportRequest): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const resource = attributesOf(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind ?? 0,
        startNs: BigInt(s.startTimeUnixNano),
        endNs: BigInt(s.endTimeUnixNano),
        attributes: attributesOf(s.attributes),
        resource,
        scope: ss.scope?.name ?? '',
        status: s.status?.code ?? 0,
      })),
    );
  });
}

export interface OtlpReceiver {
  /** The base endpoint, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly endpoint: string;
  readonly spans: readonly ReceivedSpan[];
  /** Every export request's content type, in arrival order. */
  readonly contentTypes: readonly string[];
  /** Waits until `match` holds for the spans received (checked as each export arrives); returns them. */
  waitFor(match: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(t: Pick<TestContext, 'after'>): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk);
    const type = String(req.headers['content-type'] ?? '');
    contentTypes.push(type);
    if (req.method === 'POST' && req.url === '/v1/traces' && type.startsWith('application/json')) {
      spans.push(...spansOf(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest));
    }
    res.writeHead(200, { 'content-type': type || 'application/json' }).end(type.includes('json') ? '{}' : '');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  const receiver: OtlpReceiver = {
    endpoint: `http://127.0.0.1:${address.port}`,
    spans,
    contentTypes,
    async waitFor(match, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!match(spans)) {
        if (Date.now() > deadline) {
          const names = spans.map((s) => s.name).join(', ');
          throw new Error(`the spans expected did not arrive within ${timeoutMs} ms; received: ${names}`);
        }
        await sleep(25);
      }
      return [...spans];
    },
    async close() {
      server.closeAllConnections();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
  t.after(() => receiver.close());
  return receiver;
}

/** The spans of one trace. */
export const inTrace = (spans: readonly ReceivedSpan[], traceId: string) =>
  spans.filter((s) => s.traceId === traceId);

/** The span named `name` (the first one, when `where` does not single one out); fails when there is none. */
export function spanNamed(
  spans: readonly ReceivedSpan[],
  name: string,
  where: (s: ReceivedSpan) => boolean = () => true,
): ReceivedSpan {
  const span = spans.find((s) => s.name === name && where(s));
  assert.ok(span, `no span ${name} among ${spans.map((s) => s.name).join(', ')}`);
  return span;
}

// Acceptance of issue 32 when the collector misbehaves: a port that refuses, and one that accepts and never
// answers. Sends still succeed without waiting on the exporter, the spans lost are counted on /metrics, and a
// stop is not held up by the collector. A collector that works gets the spans still queued when the service
// is stopped, before it exits.
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { after, test } from 'node:test';
import { freePort } from '../../support/free-port.ts';
import { call } from '../helpers/load.ts';
import { startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { killLeftoverChildren, type ServiceProcess, startService, tempDir } from '../helpers/process.ts';
import { waitFor } from '../helpers/wait.ts';

after(killLeftoverChildren);

const apiKey = 'collector-test-key-0123456789abcdef';
/** The exporter's own timeout in these tests: a send that waited on an export would take this long. */
const EXPORT_TIMEOUT_MS = 30_000;

async function service(t: Parameters<typeof tempDir>[0], endpoint: string, env: Record<string, string> = {}) {
  return startService({
    dataDir: await tempDir(t, 'parley-collector-'),
    env: {
      PARLEY_BOOTSTRAP_API_KEY: apiKey,
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TIMEOUT: String(EXPORT_TIMEOUT_MS),
      OTEL_BSP_SCHEDULE_DELAY: '20',
      // A small queue, so that a collector that takes nothing fills it within a few sends.
      OTEL_BSP_MAX_QUEUE_SIZE: '16',
      LOG_LEVEL: 'warn',
      ...env,
    },
  });
}

/** `count` sends in a row on one new session; the longest took how long. */
async function sends(parley: ServiceProcess, count: number): Promise<number> {
  const created = await call(parley.url, apiKey, 'POST', '/v1/agents/demo/sessions', {});
  assert.ok(!('error' in created) && created.status === 201);
  const path = `/v1/agents/sessions/${(created.body as { id: string }).id}/messages`;
  let longest = 0;
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const sent = await call(parley.url, apiKey, 'POST', path, { content: `Message ${i}` });
    longest = Math.max(longest, performance.now() - started);
    assert.ok(!('error' in sent) && sent.status === 201, JSON.stringify(sent));
  }
  return longest;
}

/** The value of one series of /metrics (0 when absent). */
async function metric(parley: ServiceProcess, series: string): Promise<number> {
  const text = await (await fetch(`${parley.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

test('with the collector refusing connections, sends succeed and the spans it did not take are counted', async (t) => {
  const parley = await service(t, `http://127.0.0.1:${await freePort()}`);
  const longest = await sends(parley, 20);
  assert.ok(longest < EXPORT_TIMEOUT_MS / 3, `a send took ${longest} ms`);
  // Counted once the exporter's retries of the batch have given up (a few seconds).
  const failed = 'parley_trace_spans_dropped_total{reason="export_failed"}';
  await waitFor('export failures counted', async () => (await metric(parley, failed)) > 0);
  const exit = await parley.stop('SIGTERM', 20_000);
  assert.equal(exit.code, 0);
});

test('with a collector that never answers, sends do not wait for it, a full queue drops spans, and the stop is not held up', async (t) => {
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    silent.close();
  });
  const address = silent.address();
  assert.ok(address !== null && typeof address === 'object');
  const parley = await service(t, `http://127.0.0.1:${address.port}`);
  const longest = await sends(parley, 20);
  assert.ok(longest < EXPORT_TIMEOUT_MS / 3, `a send took ${longest} ms`);
  const full = 'parley_trace_spans_dropped_total{reason="queue_full"}';
  await waitFor('spans dropped from the full queue', async () => (await metric(parley, full)) > 0);
  assert.ok((await metric(parley, 'parley_trace_queue_spans')) <= 16);
  // The flush at the stop gives up on the collector rather than waiting out the export's timeout.
  const exit = await parley.stop('SIGTERM', 25_000);
  assert.equal(exit.code, 0);
  assert.ok(
    parley.logs().some((l) => /could not be sent to the OpenTelemetry collector/.test(String(l.msg))),
    parley.stdout(),
  );
});

test('spans still queued when the service is stopped reach the collector before it exits', async (t) => {
  const receiver = await startOtlpReceiver(t);
  // Nothing would be exported for ten minutes but for the stop.
  const parley = await service(t, receiver.endpoint, { OTEL_BSP_SCHEDULE_DELAY: '600000' });
  await sends(parley, 1);
  assert.equal(receiver.spans.length, 0);
  const exit = await parley.stop('SIGTERM', 20_000);
  assert.equal(exit.code, 0);
  assert.ok(receiver.spans.some((s) => s.name === 'parley.turn'));
  assert.ok(receiver.spans.some((s) => s.name === 'chat scripted'));
});

// Acceptance of issue 32 in a cluster: three real processes exporting to one OTLP receiver. A request that
// reaches a process not owning its session is forwarded with the forward's own traceparent, so the whole
// send is one trace spanning the two processes: the receiving process's server and client spans, then the
// owner's server span, parley.turn and chat.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startCluster } from '../helpers/cluster.ts';
import { call } from '../helpers/load.ts';
import { inTrace, type ReceivedSpan, spanNamed, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { killLeftoverChildren } from '../helpers/process.ts';

after(killLeftoverChildren);

const SERVER = 2;
const CLIENT = 3;

test('a send forwarded to its owner is one trace spanning the two processes', async (t) => {
  const receiver = await startOtlpReceiver(t);
  const cluster = await startCluster(t, {
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    },
  });
  if (!cluster) return;
  await cluster.waitUntilSettled();
  const created = await call(
    cluster.urls[0] as string,
    cluster.apiKey,
    'POST',
    '/v1/agents/demo/sessions',
    {},
  );
  assert.ok(!('error' in created) && created.status === 201, JSON.stringify(created));
  const sessionId = String((created.body as { id: string }).id);
  // A process other than the owner receives the send.
  const owner = await cluster.indexOf((await cluster.ownerOfSession(sessionId)) as string);
  const entry = (owner + 1) % cluster.urls.length;
  const sent = await call(
    cluster.urls[entry] as string,
    cluster.apiKey,
    'POST',
    `/v1/agents/sessions/${sessionId}/messages`,
    { content: 'Across the cluster' },
    { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
  );
  assert.ok(!('error' in sent) && sent.status === 201, JSON.stringify(sent));

  const isTurn = (s: ReceivedSpan) =>
    s.name === 'parley.turn' && s.attributes['parley.session'] === sessionId;
  const spans = await receiver.waitFor((all) => {
    const turn = all.find(isTurn);
    return !!turn && inTrace(all, turn.traceId).filter((s) => s.kind === SERVER).length >= 2;
  });
  const turn = spans.find(isTurn) as ReceivedSpan;
  // The client's trace goes on through both processes.
  assert.equal(turn.traceId, '0af7651916cd43dd8448eb211c80319c');
  const trace = inTrace(spans, turn.traceId);
  const route = 'POST /v1/agents/sessions/:session_id/messages';
  const servers = trace.filter((s) => s.name === route && s.kind === SERVER);
  assert.equal(servers.length, 2);
  const first = servers.find((s) => s.parentSpanId === 'b7ad6b7169203331') as ReceivedSpan;
  const second = servers.find((s) => s !== first) as ReceivedSpan;
  assert.ok(first, 'the receiving process continues the client span');
  const forward = spanNamed(trace, 'POST', (s) => s.kind === CLIENT && s.spanId === second.parentSpanId);
  assert.equal(forward.resource['service.instance.id'], first.resource['service.instance.id']);
  assert.notEqual(first.resource['service.instance.id'], second.resource['service.instance.id']);
  // The turn runs on the owner, under the forwarded request.
  assert.equal(turn.resource['service.instance.id'], second.resource['service.instance.id']);
  assert.ok(trace.some((s) => s.name === 'chat scripted' && s.parentSpanId === turn.spanId));
  assert.equal(new Set(trace.map((s) => s.resource['service.instance.id'])).size, 2);
});

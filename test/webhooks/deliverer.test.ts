// The webhook deliverer (docs/internals/decisions.md#webhooks) against a real SqliteStore and a real receiver
// on loopback: what a delivery carries and how it is signed, retries on the schedule until delivered or
// failed, order per session, timeouts, the private-address guard, the shards it serves, its concurrency, and
// stopping.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { VERSION } from '../../src/version.ts';
import { waitFor } from '../helpers/wait.ts';
import {
  endpoint,
  openStore,
  type ReceivedRequest,
  session,
  startDeliverer,
  startReceiver,
} from './support.ts';

const signatureHeaders = (request: ReceivedRequest) => ({
  'webhook-id': String(request.headers['webhook-id']),
  'webhook-timestamp': String(request.headers['webhook-timestamp']),
  'webhook-signature': String(request.headers['webhook-signature']),
});

test('a queued event is posted exactly as stored, signed so that standardwebhooks verifies it, and recorded delivered', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  const { tenantId, secret, deliveries } = await endpoint(store, receiver.url);
  const [event] = await (await session(store, tenantId)).queue('turn.completed');
  const before = Math.floor(Date.now() / 1000);
  const { count } = startDeliverer(t, store);

  await waitFor(
    'the delivery recorded delivered',
    async () => (await deliveries())[0]?.status === 'delivered',
  );
  assert.equal(receiver.requests.length, 1);
  const [request] = receiver.requests;
  assert.equal(request.url, '/hooks');
  assert.deepEqual(request.raw, Buffer.from(event.payload, 'utf8'));
  assert.equal(request.headers['content-type'], 'application/json');
  assert.equal(request.headers['user-agent'], `Parley-Webhooks/${VERSION}`);
  assert.equal(request.headers['webhook-id'], event.id);
  const timestamp = Number(request.headers['webhook-timestamp']);
  assert.ok(timestamp >= before && timestamp <= Math.floor(Date.now() / 1000), String(timestamp));
  // What an integrator does: verify the raw body with the endpoint's secret before trusting it.
  const verified = new Webhook(secret).verify(request.raw.toString('utf8'), signatureHeaders(request));
  assert.deepEqual(verified, JSON.parse(event.payload));
  assert.throws(() =>
    new Webhook(`whsec_${Buffer.alloc(24, 1).toString('base64')}`).verify(
      request.raw.toString('utf8'),
      signatureHeaders(request),
    ),
  );

  const [delivery] = await deliveries();
  assert.equal(delivery.event_id, event.id);
  assert.equal(delivery.attempts, 1);
  assert.equal(delivery.last_status_code, 200);
  assert.equal(delivery.next_attempt_at, null);
  assert.ok(delivery.last_attempt_at !== null);
  assert.equal(await count('delivered'), 1);
});

test('a receiver failing with 500 then 503 gets the same webhook-id three times, and the delivery ends delivered after 3 attempts', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  receiver.script(500, 503);
  const { tenantId, secret, deliveries } = await endpoint(store, receiver.url);
  const [event] = await (await session(store, tenantId)).queue('session.closed');
  const { count } = startDeliverer(t, store, { retrySchedule: [50, 50, 50] });

  await waitFor(
    'the delivery recorded delivered',
    async () => (await deliveries())[0]?.status === 'delivered',
  );
  assert.deepEqual(
    receiver.requests.map((r) => r.headers['webhook-id']),
    [event.id, event.id, event.id],
  );
  // Each attempt is signed anew, and each signature verifies.
  for (const request of receiver.requests) {
    assert.doesNotThrow(() =>
      new Webhook(secret).verify(request.raw.toString('utf8'), signatureHeaders(request)),
    );
  }
  const [delivery] = await deliveries();
  assert.equal(delivery.attempts, 3);
  assert.equal(delivery.last_status_code, 200);
  assert.equal(delivery.next_attempt_at, null);
  assert.deepEqual([await count('retry'), await count('delivered'), await count('failed')], [2, 1, 0]);
});

test('a delivery whose retry schedule is spent is recorded failed, with the last status, and a warning', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  receiver.otherwise(500);
  const { tenantId, deliveries } = await endpoint(store, receiver.url);
  const [event] = await (await session(store, tenantId)).queue('turn.failed');
  const { count, warnings } = startDeliverer(t, store, { retrySchedule: [30, 30] });

  await waitFor('the delivery recorded failed', async () => (await deliveries())[0]?.status === 'failed');
  // Attempt 1, then one after each of the two waits.
  assert.equal(receiver.requests.length, 3);
  const [delivery] = await deliveries();
  assert.equal(delivery.attempts, 3);
  assert.equal(delivery.last_status_code, 500);
  assert.equal(delivery.next_attempt_at, null);
  assert.deepEqual([await count('retry'), await count('failed'), await count('delivered')], [2, 1, 0]);
  const warning = warnings.find((w) => w.msg?.includes('failed for good'));
  assert.ok(warning, JSON.stringify(warnings));
  assert.equal((warning.obj as { event_id: string }).event_id, event.id);
});

test('events that waited behind one failed for good, older than the schedule span, get one attempt each', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  receiver.otherwise(500);
  const { tenantId, deliveries } = await endpoint(store, receiver.url);
  // Made an hour ago: longer than the span any delivery is retried for (the schedule's, at least 10 min).
  const anHourAgo = new Date(Date.now() - 3_600_000).toISOString();
  await (await session(store, tenantId)).queueAt(
    anHourAgo,
    'turn.completed',
    'turn.completed',
    'session.closed',
  );
  startDeliverer(t, store, { retrySchedule: [30, 30] });

  await waitFor('every delivery recorded failed', async () =>
    (await deliveries()).every((d) => d.status === 'failed'),
  );
  assert.deepEqual(
    (await deliveries()).map((d) => d.attempts),
    [1, 1, 1],
  );
  assert.equal(receiver.requests.length, 3);
});

test("a session's second event is not sent before its first is delivered, even when the first needs a retry", async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  receiver.script(500);
  const { tenantId, deliveries } = await endpoint(store, receiver.url);
  const [first, second] = await (await session(store, tenantId)).queue('turn.completed', 'session.closed');
  startDeliverer(t, store, { retrySchedule: [50] });

  await waitFor('both deliveries recorded delivered', async () =>
    (await deliveries()).every((d) => d.status === 'delivered'),
  );
  assert.deepEqual(
    receiver.requests.map((r) => r.headers['webhook-id']),
    [first.id, first.id, second.id],
  );
  assert.deepEqual(
    (await deliveries()).map((d) => [d.event_id, d.attempts]),
    [
      [first.id, 2],
      [second.id, 1],
    ],
  );
});

test('with a long poll, wake() sends a new event at once, and each delivery done looks again for the next one of its key', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  const { tenantId, deliveries } = await endpoint(store, receiver.url);
  const { deliverer } = startDeliverer(t, store, { pollMs: 600_000, concurrency: 1 });
  const events = await (await session(store, tenantId)).queue(
    'turn.completed',
    'turn.completed',
    'session.closed',
  );
  deliverer.wake();

  await waitFor(
    'the three deliveries recorded delivered',
    async () => (await deliveries()).filter((d) => d.status === 'delivered').length === 3,
    5_000,
  );
  assert.deepEqual(
    receiver.requests.map((r) => r.headers['webhook-id']),
    events.map((e) => e.id),
  );
});

test('a receiver that never answers times the attempt out: counted, with no status code, and pending for the next wait', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  receiver.otherwise('hold');
  const { tenantId, deliveries } = await endpoint(store, receiver.url);
  await (await session(store, tenantId)).queue('turn.completed');
  const { count } = startDeliverer(t, store, { timeoutMs: 150, retrySchedule: [60_000] });

  await waitFor('one attempt recorded', async () => (await count('retry')) === 1);
  const [delivery] = await deliveries();
  assert.equal(delivery.status, 'pending');
  assert.equal(delivery.last_status_code, null);
  assert.ok(delivery.last_attempt_at !== null && delivery.next_attempt_at !== null);
  const wait = Date.parse(delivery.next_attempt_at) - Date.parse(delivery.last_attempt_at);
  assert.ok(wait >= 60_000 && wait < 70_000, `${wait} ms`);
  assert.equal(receiver.requests.length, 1);
  assert.equal(await count('retry'), 1);
});

test('without allowPrivate, endpoints on 127.0.0.1 or a name resolving to loopback are refused without a request, and kept pending', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  const literal = await endpoint(store, receiver.url);
  // A name is resolved when the connection opens, so the address it has then is what is checked.
  const named = await endpoint(store, `http://localhost:${receiver.port}/hooks`);
  await (await session(store, literal.tenantId)).queue('turn.completed');
  await (await session(store, named.tenantId)).queue('turn.completed');
  const { count } = startDeliverer(t, store, { allowPrivate: false, retrySchedule: [60_000] });

  await waitFor('an attempt recorded for each endpoint', async () => (await count('retry')) === 2);
  for (const [delivery] of [await literal.deliveries(), await named.deliveries()]) {
    assert.equal(delivery.status, 'pending');
    assert.equal(delivery.last_status_code, null);
    assert.ok(delivery.next_attempt_at !== null);
  }
  assert.equal(receiver.requests.length, 0);
  assert.equal(await count('retry'), 2);
});

test('with allowPrivate, an endpoint named localhost is delivered', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  const { tenantId, deliveries } = await endpoint(store, `http://localhost:${receiver.port}/hooks`);
  await (await session(store, tenantId)).queue('turn.completed');
  startDeliverer(t, store, { allowPrivate: true });

  await waitFor(
    'the delivery recorded delivered',
    async () => (await deliveries())[0]?.status === 'delivered',
  );
  assert.equal(receiver.requests.length, 1);
});

test('only deliveries of the shards served are sent; a shard served later has its deliveries sent then', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  const { tenantId, deliveries } = await endpoint(store, receiver.url);
  const served = await session(store, tenantId);
  let other = await session(store, tenantId);
  while (other.shard === served.shard) other = await session(store, tenantId);
  const [servedEvent] = await served.queue('turn.completed');
  const [otherEvent] = await other.queue('turn.completed');
  const shards = [served.shard];
  const { deliverer } = startDeliverer(t, store, { shards: () => shards });

  const statusOf = async (eventId: string) => (await deliveries()).find((d) => d.event_id === eventId);
  await waitFor(
    'the served shard’s delivery delivered',
    async () => (await statusOf(servedEvent.id))?.status === 'delivered',
  );
  // Both were due from the start, so the rounds that sent one would have sent the other.
  assert.deepEqual(
    receiver.requests.map((r) => r.headers['webhook-id']),
    [servedEvent.id],
  );
  assert.equal((await statusOf(otherEvent.id))?.attempts, 0);

  shards.push(other.shard);
  deliverer.wake();
  await waitFor(
    'the other shard’s delivery delivered',
    async () => (await statusOf(otherEvent.id))?.status === 'delivered',
  );
});

test('at most `concurrency` attempts are in flight, and none is attempted again while in flight', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  receiver.otherwise('hold');
  // Five tenants with an endpoint each: their shares (two a tenant, one an endpoint, of four) leave
  // concurrency the bound.
  const endpoints: Awaited<ReturnType<typeof endpoint>>[] = [];
  const events = [];
  for (let i = 0; i < 5; i++) {
    const hook = await endpoint(store, receiver.url);
    endpoints.push(hook);
    events.push(...(await (await session(store, hook.tenantId)).queue('turn.completed')));
  }
  // Polled every 20 ms while answers are held: an attempt in flight is due again at every round.
  startDeliverer(t, store, { concurrency: 4, pollMs: 20 });

  await waitFor('four requests held', () => receiver.requests.length >= 4);
  const all = async () => (await Promise.all(endpoints.map((e) => e.deliveries()))).flat();
  await waitFor('every delivery recorded delivered', async () => {
    receiver.release();
    const listed = await all();
    return listed.length === 5 && listed.every((d) => d.status === 'delivered');
  });
  assert.ok(receiver.mostOpen <= 4, `${receiver.mostOpen} requests open at once`);
  assert.deepEqual(
    receiver.requests.map((r) => r.headers['webhook-id']).sort(),
    events.map((e) => e.id).sort(),
  );
  assert.ok((await all()).every((d) => d.attempts === 1));
});

test('stop() aborts an attempt in flight without recording an outcome: counted, the delivery stays pending and due at once for the next deliverer', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  receiver.script('hold');
  const { tenantId, deliveries } = await endpoint(store, receiver.url);
  const [event] = await (await session(store, tenantId)).queue('turn.completed');
  const first = startDeliverer(t, store, { timeoutMs: 60_000 });

  await waitFor('the request held', () => receiver.requests.length === 1);
  await first.deliverer.stop();
  const [delivery] = await deliveries();
  assert.equal(delivery.status, 'pending');
  assert.equal(delivery.attempts, 1, 'the attempt was made, if cut off');
  assert.ok(delivery.last_attempt_at !== null);
  assert.ok(delivery.next_attempt_at !== null && Date.parse(delivery.next_attempt_at) <= Date.now());
  assert.equal(
    (await first.registry.getMetricsAsJSON()).find((m) => m.name === 'parley_webhook_deliveries_total')
      ?.values.length,
    0,
  );

  // Whoever serves the shard next sends it again, under the same webhook-id.
  startDeliverer(t, store);
  await waitFor(
    'the delivery recorded delivered',
    async () => (await deliveries())[0]?.status === 'delivered',
  );
  assert.deepEqual(
    receiver.requests.map((r) => r.headers['webhook-id']),
    [event.id, event.id],
  );
  assert.equal((await deliveries())[0].attempts, 2);
});

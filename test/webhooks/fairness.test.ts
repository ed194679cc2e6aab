// The deliverer's fairness and backoff (docs/internals/decisions.md#webhooks) against a real SqliteStore and
// real receivers on loopback: a tenant holds at most half the slots and an endpoint a quarter, so another
// tenant's delivery goes at once; an endpoint whose attempt failed is backed off as a whole, then tried with
// one delivery (a probe), and its other deliveries go once one is answered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../helpers/wait.ts';
import { endpoint, openStore, session, startDeliverer, startReceiver } from './support.ts';

test("a tenant holds at most half the slots and an endpoint a quarter; another tenant's delivery goes meanwhile", async (t) => {
  const store = await openStore(t);
  const busy = await startReceiver(t);
  busy.otherwise('hold');
  const quick = await startReceiver(t);
  // Three endpoints of one tenant on the holding receiver (told apart by their paths), three deliveries each.
  const first = await endpoint(store, `${busy.url}/0`);
  const hooks = [first.webhook.id];
  for (const n of [1, 2]) {
    const more = await store.createWebhook(
      first.tenantId,
      { id: `wh_fair_${n}`, url: `${busy.url}/${n}`, events: ['turn.completed'], secret: first.secret },
      20,
    );
    assert.ok(more);
    hooks.push(more.id);
  }
  for (let i = 0; i < 3; i++) await (await session(store, first.tenantId)).queue('turn.completed');
  const other = await endpoint(store, quick.url);
  const [otherEvent] = await (await session(store, other.tenantId)).queue('turn.completed');
  // Eight slots: four for a tenant, two for an endpoint.
  startDeliverer(t, store, { concurrency: 8, pollMs: 20, timeoutMs: 30_000 });

  await waitFor(
    'the other tenant’s delivery delivered',
    async () => (await other.deliveries())[0]?.status === 'delivered',
  );
  await waitFor('the busy tenant’s share held', () => busy.requests.length === 4);
  assert.equal(quick.requests[0]?.headers['webhook-id'], otherEvent?.id);
  // The rounds that sent the other tenant's delivery (and polled since) would have sent more of the busy one's.
  assert.equal(busy.requests.length, 4, 'a tenant holds four of eight slots');
  const perEndpoint = new Map<string, number>();
  for (const r of busy.requests) perEndpoint.set(r.url, (perEndpoint.get(r.url) ?? 0) + 1);
  assert.ok(
    [...perEndpoint.values()].every((n) => n <= 2),
    JSON.stringify([...perEndpoint]),
  );

  await waitFor('every delivery of the busy tenant delivered', async () => {
    busy.release();
    const page = await Promise.all(
      hooks.map((id) => store.listWebhookDeliveries(first.tenantId, id, { limit: 100, offset: 0 })),
    );
    const listed = page.flatMap((p) => p?.items ?? []);
    return listed.length === 9 && listed.every((d) => d.status === 'delivered');
  });
  assert.ok(busy.mostOpen <= 4, `${busy.mostOpen} open at once`);
});

test('an endpoint whose attempts fail is backed off as a whole: its deliveries wait together, one probe goes, and once it is answered the rest go', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  // The first two attempts never answered (timed out), then answers.
  receiver.script('hold', 'hold');
  const { tenantId, deliveries } = await endpoint(store, receiver.url);
  for (let i = 0; i < 6; i++) await (await session(store, tenantId)).queue('turn.completed');
  const wait = 600;
  // Eight slots, two for an endpoint: the first wave is two attempts.
  const { count } = startDeliverer(t, store, {
    concurrency: 8,
    pollMs: 20,
    timeoutMs: 200,
    retrySchedule: [wait, wait, wait],
  });

  await waitFor('both failures recorded', async () => (await count('retry')) === 2);
  const held = (await deliveries()).filter((d) => d.attempts === 0);
  assert.equal(held.length, 4);
  const [firstFailed] = (await deliveries()).filter((d) => d.attempts === 1);
  assert.ok(firstFailed?.last_attempt_at);
  for (const d of held) {
    assert.ok(d.next_attempt_at !== null, 'due, not blocked');
    // Held until the endpoint's wait after its failure, not due at once.
    assert.ok(
      Date.parse(d.next_attempt_at) >= Date.parse(firstFailed.last_attempt_at) + wait,
      d.next_attempt_at,
    );
  }

  await waitFor(
    'every delivery delivered',
    async () => (await deliveries()).every((d) => d.status === 'delivered'),
    10_000,
  );
  const [a, b, probe] = receiver.requests;
  assert.ok(a && b && probe);
  assert.ok(probe.at - a.at >= wait, `the probe went ${probe.at - a.at} ms after the first attempt`);
  assert.equal(probe.openOnArrival, 1, 'the probe went alone');
  // Six deliveries, two of them tried twice.
  assert.equal(receiver.requests.length, 8);
  assert.deepEqual((await deliveries()).map((d) => d.attempts).sort(), [1, 1, 1, 1, 2, 2]);
});

// The deliverer's fairness and backoff (docs/internals/decisions.md#webhooks) against a real SqliteStore and
// real receivers on loopback: another tenant's delivery goes while one tenant's endpoints hold their slots,
// and a tenant alone holds three quarters of them, an endpoint with others due a quarter; an endpoint whose
// attempt failed is backed off as a whole, then tried with one delivery (a probe), and its other deliveries
// go once one is answered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../helpers/wait.ts';
import { endpoint, openStore, session, startDeliverer, startReceiver } from './support.ts';

test("another tenant's delivery goes while one tenant's endpoints hold their slots; alone, a tenant holds three quarters of them, an endpoint with others due a quarter", async (t) => {
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
  // Eight slots: four for a tenant (six alone), two for an endpoint with others due.
  startDeliverer(t, store, { concurrency: 8, pollMs: 20, timeoutMs: 30_000 });

  await waitFor(
    'the other tenant’s delivery delivered',
    async () => (await other.deliveries())[0]?.status === 'delivered',
  );
  assert.equal(quick.requests[0]?.headers['webhook-id'], otherEvent?.id);
  await waitFor('the busy tenant alone holds six slots', () => busy.requests.length === 6);
  const perEndpoint = new Map<string, number>();
  for (const r of busy.requests) perEndpoint.set(r.url, (perEndpoint.get(r.url) ?? 0) + 1);
  assert.deepEqual([...perEndpoint.values()], [2, 2, 2]);

  await waitFor('every delivery of the busy tenant delivered', async () => {
    busy.release();
    const page = await Promise.all(
      hooks.map((id) => store.listWebhookDeliveries(first.tenantId, id, { limit: 100, offset: 0 })),
    );
    const listed = page.flatMap((p) => p?.items ?? []);
    return listed.length === 9 && listed.every((d) => d.status === 'delivered');
  });
  assert.ok(busy.mostOpen <= 6, `${busy.mostOpen} open at once`);
});

test('an endpoint whose attempts fail is backed off as a whole: its deliveries wait together, one probe goes, and once it is answered the rest go', async (t) => {
  const store = await openStore(t);
  const receiver = await startReceiver(t);
  // Eight slots: the endpoint, alone, holds six. The first six attempts are never answered (they time out),
  // then it answers.
  receiver.script('hold', 'hold', 'hold', 'hold', 'hold', 'hold');
  const { tenantId, deliveries } = await endpoint(store, receiver.url);
  for (let i = 0; i < 10; i++) await (await session(store, tenantId)).queue('turn.completed');
  const wait = 600;
  const { count } = startDeliverer(t, store, {
    concurrency: 8,
    pollMs: 20,
    timeoutMs: 200,
    retrySchedule: [wait, wait, wait],
  });

  await waitFor('the first six failures recorded', async () => (await count('retry')) === 6);
  const listed = await deliveries();
  const held = listed.filter((d) => d.attempts === 0);
  assert.equal(held.length, 4);
  const lastFailed = listed
    .map((d) => d.last_attempt_at)
    .filter((at): at is string => at !== null)
    .sort()
    .at(-1);
  assert.ok(lastFailed);
  for (const d of held) {
    assert.ok(d.next_attempt_at !== null, 'due, not blocked');
    // Held until the endpoint's wait after its failures, not due at once.
    assert.ok(Date.parse(d.next_attempt_at) >= Date.parse(lastFailed) + wait, d.next_attempt_at);
  }

  await waitFor(
    'every delivery delivered',
    async () => (await deliveries()).every((d) => d.status === 'delivered'),
    10_000,
  );
  const [first, probe] = [receiver.requests[0], receiver.requests[6]];
  assert.ok(first && probe);
  assert.ok(probe.at - first.at >= wait, `the probe went ${probe.at - first.at} ms after the first attempt`);
  assert.equal(probe.openOnArrival, 1, 'the probe went alone');
  // Ten deliveries, six of them tried twice.
  assert.equal(receiver.requests.length, 16);
  assert.deepEqual((await deliveries()).map((d) => d.attempts).sort(), [1, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
});

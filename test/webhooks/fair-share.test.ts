// How a deliverer's round shares its free slots (src/webhooks/fair-share.ts): round-robin across tenants,
// then endpoints, the least busy first; a tenant at half the slots and an endpoint at a quarter get no more;
// a failing endpoint gets one; and what a query for more need not return.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DueWebhookDelivery } from '../../src/store/store.ts';
import { pickFairly, saturated, sharesOf } from '../../src/webhooks/fair-share.ts';

let n = 0;
/** A due delivery of `tenant` to `webhook` (earlier made, earlier due). */
const due = (tenant: string, webhook: string, failures = 0): DueWebhookDelivery => ({
  id: `whd_${++n}`,
  tenant_id: tenant,
  webhook_id: webhook,
  event_id: `evt_${n}`,
  type: 'turn.completed',
  ordering_key: `ses_${n}`,
  shard: 0,
  attempts: 0,
  next_attempt_at: new Date(n).toISOString(),
  url: 'https://x.example.com/',
  secret: 'whsec_x',
  created_at: new Date(n).toISOString(),
  endpoint_failures: failures,
  endpoint_retry_at: failures > 0 ? new Date(0).toISOString() : null,
});
const ids = (ds: DueWebhookDelivery[]) => ds.map((d) => `${d.tenant_id}/${d.webhook_id}`);

test('shares: half the slots a tenant, a quarter an endpoint, three quarters alone, at least one each', () => {
  assert.deepEqual(sharesOf(16), { tenant: 8, endpoint: 4, alone: 12 });
  assert.deepEqual(sharesOf(2), { tenant: 1, endpoint: 1, alone: 2 });
});

test('a tenant, and an endpoint, alone among the due deliveries may hold three quarters of the slots, not all', () => {
  const candidates = Array.from({ length: 20 }, () => due('A', 'a1'));
  assert.equal(pickFairly(candidates, 16, [], sharesOf(16)).picked.length, 12);
  const twoEndpoints = [...candidates, due('A', 'a2')];
  assert.deepEqual(
    ids(pickFairly(twoEndpoints, 16, [], sharesOf(16)).picked).sort(),
    [...Array(4).fill('A/a1'), 'A/a2'],
    'an endpoint with another due holds its quarter',
  );
});

test('a round takes one delivery a tenant in turn, the earliest due tenant first, and a tenant’s endpoints in turn', () => {
  const candidates = [
    due('A', 'a1'),
    due('A', 'a1'),
    due('A', 'a2'),
    due('A', 'a1'),
    due('B', 'b1'),
    due('C', 'c1'),
  ];
  const { picked, heldBack } = pickFairly(candidates, 5, [], sharesOf(16));
  assert.deepEqual(ids(picked), ['A/a1', 'B/b1', 'C/c1', 'A/a2', 'A/a1']);
  assert.equal(heldBack, false, 'left for want of room');
});

test('a tenant or an endpoint at its share gets no more; the least busy tenant goes first', () => {
  const shares = sharesOf(8); // a tenant 4, an endpoint 2
  const busy = [
    { tenant_id: 'A', webhook_id: 'a1', endpoint_failures: 0 },
    { tenant_id: 'A', webhook_id: 'a1', endpoint_failures: 0 },
    { tenant_id: 'A', webhook_id: 'a2', endpoint_failures: 0 },
  ];
  const candidates = [due('A', 'a1'), due('A', 'a2'), due('A', 'a3'), due('A', 'a2'), due('B', 'b1')];
  const { picked, heldBack } = pickFairly(candidates, 5, busy, shares);
  // B has nothing in flight: first. A has one slot left (4 − 3), for its least busy endpoint, a3.
  assert.deepEqual(ids(picked), ['B/b1', 'A/a3']);
  assert.equal(heldBack, true, 'some were left for their shares with room free');
  assert.deepEqual(saturated([...busy, ...picked], shares), { tenants: ['A'], webhooks: ['a1'] });
});

test('a failing endpoint’s probe is its delivery tried least, so that one it always refuses does not hold the others', () => {
  const refusedAlways = { ...due('A', 'flaky', 2), attempts: 5 };
  const others = [
    { ...due('A', 'flaky', 2), attempts: 1 },
    { ...due('A', 'flaky', 2), attempts: 0 },
  ];
  const { picked } = pickFairly([refusedAlways, ...others], 8, [], sharesOf(16));
  assert.deepEqual(
    picked.map((d) => d.attempts),
    [0],
  );
});

test('a failing endpoint gets one slot: its probe', () => {
  const candidates = [due('A', 'dead', 3), due('A', 'dead', 3), due('A', 'dead', 3), due('A', 'ok')];
  assert.deepEqual(ids(pickFairly(candidates, 8, [], sharesOf(16)).picked), ['A/dead', 'A/ok']);
  const probing = [{ tenant_id: 'A', webhook_id: 'dead' }];
  assert.deepEqual(ids(pickFairly(candidates, 8, probing, sharesOf(16)).picked), ['A/ok']);
});

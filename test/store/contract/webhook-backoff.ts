// Store contract: an endpoint backed off as a whole. A failed attempt holds the endpoint's due deliveries
// until its retry time (new ones too), one process at a time takes its probe, an answered attempt makes it
// healthy again, and deliveries older than the retry span of an endpoint failing that long are given up; the
// due query leaves out what a deliverer asks it to skip.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import { WEBHOOK_ENDPOINT_FAILING } from '../../../src/store/store.ts';
import type { OpenStore } from './support.ts';
import { webhookFixture } from './webhook-support.ts';

export function webhookBackoff(open: OpenStore): void {
  describe('webhook endpoints backed off as a whole', () => {
    const { ctx, tenant, createSession, endpoint, event, queue, deliveries, iso, due, record, deliverAll } =
      webhookFixture(open);

    /** Claims a due delivery (as read) at `at`; the claimed form for record(). */
    async function claimDue(d: { id: string; attempts: number; next_attempt_at: string | null }, at: string) {
      assert.ok(d.next_attempt_at);
      const claim = { id: d.id, attempts: d.attempts, next_attempt_at: d.next_attempt_at, at, until: at };
      assert.equal(await ctx.store.claimWebhookDelivery(claim), true);
      return { id: d.id, attempts: d.attempts + 1 };
    }

    const dueOf = async (at: string, webhookId: string) =>
      (await ctx.store.dueWebhookDeliveries(at, 1000)).filter((d) => d.webhook_id === webhookId);

    it('a failed attempt holds the endpoint’s due deliveries until its retry time, new ones too; an answered one lets them go', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed']);
      const { webhook: other } = await endpoint(tenantId, ['turn.completed']);
      const events = [0, 1, 2].map((n) => event(tenantId, 'turn.completed', { created_at: iso(n) }));
      await queue(tenantId, events);
      const [first, ...rest] = await dueOf(iso(10), webhook.id);
      assert.ok(first && rest.length === 2);
      assert.deepEqual([first.endpoint_failures, first.endpoint_retry_at], [0, null]);

      const failed = await claimDue(first, iso(10));
      const endpointState = { retry_at: iso(1_000), probe: false, give_up_before: iso(-1e9) };
      assert.equal(await record(failed, 'pending', 500, iso(10), iso(500), endpointState), true);
      assert.deepEqual(await dueOf(iso(999), webhook.id), [], 'none due while it is backed off');
      assert.equal((await dueOf(iso(999), other.id)).length, 3, 'its other endpoint is not held');
      const listed = (await deliveries(tenantId, webhook.id)).filter((d) => d.status === 'pending');
      assert.deepEqual(
        listed.map((d) => d.next_attempt_at),
        [iso(1_000), iso(1_000), iso(1_000)],
        'held together at its retry time (its own retry was sooner)',
      );
      // A new delivery to it waits with the others.
      const later = event(tenantId, 'turn.completed', { created_at: iso(20) });
      await queue(tenantId, [later]);
      const ofLater = (await deliveries(tenantId, webhook.id)).find((d) => d.event_id === later.id);
      assert.equal(ofLater?.next_attempt_at, iso(1_000));

      const again = await dueOf(iso(1_000), webhook.id);
      assert.equal(again.length, 4);
      assert.deepEqual([again[0]?.endpoint_failures, again[0]?.endpoint_retry_at], [1, iso(1_000)]);
      // The probe is answered: healthy again.
      const probe = again[0];
      assert.ok(probe);
      const claimed = await claimDue(probe, iso(1_001));
      assert.equal(await record(claimed, 'delivered', 200, iso(1_001), null, null), true);
      const healthy = await dueOf(iso(1_001), webhook.id);
      assert.equal(healthy.length, 3);
      assert.deepEqual([healthy[0]?.endpoint_failures, healthy[0]?.endpoint_retry_at], [0, null]);
      await deliverAll(iso(2_000), new Set([webhook.id, other.id]));
    });

    it('one claim takes a failing endpoint’s probe, as read; the reverse gives it back; a probe’s failure sets the retry time and counts one more', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed']);
      await queue(
        tenantId,
        [0, 1].map((n) => event(tenantId, 'turn.completed', { created_at: iso(n) })),
      );
      const [first] = await dueOf(iso(10), webhook.id);
      assert.ok(first);
      const failing = { retry_at: iso(100), probe: false, give_up_before: iso(-1e9) };
      await record(await claimDue(first, iso(10)), 'pending', null, iso(10), iso(50), failing);

      const probe = { webhook_id: webhook.id, retry_at: iso(100), until: iso(5_000) };
      const taken = await Promise.all([
        ctx.store.claimWebhookProbe(probe),
        ctx.store.claimWebhookProbe(probe),
      ]);
      assert.deepEqual(taken.sort(), [false, true]);
      assert.deepEqual(await dueOf(iso(4_999), webhook.id), [], 'not due while its probe is out');
      assert.equal(
        await ctx.store.claimWebhookProbe({ ...probe, retry_at: iso(5_000), until: iso(100) }),
        true,
      );
      assert.equal((await dueOf(iso(100), webhook.id)).length, 2, 'given back');
      assert.equal(await ctx.store.claimWebhookProbe({ ...probe, webhook_id: newId('wh') }), false);

      // A probe that fails: one more failure, and the retry time it gives, even sooner than the claim's.
      assert.equal(await ctx.store.claimWebhookProbe(probe), true);
      const [next] = await dueOf(iso(100), webhook.id);
      assert.equal(next, undefined);
      const listed = (await deliveries(tenantId, webhook.id)).find((d) => d.attempts === 0);
      assert.ok(listed);
      await ctx.store.claimWebhookDelivery({
        id: listed.id,
        attempts: 0,
        next_attempt_at: iso(100),
        at: iso(101),
        until: iso(101),
      });
      const probeFailed = { retry_at: iso(300), probe: true, give_up_before: iso(-1e9) };
      assert.equal(
        await record({ id: listed.id, attempts: 1 }, 'pending', 503, iso(101), iso(200), probeFailed),
        true,
      );
      const after = await dueOf(iso(300), webhook.id);
      assert.deepEqual(
        after.map((d) => [d.endpoint_failures, d.endpoint_retry_at, d.next_attempt_at]),
        [
          [2, iso(300), iso(300)],
          [2, iso(300), iso(300)],
        ],
      );
      // Another attempt's failure never brings the retry time sooner.
      const [one] = after;
      assert.ok(one);
      const late = { retry_at: iso(200), probe: false, give_up_before: iso(-1e9) };
      await record(await claimDue(one, iso(300)), 'pending', 500, iso(300), iso(400), late);
      const [still] = await dueOf(iso(300), webhook.id);
      assert.deepEqual([still?.endpoint_failures, still?.endpoint_retry_at], [2, iso(300)]);
      await deliverAll(iso(10_000), new Set([webhook.id]));
    });

    it('an endpoint failing for longer than the retry span gives up its deliveries older than it, unsent, and its keys go on from the next', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed']);
      const { record: session } = await createSession(tenantId);
      const key = session.id;
      const old1 = event(tenantId, 'turn.completed', { ordering_key: key, created_at: iso(0) });
      const old2 = event(tenantId, 'turn.completed', { ordering_key: key, created_at: iso(1) });
      const young = event(tenantId, 'turn.completed', { ordering_key: key, created_at: iso(5_000) });
      const otherKeyOld = event(tenantId, 'turn.completed', { created_at: iso(2) });
      await queue(tenantId, [old1, old2, young, otherKeyOld]);
      const before = await ctx.store.webhookOutboxUsage(tenantId);

      // Failing since iso(10).
      const [head] = await dueOf(iso(10), webhook.id);
      assert.ok(head);
      const failing = { retry_at: iso(20), probe: false, give_up_before: iso(-1e9) };
      await record(await claimDue(head, iso(10)), 'pending', 500, iso(10), iso(20), failing);
      // Still failing at iso(6_000), with a span of 2 s: failing since before iso(4_000), so the deliveries
      // created before it are given up.
      const [probe] = await dueOf(iso(6_000), webhook.id);
      assert.ok(probe);
      const givingUp = { retry_at: iso(7_000), probe: true, give_up_before: iso(4_000) };
      await record(await claimDue(probe, iso(6_000)), 'pending', 500, iso(6_000), iso(6_500), givingUp);

      const listed = await deliveries(tenantId, webhook.id);
      const of = (e: { id: string }) => listed.find((d) => d.event_id === e.id);
      for (const e of [old1, old2, otherKeyOld]) {
        assert.deepEqual(
          [of(e)?.status, of(e)?.error, of(e)?.next_attempt_at],
          ['failed', WEBHOOK_ENDPOINT_FAILING, null],
        );
      }
      assert.deepEqual(
        [of(young)?.status, of(young)?.next_attempt_at],
        ['pending', iso(7_000)],
        'the key goes on',
      );
      const bytes = Buffer.byteLength(old1.payload);
      assert.deepEqual(await ctx.store.webhookOutboxUsage(tenantId), {
        pending_deliveries: before.pending_deliveries - 3,
        pending_bytes: before.pending_bytes - 3 * bytes,
      });
      await deliverAll(iso(10_000), new Set([webhook.id]));
    });

    it('dueWebhookDeliveries leaves out the tenants and endpoints it is asked to skip', async () => {
      const a = await tenant();
      const b = await tenant();
      const { webhook: a1 } = await endpoint(a, ['turn.completed']);
      const { webhook: a2 } = await endpoint(a, ['turn.completed']);
      const { webhook: b1 } = await endpoint(b, ['turn.completed']);
      await queue(a, [event(a, 'turn.completed', { created_at: iso(0) })]);
      await queue(b, [event(b, 'turn.completed', { created_at: iso(0) })]);
      const ours = new Set([a1.id, a2.id, b1.id]);
      const webhooksOf = async (skip: { tenants: string[]; webhooks: string[] }) =>
        (await ctx.store.dueWebhookDeliveries(iso(1), 1000, undefined, skip))
          .filter((d) => ours.has(d.webhook_id))
          .map((d) => d.webhook_id)
          .sort();
      assert.deepEqual(await webhooksOf({ tenants: [], webhooks: [] }), [a1.id, a2.id, b1.id].sort());
      assert.deepEqual(await webhooksOf({ tenants: [a], webhooks: [] }), [b1.id]);
      assert.deepEqual(await webhooksOf({ tenants: [], webhooks: [a1.id] }), [a2.id, b1.id].sort());
      assert.deepEqual(await webhooksOf({ tenants: [b], webhooks: [a2.id] }), [a1.id]);
      assert.equal((await due(iso(1), ours)).length, 3);
      await deliverAll(iso(1), ours);
    });
  });
}

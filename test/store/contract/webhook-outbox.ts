// Store contract: what keeps the webhook outbox safe under concurrency and bounded: an endpoint deleted while
// an attempt of it is recorded, the endpoint cap held by concurrent registrations, attempts counted when
// claimed (so that one cut off still counts), and a tenant's cap on pending deliveries.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import { WEBHOOK_OUTBOX_FULL, type WebhookEvent } from '../../../src/store/store.ts';
import type { OpenStore } from './support.ts';
import { webhookFixture } from './webhook-support.ts';

export function webhookOutbox(open: OpenStore): void {
  describe('the webhook outbox under concurrency and bounds', () => {
    const {
      ctx,
      tenant,
      claim,
      createSession,
      endpoint,
      event,
      queue,
      deliveries,
      iso,
      due,
      attempt,
      deliverAll,
    } = webhookFixture(open);

    it('createWebhook counts the tenant’s endpoints in its own transaction: of 30 registered at once with a limit of 20, 20 are created', async () => {
      const tenantId = await tenant();
      const other = await tenant();
      await endpoint(other, ['user.deleted']);
      const created = await Promise.all(
        Array.from({ length: 30 }, (_, n) =>
          ctx.store.createWebhook(
            tenantId,
            {
              id: newId('wh'),
              url: `https://hooks.example.com/${n}`,
              events: ['user.deleted'],
              secret: 'whsec_x',
            },
            20,
          ),
        ),
      );
      assert.equal(created.filter((w) => w !== null).length, 20);
      assert.equal((await ctx.store.listWebhooks(tenantId)).length, 20);
      assert.equal(
        await ctx.store.createWebhook(
          tenantId,
          { id: newId('wh'), url: 'https://a.example.com/', events: ['user.deleted'], secret: 'whsec_x' },
          20,
        ),
        null,
        'at the limit',
      );
      // Another tenant's endpoints count for that tenant only.
      assert.ok(
        await ctx.store.createWebhook(
          other,
          { id: newId('wh'), url: 'https://a.example.com/', events: ['user.deleted'], secret: 'whsec_x' },
          2,
        ),
      );
      assert.equal(
        await ctx.store.createWebhook(
          other,
          { id: newId('wh'), url: 'https://b.example.com/', events: ['user.deleted'], secret: 'whsec_x' },
          2,
        ),
        null,
      );
    });

    it('deleting an endpoint while an attempt of it is recorded ends both without an error, whatever the order of its deliveries', async () => {
      const tenantId = await tenant();
      for (let round = 0; round < 30; round++) {
        const { webhook } = await endpoint(tenantId, ['turn.completed']);
        const ours = new Set([webhook.id]);
        const { record, fence } = await createSession(tenantId);
        // One key, the later events stamped earlier: the row order a delete walks is not the key's order.
        const events: WebhookEvent[] = [];
        for (let n = 0; n < 5; n++) {
          events.push(event(tenantId, 'turn.completed', { ordering_key: record.id, created_at: iso(-n) }));
        }
        await ctx.store.commitSession({
          session_id: record.id,
          fence,
          patch: { snapshot: '{}' },
          webhookEvents: events,
        });
        const [head] = (await ctx.store.dueWebhookDeliveries(iso(0), 1000)).filter((d) =>
          ours.has(d.webhook_id),
        );
        assert.ok(head);
        // Recorded delivered, which makes the next one of the key due in the same transaction.
        const [recorded, deleted] = await Promise.allSettled([
          ctx.store.recordWebhookAttempt({
            id: head.id,
            attempts: head.attempts,
            status: 'delivered',
            status_code: 200,
            error: null,
            at: iso(1),
            endpoint: null,
            next_attempt_at: null,
          }),
          ctx.store.deleteWebhook(tenantId, webhook.id),
        ]);
        assert.equal(
          recorded.status,
          'fulfilled',
          `round ${round}: ${String((recorded as PromiseRejectedResult).reason)}`,
        );
        assert.deepEqual(deleted, { status: 'fulfilled', value: true }, `round ${round}`);
        assert.deepEqual(await due(iso(1), ours), []);
      }
    });

    it('past its cap of pending deliveries a tenant’s new deliveries are stored failed as outbox_full, told once committed, and room comes back as they are done', async () => {
      const tenantId = await tenant();
      const other = await tenant();
      const refusals: number[] = [];
      ctx.store.configureWebhookOutbox({
        maxPendingDeliveries: 5,
        maxPendingBytes: 1e9,
        onRefused: (n) => refusals.push(n),
      });
      const { webhook: a } = await endpoint(tenantId, ['turn.completed']);
      const { webhook: b } = await endpoint(tenantId, ['turn.completed']);
      const { webhook: elsewhere } = await endpoint(other, ['turn.completed']);
      const ours = new Set([a.id, b.id, elsewhere.id]);
      const events = [0, 1, 2, 3].map((n) => event(tenantId, 'turn.completed', { created_at: iso(n) }));
      const bytes = Buffer.byteLength(events[0]?.payload ?? '');
      assert.equal(await queue(tenantId, events), 5, 'the deliveries queued pending');
      assert.deepEqual(refusals, [3]);
      assert.deepEqual(await ctx.store.webhookOutboxUsage(tenantId), {
        pending_deliveries: 5,
        pending_bytes: 5 * bytes,
      });
      const listed = [...(await deliveries(tenantId, a.id)), ...(await deliveries(tenantId, b.id))];
      const refused = listed.filter((d) => d.status === 'failed');
      assert.equal(refused.length, 3);
      for (const d of refused) {
        assert.deepEqual(
          [d.error, d.attempts, d.last_attempt_at, d.next_attempt_at, d.last_status_code],
          [WEBHOOK_OUTBOX_FULL, 0, null, null, null],
        );
      }
      assert.equal((await due(iso(10), ours)).length, 5, 'a refused delivery is never due');
      // Another tenant has its own room.
      assert.equal(await queue(other, [event(other, 'turn.completed', { created_at: iso(0) })]), 1);
      assert.deepEqual(refusals, [3]);

      // One delivered: room for one more.
      const [first] = (await ctx.store.dueWebhookDeliveries(iso(10), 1000)).filter(
        (d) => d.webhook_id === a.id,
      );
      assert.ok(first);
      assert.equal(await attempt(first, 'delivered', 200, iso(11), null), true);
      assert.equal((await ctx.store.webhookOutboxUsage(tenantId)).pending_deliveries, 4);
      assert.equal(await queue(tenantId, [event(tenantId, 'turn.completed', { created_at: iso(12) })]), 1);
      assert.deepEqual(refusals, [3, 1]);
      await deliverAll(iso(20), ours);
      assert.deepEqual(await ctx.store.webhookOutboxUsage(tenantId), {
        pending_deliveries: 0,
        pending_bytes: 0,
      });
    });

    it('a tenant’s cap on pending bytes counts a payload once for each endpoint still to be sent it', async () => {
      const tenantId = await tenant();
      const { webhook: a } = await endpoint(tenantId, ['turn.completed']);
      const { webhook: b } = await endpoint(tenantId, ['turn.completed']);
      const big = event(tenantId, 'turn.completed', {
        created_at: iso(0),
        payload: JSON.stringify({ type: 'turn.completed', data: 'x'.repeat(1000) }),
      });
      const bytes = Buffer.byteLength(big.payload);
      const refusals: number[] = [];
      ctx.store.configureWebhookOutbox({
        maxPendingDeliveries: 100,
        maxPendingBytes: 3 * bytes,
        onRefused: (n) => refusals.push(n),
      });
      assert.equal(await queue(tenantId, [big]), 2);
      const again = { ...big, id: newId('evt'), created_at: iso(1) };
      assert.equal(await queue(tenantId, [again]), 1, 'one of two fits in the bytes left');
      assert.deepEqual(refusals, [1]);
      assert.deepEqual(await ctx.store.webhookOutboxUsage(tenantId), {
        pending_deliveries: 3,
        pending_bytes: 3 * bytes,
      });
      // Deleting an endpoint takes what its pending deliveries counted off the outbox.
      const pendingOfA = (await deliveries(tenantId, a.id)).filter((d) => d.status === 'pending').length;
      assert.equal(await ctx.store.deleteWebhook(tenantId, a.id), true);
      assert.deepEqual(await ctx.store.webhookOutboxUsage(tenantId), {
        pending_deliveries: 3 - pendingOfA,
        pending_bytes: (3 - pendingOfA) * bytes,
      });
      await deliverAll(iso(10), new Set([b.id]));
      assert.deepEqual(await ctx.store.webhookOutboxUsage(tenantId), {
        pending_deliveries: 0,
        pending_bytes: 0,
      });
    });

    it('a refused delivery does not hold its key: the next one of its endpoint and key is due once there is room', async () => {
      const tenantId = await tenant();
      const { webhook } = await endpoint(tenantId, ['turn.completed']);
      const ours = new Set([webhook.id]);
      ctx.store.configureWebhookOutbox({ maxPendingDeliveries: 1, maxPendingBytes: 1e9 });
      const { record: session } = await createSession(tenantId);
      const [k1, k2, k3] = [0, 1, 2].map((n) =>
        event(tenantId, 'turn.completed', { ordering_key: session.id, created_at: iso(n) }),
      );
      assert.ok(k1 && k2 && k3);
      assert.equal(await queue(tenantId, [k1, k2]), 1);
      assert.deepEqual(await due(iso(5), ours), [`${webhook.id}:${k1.id}`]);
      await deliverAll(iso(5), ours);
      assert.equal(await queue(tenantId, [k3]), 1);
      assert.deepEqual(
        await due(iso(5), ours),
        [`${webhook.id}:${k3.id}`],
        'k3 is not behind the refused k2',
      );
      await deliverAll(iso(5), ours);
    });

    it('a change refused by its fence tells no refusal, and commits of a group tell each their own', async () => {
      const tenantId = await tenant();
      await endpoint(tenantId, ['turn.completed']);
      const refusals: number[] = [];
      ctx.store.configureWebhookOutbox({
        maxPendingDeliveries: 1,
        maxPendingBytes: 1e9,
        onRefused: (n) => refusals.push(n),
      });
      const first = await createSession(tenantId);
      const second = await createSession(tenantId);
      const commit = (s: typeof first, events: WebhookEvent[]) =>
        ctx.store.commitSession({
          session_id: s.record.id,
          fence: s.fence,
          patch: { snapshot: '{}' },
          webhookEvents: events,
        });
      const results = await Promise.all([
        commit(first, [event(tenantId, 'turn.completed', { created_at: iso(0) })]),
        commit(second, [
          event(tenantId, 'turn.completed', { created_at: iso(0) }),
          event(tenantId, 'turn.completed', { created_at: iso(0) }),
        ]),
      ]);
      assert.deepEqual(
        results.map((r) => [r.webhook_deliveries, r.webhook_refused]),
        [
          [1, 0],
          [0, 2],
        ],
      );
      assert.deepEqual(refusals, [2]);
      await claim(first.fence.shard);
      await assert.rejects(commit(first, [event(tenantId, 'turn.completed', { created_at: iso(1) })]));
      assert.deepEqual(refusals, [2], 'nothing told of a change that did not commit');
    });

    it('pruneWebhookEvents deletes a payload once none of its deliveries is pending, and never one still to be sent', async () => {
      const tenantId = await tenant();
      const { webhook: a } = await endpoint(tenantId, ['turn.completed']);
      const { webhook: b } = await endpoint(tenantId, ['turn.completed']);
      const completed = event(tenantId, 'turn.completed', { created_at: iso(0) });
      await queue(tenantId, [completed]);
      const dueNow = async (w: string) =>
        (await ctx.store.dueWebhookDeliveries(iso(1), 1000)).filter((d) => d.webhook_id === w);
      const [toA] = await dueNow(a.id);
      assert.ok(toA);
      assert.equal(await attempt(toA, 'delivered', 200, iso(1), null), true);
      await ctx.store.pruneWebhookEvents(1_000_000);
      // Still pending to b: its payload is there to send.
      const [toB] = await dueNow(b.id);
      assert.ok(toB);
      assert.equal(await ctx.store.webhookPayload(toB.event_id), completed.payload);
      assert.equal(await attempt(toB, 'failed', 410, iso(1), null), true);
      assert.ok((await ctx.store.pruneWebhookEvents(1_000_000)) >= 1);
      assert.equal(await ctx.store.pruneWebhookEvents(1), 0, 'nothing left to prune');
      assert.equal(await ctx.store.webhookPayload(completed.id), null, 'its payload is gone');
      // The deliveries stay listed, without their payload.
      assert.deepEqual(
        (await deliveries(tenantId, a.id)).map((d) => d.status),
        ['delivered'],
      );
      assert.deepEqual(
        (await deliveries(tenantId, b.id)).map((d) => d.status),
        ['failed'],
      );
    });
  });
}

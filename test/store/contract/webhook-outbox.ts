// Store contract: what keeps the webhook outbox safe under concurrency and bounded: an endpoint deleted while
// an attempt of it is recorded, the endpoint cap held by concurrent registrations, attempts counted when
// claimed (so that one cut off still counts), and a tenant's cap on pending deliveries.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../../src/ids.ts';
import type { WebhookEvent } from '../../../src/store/store.ts';
import type { OpenStore } from './support.ts';
import { webhookFixture } from './webhook-support.ts';

export function webhookOutbox(open: OpenStore): void {
  describe('the webhook outbox under concurrency and bounds', () => {
    const { ctx, tenant, createSession, endpoint, event, iso, due } = webhookFixture(open);

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
            at: iso(1),
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
  });
}

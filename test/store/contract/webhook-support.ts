// What the webhook areas of the Store contract share (webhooks.ts, webhook-outbox.ts): a tenant's endpoints,
// events as the service builds them, queueing them in a session's commit, reading an endpoint's deliveries,
// and recording attempts, on a fresh store per test.
import assert from 'node:assert/strict';
import { newId } from '../../../src/ids.ts';
import { shardOf } from '../../../src/shards.ts';
import type {
  WebhookAttempt,
  WebhookDelivery,
  WebhookEvent,
  WebhookEventType,
} from '../../../src/store/store.ts';
import { type OpenStore, sessionFixture, unique, useStore } from './support.ts';

/** Registers the hooks of a fresh store per test (call inside a describe) and returns the helpers. */
export function webhookFixture(open: OpenStore) {
  const f = sessionFixture(useStore(open, { migrate: true }));
  const { ctx, createSession, all } = f;

  async function endpoint(tenantId: string, events: WebhookEventType[]) {
    const secret = `whsec_${unique('s')}`;
    const webhook = await ctx.store.createWebhook(
      tenantId,
      {
        id: newId('wh'),
        url: `https://hooks.example.com/${unique('h')}`,
        events,
        secret,
      },
      20,
    );
    assert.ok(webhook);
    return { webhook, secret };
  }

  /** An event of the tenant; its key and shard are a session's unless given. */
  function event(tenantId: string, type: WebhookEventType, fields: Partial<WebhookEvent> = {}): WebhookEvent {
    const ordering_key = fields.ordering_key ?? newId('ses');
    const created_at = fields.created_at ?? new Date().toISOString();
    return {
      id: newId('evt'),
      tenant_id: tenantId,
      type,
      ordering_key,
      shard: shardOf(ordering_key),
      payload: JSON.stringify({ type, timestamp: created_at, data: { id: ordering_key } }),
      created_at,
      ...fields,
    };
  }

  /**
   * Queues events the way the service does: in a session's commit (of a new session, so its fence is
   * current). Returns how many deliveries the commit queued.
   */
  async function queue(tenantId: string, events: WebhookEvent[]) {
    const { record, fence } = await createSession(tenantId);
    const result = await ctx.store.commitSession({
      session_id: record.id,
      fence,
      patch: { snapshot: '{}' },
      webhookEvents: events,
    });
    return result.webhook_deliveries;
  }

  async function deliveries(tenantId: string, webhookId: string): Promise<WebhookDelivery[]> {
    const page = await ctx.store.listWebhookDeliveries(tenantId, webhookId, all);
    assert.ok(page, `the deliveries of ${webhookId}`);
    return page.items;
  }

  const eventIds = async (tenantId: string, webhookId: string) =>
    (await deliveries(tenantId, webhookId)).map((d) => d.event_id).sort();

  /** The delivery of `event` to the endpoint, as listed. */
  async function deliveryOf(tenantId: string, webhookId: string, event: WebhookEvent) {
    const found = (await deliveries(tenantId, webhookId)).find((d) => d.event_id === event.id);
    assert.ok(found, `the delivery of ${event.id} to ${webhookId}`);
    return found;
  }

  /** Instants in 1995, against which `now` of due queries is set: other tests' deliveries of today are not due. */
  const base = Date.parse('1995-06-01T12:00:00.000Z');
  const iso = (ms: number) => new Date(base + ms).toISOString();

  /** Our due deliveries among what a shared database holds, as `endpoint:event` pairs. */
  async function due(at: string, ours: Set<string>, shards?: number[]) {
    return (await ctx.store.dueWebhookDeliveries(at, 1000, shards))
      .filter((d) => ours.has(d.webhook_id))
      .map((d) => `${d.webhook_id}:${d.event_id}`);
  }

  /**
   * Makes an attempt of a delivery as read (its id, attempts and due time) the way the deliverer does: claims
   * it at `at` (which counts the attempt), then records the outcome. False when either is refused.
   */
  const attempt = async (
    delivery: Pick<WebhookDelivery, 'id' | 'attempts' | 'next_attempt_at'>,
    status: WebhookDelivery['status'],
    status_code: number | null,
    at: string,
    next_attempt_at: string | null,
  ) => {
    if (delivery.next_attempt_at === null) return false;
    const claim = { id: delivery.id, attempts: delivery.attempts, next_attempt_at: delivery.next_attempt_at };
    if (!(await ctx.store.claimWebhookDelivery({ ...claim, at, until: at }))) return false;
    return record(
      { id: delivery.id, attempts: delivery.attempts + 1 },
      status,
      status_code,
      at,
      next_attempt_at,
    );
  };

  /**
   * Records the outcome of a claimed attempt (`attempts`: as the claim left them); the endpoint is taken as
   * healthy unless `endpoint` says what the attempt makes of it.
   */
  const record = (
    claimed: Pick<WebhookAttempt, 'id' | 'attempts'>,
    status: WebhookDelivery['status'],
    status_code: number | null,
    at: string,
    next_attempt_at: string | null,
    endpoint: WebhookAttempt['endpoint'] = null,
  ) =>
    ctx.store.recordWebhookAttempt({
      ...claimed,
      status,
      status_code,
      error: status_code === null ? 'timeout' : null,
      at,
      next_attempt_at,
      endpoint,
    });

  /** Delivers ours until none is due at `at`, so that none is left due for later tests on a shared database. */
  async function deliverAll(at: string, ours: Set<string>) {
    for (let round = 0; round < 100; round++) {
      const dueNow = (await ctx.store.dueWebhookDeliveries(at, 1000)).filter((d) => ours.has(d.webhook_id));
      if (dueNow.length === 0) return;
      for (const d of dueNow) await attempt(d, 'delivered', 200, at, null);
    }
    assert.fail('deliveries stay due');
  }

  return {
    ...f,
    endpoint,
    event,
    queue,
    deliveries,
    eventIds,
    deliveryOf,
    iso,
    due,
    attempt,
    record,
    deliverAll,
  };
}

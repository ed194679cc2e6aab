// What the deliverer's tests share: a real SqliteStore with a tenant, an endpoint and sessions whose commits
// queue webhook events; a real receiver on loopback (test/helpers/webhook-receiver.ts); and a deliverer
// whose metrics and warnings the test can read.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { Registry } from 'prom-client';
import { newId } from '../../src/ids.ts';
import { shardOf } from '../../src/shards.ts';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import type { Store, WebhookDelivery, WebhookEvent, WebhookEventType } from '../../src/store/store.ts';
import { WebhookDeliverer, type WebhookDelivererOptions } from '../../src/webhooks/deliverer.ts';
import { createWebhookMetrics } from '../../src/webhooks/webhook-metrics.ts';

export type { ReceivedRequest } from '../helpers/webhook-receiver.ts';

type After = Pick<TestContext, 'after'>;

export const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** A migrated SqliteStore in memory, closed when the test ends. */
export async function openStore(t: After): Promise<Store> {
  const store = new SqliteStore(':memory:');
  await store.migrate();
  t.after(() => store.close());
  return store;
}

/** A tenant with one endpoint at `url`, subscribed to every event. */
export async function endpoint(store: Store, url: string) {
  const tenantId = `t_${randomBytes(8).toString('hex')}`;
  await store.createTenant(tenantId, 'Webhook tenant');
  const secret = newSecret();
  const webhook = await store.createWebhook(
    tenantId,
    {
      id: newId('wh'),
      url,
      events: ['session.closed', 'turn.completed', 'turn.failed', 'user.deleted'],
      secret,
    },
    20,
  );
  assert.ok(webhook);
  /** The endpoint's deliveries, oldest first. */
  const deliveries = async (): Promise<WebhookDelivery[]> => {
    const page = await store.listWebhookDeliveries(tenantId, webhook.id, { limit: 100, offset: 0 });
    assert.ok(page);
    return page.items.reverse();
  };
  return { tenantId, webhook, secret, deliveries };
}

/** A session of `tenantId` (under a fresh fence of its shard) whose commits queue webhook events. */
export async function session(store: Store, tenantId: string) {
  const id = newId('ses');
  const shard = shardOf(id);
  const epoch = (await store.claimShards(newId('key'), [shard])).get(shard);
  assert.ok(epoch !== undefined);
  const fence = { shard, epoch };
  const snapshot = JSON.stringify({ status: 'active', value: 'idle', context: { sessionId: id } });
  await store.createSession(
    tenantId,
    {
      id,
      agent_id: 'support',
      user_id: null,
      shard,
      context: {},
      metadata: {},
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      snapshot,
    },
    fence,
  );
  /** Commits one step reporting events of these types, made at `at`, in order; the events as queued. */
  const queueAt = async (at: string, ...types: WebhookEventType[]): Promise<WebhookEvent[]> => {
    const events = types.map((type, n) => ({
      id: newId('evt'),
      tenant_id: tenantId,
      type,
      ordering_key: id,
      shard,
      // Spacing and a non-ASCII character: the body must be sent exactly as stored.
      payload: `{"type":"${type}", "timestamp":"${at}", "data":{"session_id":"${id}","n":${n},"note":"café"}}`,
      created_at: at,
    }));
    await store.commitSession({ session_id: id, fence, patch: { snapshot }, webhookEvents: events });
    return events;
  };
  /** queueAt now. */
  const queue = (...types: WebhookEventType[]) => queueAt(new Date().toISOString(), ...types);
  return { id, shard, queue, queueAt };
}

/**
 * A receiver on 127.0.0.1 (test/helpers/webhook-receiver.ts), closed when the test ends. Imported when
 * called: it verifies with standardwebhooks, which lazy-load.test.ts must see loaded by the deliverer alone.
 */
export const startReceiver = async (t: After) =>
  (await import('../helpers/webhook-receiver.ts')).startWebhookReceiver(t);

export interface TestDeliverer {
  deliverer: WebhookDeliverer;
  registry: Registry;
  warnings: Array<{ obj: unknown; msg?: string }>;
  /** The deliveries counter's value for an outcome. */
  count(outcome: 'delivered' | 'retry' | 'failed'): Promise<number>;
}

/** A started deliverer over `store` (every shard, private addresses allowed unless said), stopped when the test ends. */
export function startDeliverer(
  t: After,
  store: Store,
  options: Partial<Omit<WebhookDelivererOptions, 'store' | 'metrics' | 'log'>> = {},
): TestDeliverer {
  const registry = new Registry();
  const warnings: TestDeliverer['warnings'] = [];
  const deliverer = new WebhookDeliverer({
    store,
    shards: () => undefined,
    retrySchedule: [60_000],
    allowPrivate: true,
    pollMs: 20,
    timeoutMs: 5_000,
    concurrency: 4,
    metrics: createWebhookMetrics(registry),
    log: { warn: (obj, msg) => warnings.push({ obj, msg }) },
    ...options,
  });
  deliverer.start();
  t.after(() => deliverer.stop());
  const count = async (outcome: string) => {
    const metric = (await registry.getMetricsAsJSON()).find(
      (m) => m.name === 'parley_webhook_deliveries_total',
    );
    return Number(metric?.values.find((v) => v.labels.outcome === outcome)?.value ?? 0);
  };
  return { deliverer, registry, warnings, count };
}

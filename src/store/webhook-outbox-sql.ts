// The statements of the webhook outbox's bound, for both stores (webhook-outbox.ts says what it is): a
// tenant's pending counters, what an endpoint's deletion takes off them, and the pruning of payloads no
// pending delivery needs.
import { type Dialect, Query, type Statement } from './sql.ts';
import { OUTBOX_STRIPES } from './webhook-outbox.ts';

/** What the tenant has pending, summed over its stripes (`pending_deliveries`, `pending_bytes`). */
export function outboxUsage(d: Dialect, tenantId: string): Statement {
  const q = new Query(d);
  return q.statement(`SELECT coalesce(sum(pending_deliveries), 0) AS pending_deliveries,
      coalesce(sum(pending_bytes), 0) AS pending_bytes
    FROM webhook_outbox WHERE tenant_id = ${q.param(tenantId)}`);
}

/** Adds to (or, negative, takes from) a tenant's stripe, creating it on first use. */
export function addToOutbox(
  d: Dialect,
  entry: { tenantId: string; stripe: number; deliveries: number; bytes: number },
): Statement {
  const q = new Query(d);
  return q.statement(`INSERT INTO webhook_outbox (tenant_id, stripe, pending_deliveries, pending_bytes)
    VALUES (${q.param(entry.tenantId)}, ${q.param(entry.stripe)}, ${q.param(entry.deliveries)}, ${q.param(entry.bytes)})
    ON CONFLICT (tenant_id, stripe) DO UPDATE
      SET pending_deliveries = webhook_outbox.pending_deliveries + excluded.pending_deliveries,
        pending_bytes = webhook_outbox.pending_bytes + excluded.pending_bytes`);
}

/** An endpoint's pending deliveries and bytes by stripe (`tenant_id`, `stripe`, `deliveries`, `bytes`). */
export function pendingOfEndpoint(d: Dialect, webhookId: string): Statement {
  const q = new Query(d);
  return q.statement(`SELECT tenant_id, shard % ${OUTBOX_STRIPES} AS stripe, count(*) AS deliveries,
      sum(bytes) AS bytes
    FROM webhook_deliveries WHERE webhook_id = ${q.param(webhookId)} AND status = 'pending'
    GROUP BY tenant_id, shard % ${OUTBOX_STRIPES}`);
}

/**
 * Events none of whose deliveries is pending, at most `limit`: nothing sends their payload any more (an event
 * is written in the transaction of its first pending deliveries, so none is seen before them). The pending
 * deliveries' events are read once per statement (no index on event_id: every queueing and every outcome
 * would pay for it, for a sweep's sake).
 */
export function pruneWebhookEvents(d: Dialect, limit: number): Statement {
  const q = new Query(d);
  return q.statement(`DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events
    WHERE id NOT IN (SELECT event_id FROM webhook_deliveries WHERE status = 'pending') LIMIT ${q.param(limit)})`);
}

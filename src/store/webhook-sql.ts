// The webhook statements both stores share (as sql.ts is for the rest): finding the endpoints an event goes
// to, the deliverer's due deliveries, recording an attempt, and listing an endpoint's deliveries.
import { type Dialect, instant, Query, type Statement } from './sql.ts';
import type { PageRequest, WebhookAttempt, WebhookEvent } from './store.ts';

/** The ids of the event's tenant's endpoints subscribed to its type, oldest first. */
export function subscribedWebhooks(d: Dialect, event: WebhookEvent): Statement {
  const q = new Query(d);
  const tenant = q.param(event.tenant_id);
  // The type is the value looked up, the endpoint's `events` the JSON array it is looked up in.
  const subscribed = d.inJsonArray(q.param(event.type), 'events', 'text');
  return q.statement(
    `SELECT id FROM webhooks WHERE tenant_id = ${tenant} AND ${subscribed} ORDER BY created_at, ${d.rowOrder}`,
  );
}

/**
 * Pending deliveries due at `at`, each with no earlier (in row order) pending delivery of its endpoint and
 * ordering key: a later event of a session waits until the one before it was delivered or gave up.
 */
export function dueWebhookDeliveries(
  d: Dialect,
  at: string,
  limit: number,
  shards: readonly number[] | undefined,
): Statement {
  const q = new Query(d);
  const where = [`d.status = 'pending'`, `d.next_attempt_at <= ${q.param(instant(at))}`];
  // One JSON parameter instead of a variable IN list keeps the statement the same (SQLite caches it).
  if (shards) where.push(d.inJsonArray('d.shard', q.param(JSON.stringify(shards)), 'int'));
  where.push(`NOT EXISTS (SELECT 1 FROM webhook_deliveries e
    WHERE e.webhook_id = d.webhook_id AND e.ordering_key = d.ordering_key AND e.status = 'pending'
      AND e.${d.rowOrder} < d.${d.rowOrder})`);
  return q.statement(`SELECT d.id, d.webhook_id, d.event_id, d.type, d.ordering_key, d.attempts, d.payload,
      d.created_at, w.url, w.secret
    FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
    WHERE ${where.join(' AND ')}
    ORDER BY d.next_attempt_at, d.${d.rowOrder} LIMIT ${q.param(limit)}`);
}

export function recordWebhookAttempt(d: Dialect, attempt: WebhookAttempt): Statement {
  const q = new Query(d);
  const next = attempt.next_attempt_at === null ? null : instant(attempt.next_attempt_at);
  return q.statement(`UPDATE webhook_deliveries SET attempts = attempts + 1, status = ${q.param(attempt.status)},
      last_status_code = ${q.param(attempt.status_code)}, last_attempt_at = ${q.param(instant(attempt.at))},
      next_attempt_at = ${q.param(next)}
    WHERE id = ${q.param(attempt.id)}`);
}

/** An endpoint's deliveries, newest first (the caller has checked the endpoint is the tenant's). */
export function listWebhookDeliveries(d: Dialect, webhookId: string, page: PageRequest): Statement {
  const q = new Query(d);
  const where = [`webhook_id = ${q.param(webhookId)}`];
  return q.statement(
    `SELECT * FROM webhook_deliveries ${q.paged(where, `created_at DESC, ${d.rowOrder} DESC`, page)}`,
  );
}

/** Delivered and failed deliveries created before `before`; pending ones stay whatever their age. */
export function deleteOldWebhookDeliveries(d: Dialect, before: string): Statement {
  const q = new Query(d);
  return q.statement(
    `DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ${q.param(instant(before))}`,
  );
}

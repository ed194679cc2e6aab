// The webhook statements both stores share (as sql.ts is for the rest): finding the endpoints an event goes
// to, chaining a key's deliveries, the deliverer's due deliveries, claims and attempts, and listings. What
// bounds the outbox (its counters, refusals, pruning) is in webhook-outbox-sql.ts, an endpoint's backoff in
// webhook-backoff-sql.ts.
//
// Chaining: of the pending deliveries of one endpoint and ordering key only the first (in row order) has a
// `next_attempt_at`; each later one has none (is blocked) until the one before it is delivered or failed,
// which makes it due in the same transaction. So the due query is a range scan of the partial index of
// pending deliveries that have a due time, however long the backlog behind a dead endpoint.
import { type Dialect, instant, Query, type Statement } from './sql.ts';
import type { PageRequest, WebhookAttempt, WebhookClaim, WebhookEvent } from './store.ts';

/**
 * The event's tenant's endpoints subscribed to its type (`id`, and `retry_at` when one is backed off), oldest
 * first. `lock` (PostgreSQL) holds them until commit (FOR KEY SHARE), so that one deleted meanwhile is
 * deleted after this transaction, not between the read and the insert of its delivery (whose foreign key
 * would fail the change reported).
 */
export function subscribedWebhooks(d: Dialect, event: WebhookEvent, lock: boolean): Statement {
  const q = new Query(d);
  const tenant = q.param(event.tenant_id);
  // The type is the value looked up, the endpoint's `events` the JSON array it is looked up in.
  const subscribed = d.inJsonArray(q.param(event.type), 'events', 'text');
  return q.statement(
    `SELECT id, retry_at FROM webhooks WHERE tenant_id = ${tenant} AND ${subscribed}
      ORDER BY created_at, ${d.rowOrder}${lock ? ' FOR KEY SHARE' : ''}`,
  );
}

/** How many endpoints a tenant has (`n`). */
export function endpointCount(d: Dialect, tenantId: string): Statement {
  const q = new Query(d);
  return q.statement(`SELECT count(*) AS n FROM webhooks WHERE tenant_id = ${q.param(tenantId)}`);
}

/**
 * The latest pending delivery of an endpoint and key, if any: a new one queues behind it (blocked) or, with
 * none, is due at once. `lock` (PostgreSQL) locks it until commit; see postgres/webhooks.ts for why.
 */
export function latestPendingDelivery(
  d: Dialect,
  webhookId: string,
  orderingKey: string,
  lock: boolean,
): Statement {
  const q = new Query(d);
  return q.statement(`SELECT id FROM webhook_deliveries
    WHERE webhook_id = ${q.param(webhookId)} AND ordering_key = ${q.param(orderingKey)} AND status = 'pending'
    ORDER BY ${d.rowOrder} DESC LIMIT 1${lock ? ' FOR UPDATE' : ''}`);
}

/**
 * Pending deliveries due at `at`: only the first of each endpoint and key has a due time (see above), and
 * none of an endpoint backed off past `at` is due (its deliveries due sooner were moved to its `retry_at`
 * when it was backed off, so the scan rarely meets one). Not of `skip`'s tenants and endpoints.
 */
export function dueWebhookDeliveries(
  d: Dialect,
  at: string,
  limit: number,
  shards: readonly number[] | undefined,
  skip: { tenants: readonly string[]; webhooks: readonly string[] } | undefined,
): Statement {
  const q = new Query(d);
  // `<=` implies NOT NULL, so the partial index webhook_deliveries_due (pending, with a due time) serves it.
  const where = [`d.status = 'pending'`, `d.next_attempt_at <= ${q.param(instant(at))}`];
  where.push(`(w.retry_at IS NULL OR w.retry_at <= ${q.param(instant(at))})`);
  // One JSON parameter instead of a variable IN list keeps the statement the same (SQLite caches it).
  if (shards) where.push(d.inJsonArray('d.shard', q.param(JSON.stringify(shards)), 'int'));
  if (skip?.tenants.length) {
    where.push(`NOT ${d.inJsonArray('d.tenant_id', q.param(JSON.stringify(skip.tenants)), 'text')}`);
  }
  if (skip?.webhooks.length) {
    where.push(`NOT ${d.inJsonArray('d.webhook_id', q.param(JSON.stringify(skip.webhooks)), 'text')}`);
  }
  return q.statement(`SELECT d.id, d.tenant_id, d.webhook_id, d.event_id, d.type, d.ordering_key, d.shard,
      d.attempts, d.next_attempt_at, d.created_at, w.url, w.secret,
      w.failures AS endpoint_failures, w.retry_at AS endpoint_retry_at
    FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
    WHERE ${where.join(' AND ')}
    ORDER BY d.next_attempt_at, d.${d.rowOrder} LIMIT ${q.param(limit)}`);
}

/**
 * Moves a due delivery's time to the claim's deadline and counts the attempt, if it is still as read (one
 * row changed, or none).
 */
export function claimWebhookDelivery(d: Dialect, claim: WebhookClaim): Statement {
  const q = new Query(d);
  return q.statement(`UPDATE webhook_deliveries SET next_attempt_at = ${q.param(instant(claim.until))},
      attempts = attempts + 1, last_attempt_at = ${q.param(instant(claim.at))}
    WHERE id = ${q.param(claim.id)} AND status = 'pending' AND attempts = ${q.param(claim.attempts)}
      AND next_attempt_at = ${q.param(instant(claim.next_attempt_at))}`);
}

/** Makes a claimed delivery due at `at`, if the claim is still held (attempts and deadline as it left them). */
export function releaseWebhookClaim(
  d: Dialect,
  claim: { id: string; attempts: number; until: string; at: string },
): Statement {
  const q = new Query(d);
  return q.statement(`UPDATE webhook_deliveries SET next_attempt_at = ${q.param(instant(claim.at))}
    WHERE id = ${q.param(claim.id)} AND status = 'pending' AND attempts = ${q.param(claim.attempts)}
      AND next_attempt_at = ${q.param(instant(claim.until))}`);
}

/**
 * Locks the endpoint of a delivery (PostgreSQL) before anything of its deliveries: see postgres/webhooks.ts
 * for why every writer of an endpoint's deliveries takes it first.
 */
export function lockEndpointOfDelivery(d: Dialect, deliveryId: string): Statement {
  const q = new Query(d);
  return q.statement(`SELECT id FROM webhooks
    WHERE id = (SELECT webhook_id FROM webhook_deliveries WHERE id = ${q.param(deliveryId)}) FOR NO KEY UPDATE`);
}

/**
 * Records a claimed attempt if the delivery is still pending with `attempts` counted; returns its key and
 * what it counted in its tenant's outbox (tenant_id, shard, bytes).
 */
export function recordWebhookAttempt(d: Dialect, attempt: WebhookAttempt): Statement {
  const q = new Query(d);
  const next = attempt.next_attempt_at === null ? null : instant(attempt.next_attempt_at);
  return q.statement(`UPDATE webhook_deliveries SET status = ${q.param(attempt.status)},
      last_status_code = ${q.param(attempt.status_code)}, error = ${q.param(attempt.error)},
      next_attempt_at = ${q.param(next)}
    WHERE id = ${q.param(attempt.id)} AND status = 'pending' AND attempts = ${q.param(attempt.attempts)}
    RETURNING webhook_id, ordering_key, tenant_id, shard, bytes`);
}

/** Makes the first blocked delivery of an endpoint and key due at `at` (after the one before it is done). */
export function unblockNextDelivery(
  d: Dialect,
  webhookId: string,
  orderingKey: string,
  at: string,
): Statement {
  const q = new Query(d);
  return q.statement(`UPDATE webhook_deliveries SET next_attempt_at = ${q.param(instant(at))}
    WHERE status = 'pending' AND next_attempt_at IS NULL AND id = (SELECT id FROM webhook_deliveries
      WHERE webhook_id = ${q.param(webhookId)} AND ordering_key = ${q.param(orderingKey)}
        AND status = 'pending' AND next_attempt_at IS NULL ORDER BY ${d.rowOrder} LIMIT 1)`);
}

/** An endpoint's deliveries, newest first (the caller has checked the endpoint is the tenant's). */
export function listWebhookDeliveries(d: Dialect, webhookId: string, page: PageRequest): Statement {
  const q = new Query(d);
  const where = [`webhook_id = ${q.param(webhookId)}`];
  return q.statement(
    `SELECT * FROM webhook_deliveries ${q.paged(where, `created_at DESC, ${d.rowOrder} DESC`, page)}`,
  );
}

/** Delivered and failed deliveries created before `before`, at most `limit`; pending ones stay whatever their age. */
export function deleteOldWebhookDeliveries(d: Dialect, before: string, limit: number): Statement {
  const q = new Query(d);
  return q.statement(`DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
    WHERE status <> 'pending' AND created_at < ${q.param(instant(before))} LIMIT ${q.param(limit)})`);
}

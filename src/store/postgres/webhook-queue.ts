// Queueing webhook events in PostgresStore (webhooks.ts holds the rest of the outbox): inside the transaction
// of the change an event reports (a session commit, a user's delete, feedback), so that an event is stored if
// and only if its change is, one delivery per subscribed endpoint, pending while its tenant's outbox has room.
import type { Row } from '../rows.ts';
import { insert, postgresDialect, type Statement } from '../sql.ts';
import type { WebhookEvent, WebhookOutboxUsage } from '../store.ts';
import {
  countQueued,
  deliveriesThatFit,
  inLockOrder,
  nothingQueued,
  outboxOf,
  type QueuedDeliveries,
  usageOf,
} from '../webhook-outbox.ts';
import * as outboxSql from '../webhook-outbox-sql.ts';
import * as webhookRows from '../webhook-rows.ts';
import * as webhookSql from '../webhook-sql.ts';
import type { Db, Queryable } from './db.ts';

export const execute = (c: Queryable, s: Statement) => c.query(s.sql, s.values);

/** The first key of the advisory locks serialising queueing per ordering key (apart from MIGRATION_LOCK). */
const QUEUE_LOCK_CLASS = 0x77686b; // 'whk'

/**
 * Writes one delivery of each event per subscribed endpoint: pending, blocked behind a pending one of its
 * endpoint and key, while the tenant's outbox (the caps of the store on `db`) has room; refused past it.
 * Call inside a transaction on `c`, and tell the refusals (tellRefused) once it committed.
 *
 * Why a new delivery can never stay blocked with nothing pending before it, although recording an attempt
 * (recordWebhookAttempt, another transaction) runs concurrently under READ COMMITTED: the latest pending
 * delivery P of the key is read FOR UPDATE, and the recording transaction first updates its delivery's
 * status, then, in a later statement (a new snapshot), unblocks the next one.
 * - Queue first: P stays locked until this commit, so a record of P waits for it; the record's later
 *   statement then sees the new delivery, and unblocks it if it is next. (A record of an earlier one
 *   unblocks the one after it, at worst P, which stays pending.)
 * - Record first: the lock on P waits for the recording transaction to commit and re-reads P. Still
 *   pending (a retry, or P was only unblocked) and the new one queues behind a pending one; delivered or
 *   failed, P is skipped and the next older pending one, if any, is locked the same way; with none left the
 *   new delivery is due at once (the record's later statement, which did not see it, unblocked nothing).
 * Either way a blocked delivery has a pending one before it that, when done, unblocks the next. Two queueing
 * transactions of one key (a session's commit and its feedback) would both see no pending delivery and both
 * be due, out of order: an advisory lock per key, taken in one order, makes the second wait for the first.
 *
 * The cap is read from the tenant's stripes without a lock and added to in the stripe of the event's shard,
 * held until commit: commits of the same stripe count each other, those of other stripes committing at the
 * same moment may not, so a tenant may pass its cap by what such commits queue together.
 */
export async function queueWebhookEvents(
  db: Db,
  c: Queryable,
  events: readonly WebhookEvent[] | undefined,
): Promise<QueuedDeliveries> {
  const queued = nothingQueued();
  const targets: { event: WebhookEvent; endpoints: Row[] }[] = [];
  for (const event of events ?? []) {
    const { rows } = await execute(c, webhookSql.subscribedWebhooks(postgresDialect, event, true));
    if (rows.length > 0) targets.push({ event, endpoints: rows });
  }
  if (targets.length === 0) return queued;
  // Ordered by the lock's key, so that two transactions of several keys cannot wait for each other.
  await c.query(
    `SELECT pg_advisory_xact_lock(${QUEUE_LOCK_CLASS}, h)
       FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($1::text[]) AS k ORDER BY h) AS keys`,
    [[...new Set(targets.map((t) => t.event.ordering_key))]],
  );
  const limits = outboxOf(db);
  const usage = new Map<string, WebhookOutboxUsage>();
  for (const { event, endpoints } of targets) {
    const bytes = Buffer.byteLength(event.payload);
    let pending = usage.get(event.tenant_id);
    if (!pending) {
      const { rows } = await execute(c, outboxSql.outboxUsage(postgresDialect, event.tenant_id));
      pending = usageOf(rows[0]);
    }
    const room = deliveriesThatFit(limits, pending, endpoints.length, bytes);
    if (room > 0) await execute(c, insert(postgresDialect, 'webhook_events', webhookRows.eventRow(event)));
    for (const [n, endpoint] of endpoints.entries()) {
      const webhookId = String(endpoint.id);
      let state: 'due' | 'blocked' | 'refused' = 'refused';
      if (n < room) {
        const latest = await execute(
          c,
          webhookSql.latestPendingDelivery(postgresDialect, webhookId, event.ordering_key, true),
        );
        state = latest.rows.length > 0 ? 'blocked' : 'due';
      }
      // The first of its key to an endpoint backed off waits with its others (see webhook-backoff-sql.ts).
      const held = endpoint.retry_at === null ? null : String(endpoint.retry_at);
      const row = webhookRows.deliveryRow(event, webhookId, bytes, state, held);
      await execute(c, insert(postgresDialect, 'webhook_deliveries', row));
    }
    countQueued(queued, usage, event, pending, { wanted: endpoints.length, room, bytes });
  }
  // The stripes last, in one order (see the lock order in webhooks.ts).
  for (const entry of inLockOrder(queued.added.values())) {
    if (entry.deliveries > 0) await execute(c, outboxSql.addToOutbox(postgresDialect, entry));
  }
  return queued;
}

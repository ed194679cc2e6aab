// Webhooks of PostgresStore: a tenant's endpoints, and the outbox of their deliveries. Events are queued by
// queueWebhookEvents inside the transaction of the change they report (a session commit, a user's delete,
// feedback), so that an event is stored if and only if its change is.
import { now, toPage } from '../rows.ts';
import { insert, postgresDialect, type Statement } from '../sql.ts';
import type { WebhookEvent, WebhookStore } from '../store.ts';
import * as webhookRows from '../webhook-rows.ts';
import * as webhookSql from '../webhook-sql.ts';
import type { Db, Queryable } from './db.ts';

const execute = (c: Queryable, s: Statement) => c.query(s.sql, s.values);

/** The first key of the advisory locks serialising queueing per ordering key (apart from MIGRATION_LOCK). */
const QUEUE_LOCK_CLASS = 0x77686b; // 'whk'
/** The first key of the advisory locks serialising a tenant's endpoint registrations. */
const ENDPOINTS_LOCK_CLASS = 0x776865; // 'whe'

/**
 * Writes one pending delivery of each event per subscribed endpoint, blocked behind a pending one of its
 * endpoint and key; call inside a transaction. Returns how many it wrote.
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
 */
export async function queueWebhookEvents(
  c: Queryable,
  events: readonly WebhookEvent[] | undefined,
): Promise<number> {
  const targets: { event: WebhookEvent; webhookId: string }[] = [];
  for (const event of events ?? []) {
    const { rows } = await execute(c, webhookSql.subscribedWebhooks(postgresDialect, event, true));
    for (const endpoint of rows) targets.push({ event, webhookId: String(endpoint.id) });
  }
  if (targets.length === 0) return 0;
  // Ordered by the lock's key, so that two transactions of several keys cannot wait for each other.
  await c.query(
    `SELECT pg_advisory_xact_lock(${QUEUE_LOCK_CLASS}, h)
       FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($1::text[]) AS k ORDER BY h) AS keys`,
    [[...new Set(targets.map((t) => t.event.ordering_key))]],
  );
  for (const { event, webhookId } of targets) {
    const latest = await execute(
      c,
      webhookSql.latestPendingDelivery(postgresDialect, webhookId, event.ordering_key, true),
    );
    const blocked = latest.rows.length > 0;
    await execute(
      c,
      insert(postgresDialect, 'webhook_deliveries', webhookRows.deliveryRow(event, webhookId, blocked)),
    );
  }
  return targets.length;
}

/** The webhooks of PostgresStore, on its connection. */
export function part(db: Db): WebhookStore {
  return {
    async createWebhook(tenantId, webhook, limit) {
      const row = webhookRows.webhookRow(tenantId, webhook, now());
      return db.tx(async (c) => {
        // Registrations of one tenant one at a time, so that each counts the ones committed before it (under
        // READ COMMITTED a count does not see another transaction's insert until it commits).
        await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ENDPOINTS_LOCK_CLASS, tenantId]);
        const { rows } = await execute(c, webhookSql.endpointCount(postgresDialect, tenantId));
        if (Number(rows[0]?.n) >= limit) return null;
        await execute(c, insert(postgresDialect, 'webhooks', row));
        return webhookRows.toWebhook(row);
      });
    },

    async listWebhooks(tenantId) {
      const rows = await db.rows(
        'SELECT * FROM webhooks WHERE tenant_id = $1 ORDER BY created_at, row_order',
        [tenantId],
      );
      return rows.map(webhookRows.toWebhook);
    },

    async getWebhook(tenantId, id) {
      const [row] = await db.rows('SELECT * FROM webhooks WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
      return row ? webhookRows.toWebhook(row) : null;
    },

    async deleteWebhook(tenantId, id) {
      // The deliveries go with it (ON DELETE CASCADE).
      const result = await db.tx((c) =>
        c.query('DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2', [tenantId, id]),
      );
      return result.rowCount === 1;
    },

    async listWebhookDeliveries(tenantId, webhookId, page) {
      const owned = await db.rows('SELECT 1 FROM webhooks WHERE tenant_id = $1 AND id = $2', [
        tenantId,
        webhookId,
      ]);
      if (owned.length === 0) return null;
      const { sql, values } = webhookSql.listWebhookDeliveries(postgresDialect, webhookId, page);
      return toPage((await db.rows(sql, values)).map(webhookRows.toWebhookDelivery), page);
    },

    async dueWebhookDeliveries(at, limit, shards) {
      const { sql, values } = webhookSql.dueWebhookDeliveries(postgresDialect, at, limit, shards);
      return (await db.rows(sql, values)).map(webhookRows.toDueWebhookDelivery);
    },

    async claimWebhookDelivery(claim) {
      const result = await db.tx((c) => execute(c, webhookSql.claimWebhookDelivery(postgresDialect, claim)));
      return result.rowCount === 1;
    },

    async releaseWebhookClaim(claim) {
      const result = await db.tx((c) => execute(c, webhookSql.releaseWebhookClaim(postgresDialect, claim)));
      return result.rowCount === 1;
    },

    async recordWebhookAttempt(attempt) {
      return db.tx(async (c) => {
        // The endpoint first, as a delete takes it (then its deliveries, in whatever order its cascade walks
        // them): locking the delivery and the next of its key first could wait for that delete while it
        // waits for them (a deadlock, and a 500 on the DELETE).
        const endpoint = await execute(c, webhookSql.lockEndpointOfDelivery(postgresDialect, attempt.id));
        if (endpoint.rows.length === 0) return false;
        const { rows } = await execute(c, webhookSql.recordWebhookAttempt(postgresDialect, attempt));
        const recorded = rows[0];
        if (!recorded) return false;
        // A statement of its own, after the status changed: see queueWebhookEvents.
        if (attempt.status !== 'pending') {
          const { webhook_id, ordering_key } = recorded;
          await execute(
            c,
            webhookSql.unblockNextDelivery(
              postgresDialect,
              String(webhook_id),
              String(ordering_key),
              attempt.at,
            ),
          );
        }
        return true;
      });
    },

    async deleteOldWebhookDeliveries(before) {
      const result = await db.tx((c) =>
        execute(c, webhookSql.deleteOldWebhookDeliveries(postgresDialect, before)),
      );
      return result.rowCount ?? 0;
    },
  };
}

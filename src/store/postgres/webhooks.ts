// Webhooks of PostgresStore: a tenant's endpoints, and the outbox of their deliveries. Events are queued by
// queueWebhookEvents (webhook-queue.ts) inside the transaction of the change they report.
//
// Lock order: whatever writes an endpoint's deliveries besides queueing takes the endpoint's row first (a
// delete FOR UPDATE, recording an attempt FOR NO KEY UPDATE), then its deliveries, then its tenant's outbox
// stripes last, in one order; queueing takes the endpoint FOR KEY SHARE (which only a delete waits for), the
// latest pending delivery of its key, then the stripes. So no two of them wait for each other in a circle.
import { now, type Row, toPage } from '../rows.ts';
import { insert, instant, postgresDialect } from '../sql.ts';
import type { WebhookStore } from '../store.ts';
import * as backoffSql from '../webhook-backoff-sql.ts';
import { configureOutbox, inLockOrder, leftOutbox, takenByEndpoint, usageOf } from '../webhook-outbox.ts';
import * as outboxSql from '../webhook-outbox-sql.ts';
import * as webhookRows from '../webhook-rows.ts';
import * as webhookSql from '../webhook-sql.ts';
import type { Db } from './db.ts';
import { execute } from './webhook-queue.ts';

/** The first key of the advisory locks serialising a tenant's endpoint registrations. */
const ENDPOINTS_LOCK_CLASS = 0x776865; // 'whe'

/** The webhooks of PostgresStore, on its connection. */
export function part(db: Db): WebhookStore {
  return {
    configureWebhookOutbox(settings) {
      configureOutbox(db, settings);
    },

    async webhookOutboxUsage(tenantId) {
      const { sql, values } = outboxSql.outboxUsage(postgresDialect, tenantId);
      return usageOf((await db.rows(sql, values))[0]);
    },

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
      return db.tx(async (c) => {
        // Locked first, so that no attempt is recorded (nor delivery queued) between the count and the delete.
        const owned = await c.query('SELECT 1 FROM webhooks WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [
          tenantId,
          id,
        ]);
        if (owned.rowCount === 0) return false;
        // What its pending deliveries counted leaves its tenant's outbox with them.
        const { rows } = await execute(c, outboxSql.pendingOfEndpoint(postgresDialect, id));
        // The deliveries go with it (ON DELETE CASCADE).
        await c.query('DELETE FROM webhooks WHERE id = $1', [id]);
        for (const entry of takenByEndpoint(rows)) {
          await execute(c, outboxSql.addToOutbox(postgresDialect, entry));
        }
        return true;
      });
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

    async dueWebhookDeliveries(at, limit, shards, skip) {
      const { sql, values } = webhookSql.dueWebhookDeliveries(postgresDialect, at, limit, shards, skip);
      return (await db.rows(sql, values)).map(webhookRows.toDueWebhookDelivery);
    },

    async claimWebhookProbe(claim) {
      const result = await db.tx((c) => execute(c, backoffSql.claimWebhookProbe(postgresDialect, claim)));
      return result.rowCount === 1;
    },

    async webhookPayload(eventId) {
      const [row] = await db.rows('SELECT payload FROM webhook_events WHERE id = $1', [eventId]);
      return row ? String(row.payload) : null;
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
        // waits for them (a deadlock, and a 500 on the DELETE). See the lock order above.
        const endpoint = await execute(c, webhookSql.lockEndpointOfDelivery(postgresDialect, attempt.id));
        if (endpoint.rows.length === 0) return false;
        const { rows } = await execute(c, webhookSql.recordWebhookAttempt(postgresDialect, attempt));
        const recorded = rows[0];
        if (!recorded) return false;
        const webhookId = String(recorded.webhook_id);
        const done: Row[] = [];
        // A statement of its own, after the status changed: see queueWebhookEvents.
        if (attempt.status !== 'pending') {
          const key = String(recorded.ordering_key);
          await execute(c, webhookSql.unblockNextDelivery(postgresDialect, webhookId, key, attempt.at));
          done.push(recorded);
        }
        if (attempt.endpoint === null) {
          await execute(c, backoffSql.endpointAnswered(postgresDialect, webhookId));
        } else {
          const { endpoint } = attempt;
          const failed = { at: attempt.at, retry_at: endpoint.retry_at, probe: endpoint.probe };
          const state = (await execute(c, backoffSql.endpointFailed(postgresDialect, webhookId, failed)))
            .rows[0];
          const retryAt = String(state?.retry_at);
          await execute(c, backoffSql.holdDeliveries(postgresDialect, webhookId, retryAt));
          if (state && String(state.failing_since) < instant(endpoint.give_up_before)) {
            const before = endpoint.give_up_before;
            const given = await execute(c, backoffSql.giveUpDeliveries(postgresDialect, webhookId, before));
            done.push(...given.rows);
            await execute(c, backoffSql.unblockEndpointKeys(postgresDialect, webhookId, retryAt));
          }
        }
        // The outbox's stripes last (see the lock order above).
        for (const entry of inLockOrder(leftOutbox(done))) {
          await execute(c, outboxSql.addToOutbox(postgresDialect, entry));
        }
        return true;
      });
    },

    async deleteOldWebhookDeliveries(before, limit) {
      const result = await db.tx((c) =>
        execute(c, webhookSql.deleteOldWebhookDeliveries(postgresDialect, before, limit)),
      );
      return result.rowCount ?? 0;
    },

    async pruneWebhookEvents(limit) {
      const result = await db.tx((c) => execute(c, outboxSql.pruneWebhookEvents(postgresDialect, limit)));
      return result.rowCount ?? 0;
    },
  };
}

// Webhooks of SqliteStore: a tenant's endpoints, and the outbox of their deliveries. Events are queued by
// queueWebhookEvents inside the transaction of the change they report (a session commit, a user's delete,
// feedback), so that an event is stored if and only if its change is.
import { now, toPage } from '../rows.ts';
import { insert, sqliteDialect } from '../sql.ts';
import type { WebhookEvent, WebhookStore } from '../store.ts';
import * as webhookRows from '../webhook-rows.ts';
import * as webhookSql from '../webhook-sql.ts';
import { all, get, run, type SqliteDb } from './db.ts';

/**
 * Writes one pending delivery of each event per subscribed endpoint, blocked behind a pending one of its
 * endpoint and key; call inside db.write (SQLite has one writer at a time: nothing to lock). Returns how
 * many it wrote.
 */
export function queueWebhookEvents(db: SqliteDb, events: readonly WebhookEvent[] | undefined): number {
  if (!events?.length || !anyWebhooks(db)) return 0;
  let queued = 0;
  for (const event of events) {
    for (const endpoint of all(db, webhookSql.subscribedWebhooks(sqliteDialect, event, false))) {
      const webhookId = String(endpoint.id);
      const latest = webhookSql.latestPendingDelivery(sqliteDialect, webhookId, event.ordering_key, false);
      const row = webhookRows.deliveryRow(event, webhookId, !!get(db, latest));
      run(db, insert(sqliteDialect, 'webhook_deliveries', row));
      queued++;
    }
  }
  return queued;
}

/**
 * Whether any endpoint exists at all, asked once per transaction: without one (most databases, most of the
 * time) a group commit's turns skip the search for subscribers each of their events would make.
 */
const anyWebhooks = (db: SqliteDb): boolean =>
  db.oncePerTransaction('any webhooks', () => db.q('SELECT 1 FROM webhooks LIMIT 1').get() !== undefined);

const endpointCount = (db: SqliteDb, tenantId: string) =>
  Number(get(db, webhookSql.endpointCount(sqliteDialect, tenantId))?.n);

/** The webhooks of SqliteStore, on its connection. */
export function part(db: SqliteDb): WebhookStore {
  return {
    async createWebhook(tenantId, webhook, limit) {
      const row = webhookRows.webhookRow(tenantId, webhook, now());
      // One writer at a time: the count and the insert see the same endpoints.
      return db.write(() => {
        if (endpointCount(db, tenantId) >= limit) return null;
        run(db, insert(sqliteDialect, 'webhooks', row));
        return webhookRows.toWebhook(row);
      });
    },

    async listWebhooks(tenantId) {
      return db
        .q('SELECT * FROM webhooks WHERE tenant_id = ? ORDER BY created_at, rowid')
        .all(tenantId)
        .map(webhookRows.toWebhook);
    },

    async getWebhook(tenantId, id) {
      const row = db.q('SELECT * FROM webhooks WHERE tenant_id = ? AND id = ?').get(tenantId, id);
      return row ? webhookRows.toWebhook(row) : null;
    },

    async deleteWebhook(tenantId, id) {
      // The deliveries go with it (ON DELETE CASCADE; the connection has foreign_keys on).
      const result = db.write(() =>
        db.q('DELETE FROM webhooks WHERE tenant_id = ? AND id = ?').run(tenantId, id),
      );
      return Number(result.changes) === 1;
    },

    async listWebhookDeliveries(tenantId, webhookId, page) {
      const owned = db.q('SELECT 1 FROM webhooks WHERE tenant_id = ? AND id = ?').get(tenantId, webhookId);
      if (!owned) return null;
      return toPage(
        all(db, webhookSql.listWebhookDeliveries(sqliteDialect, webhookId, page)).map(
          webhookRows.toWebhookDelivery,
        ),
        page,
      );
    },

    async dueWebhookDeliveries(at, limit, shards) {
      return all(db, webhookSql.dueWebhookDeliveries(sqliteDialect, at, limit, shards)).map(
        webhookRows.toDueWebhookDelivery,
      );
    },

    async claimWebhookDelivery(claim) {
      const result = db.write(() => run(db, webhookSql.claimWebhookDelivery(sqliteDialect, claim)));
      return Number(result.changes) === 1;
    },

    async releaseWebhookClaim(claim) {
      const result = db.write(() => run(db, webhookSql.releaseWebhookClaim(sqliteDialect, claim)));
      return Number(result.changes) === 1;
    },

    async recordWebhookAttempt(attempt) {
      return db.write(() => {
        const recorded = get(db, webhookSql.recordWebhookAttempt(sqliteDialect, attempt));
        if (!recorded) return false;
        if (attempt.status !== 'pending') {
          const { webhook_id, ordering_key } = recorded;
          run(
            db,
            webhookSql.unblockNextDelivery(
              sqliteDialect,
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
      const result = db.write(() => run(db, webhookSql.deleteOldWebhookDeliveries(sqliteDialect, before)));
      return Number(result.changes);
    },
  };
}

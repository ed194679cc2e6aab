// Webhooks of SqliteStore: a tenant's endpoints, and the outbox of their deliveries. Events are queued by
// queueWebhookEvents inside the transaction of the change they report (a session commit, a user's delete,
// feedback), so that an event is stored if and only if its change is.
import type { WebhookPart } from './composed-store.ts';
import { now } from './rows.ts';
import { insert, sqliteDialect } from './sql.ts';
import { all, run, type SqliteDb } from './sqlite-db.ts';
import { toPage, type WebhookEvent } from './store.ts';
import {
  deliveryRow,
  toDueWebhookDelivery,
  toWebhook,
  toWebhookDelivery,
  webhookRow,
} from './webhook-rows.ts';
import {
  deleteOldWebhookDeliveries,
  dueWebhookDeliveries,
  listWebhookDeliveries,
  recordWebhookAttempt,
  subscribedWebhooks,
} from './webhook-sql.ts';

/** Writes one pending delivery of each event per subscribed endpoint; call inside db.write. */
export function queueWebhookEvents(db: SqliteDb, events: readonly WebhookEvent[] | undefined): void {
  for (const event of events ?? []) {
    for (const endpoint of all(db, subscribedWebhooks(sqliteDialect, event))) {
      run(db, insert(sqliteDialect, 'webhook_deliveries', deliveryRow(event, String(endpoint.id))));
    }
  }
}

/** The webhooks of SqliteStore, on its connection. */
export function part(db: SqliteDb): WebhookPart {
  return {
    async createWebhook(tenantId, webhook) {
      const row = webhookRow(tenantId, webhook, now());
      db.write(() => run(db, insert(sqliteDialect, 'webhooks', row)));
      return toWebhook(row);
    },

    async listWebhooks(tenantId) {
      return db
        .q('SELECT * FROM webhooks WHERE tenant_id = ? ORDER BY created_at, rowid')
        .all(tenantId)
        .map(toWebhook);
    },

    async getWebhook(tenantId, id) {
      const row = db.q('SELECT * FROM webhooks WHERE tenant_id = ? AND id = ?').get(tenantId, id);
      return row ? toWebhook(row) : null;
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
        all(db, listWebhookDeliveries(sqliteDialect, webhookId, page)).map(toWebhookDelivery),
        page,
      );
    },

    async dueWebhookDeliveries(at, limit, shards) {
      return all(db, dueWebhookDeliveries(sqliteDialect, at, limit, shards)).map(toDueWebhookDelivery);
    },

    async recordWebhookAttempt(attempt) {
      db.write(() => run(db, recordWebhookAttempt(sqliteDialect, attempt)));
    },

    async deleteOldWebhookDeliveries(before) {
      const result = db.write(() => run(db, deleteOldWebhookDeliveries(sqliteDialect, before)));
      return Number(result.changes);
    },
  };
}

// Webhooks of PostgresStore: a tenant's endpoints, and the outbox of their deliveries. Events are queued by
// queueWebhookEvents inside the transaction of the change they report (a session commit, a user's delete,
// feedback), so that an event is stored if and only if its change is.
import type { WebhookPart } from './composed-store.ts';
import type { Db, Queryable } from './postgres-db.ts';
import { now } from './rows.ts';
import { insert, postgresDialect, type Statement } from './sql.ts';
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

const execute = (c: Queryable, s: Statement) => c.query(s.sql, s.values);

/** Writes one pending delivery of each event per subscribed endpoint; call inside a transaction. */
export async function queueWebhookEvents(
  c: Queryable,
  events: readonly WebhookEvent[] | undefined,
): Promise<void> {
  for (const event of events ?? []) {
    const { rows } = await execute(c, subscribedWebhooks(postgresDialect, event));
    for (const endpoint of rows) {
      await execute(
        c,
        insert(postgresDialect, 'webhook_deliveries', deliveryRow(event, String(endpoint.id))),
      );
    }
  }
}

/** The webhooks of PostgresStore, on its connection. */
export function part(db: Db): WebhookPart {
  return {
    async createWebhook(tenantId, webhook) {
      const row = webhookRow(tenantId, webhook, now());
      await db.tx((c) => execute(c, insert(postgresDialect, 'webhooks', row)));
      return toWebhook(row);
    },

    async listWebhooks(tenantId) {
      const rows = await db.rows(
        'SELECT * FROM webhooks WHERE tenant_id = $1 ORDER BY created_at, row_order',
        [tenantId],
      );
      return rows.map(toWebhook);
    },

    async getWebhook(tenantId, id) {
      const [row] = await db.rows('SELECT * FROM webhooks WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
      return row ? toWebhook(row) : null;
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
      const { sql, values } = listWebhookDeliveries(postgresDialect, webhookId, page);
      return toPage((await db.rows(sql, values)).map(toWebhookDelivery), page);
    },

    async dueWebhookDeliveries(at, limit, shards) {
      const { sql, values } = dueWebhookDeliveries(postgresDialect, at, limit, shards);
      return (await db.rows(sql, values)).map(toDueWebhookDelivery);
    },

    async recordWebhookAttempt(attempt) {
      await db.tx((c) => execute(c, recordWebhookAttempt(postgresDialect, attempt)));
    },

    async deleteOldWebhookDeliveries(before) {
      const result = await db.tx((c) => execute(c, deleteOldWebhookDeliveries(postgresDialect, before)));
      return result.rowCount ?? 0;
    },
  };
}

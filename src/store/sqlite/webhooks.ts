// Webhooks of SqliteStore: a tenant's endpoints, and the outbox of their deliveries. Events are queued by
// queueWebhookEvents inside the transaction of the change they report (a session commit, a user's delete,
// feedback), so that an event is stored if and only if its change is. The deliverer's claims and records go
// through the group commit (db.ts grouped): under load they share the turns' transactions and fsyncs.
import { now, type Row, toPage } from '../rows.ts';
import { insert, instant, sqliteDialect } from '../sql.ts';
import type { WebhookEvent, WebhookOutboxUsage, WebhookStore } from '../store.ts';
import * as backoffSql from '../webhook-backoff-sql.ts';
import {
  configureOutbox,
  countQueued,
  deliveriesThatFit,
  inLockOrder,
  leftOutbox,
  nothingQueued,
  outboxOf,
  type QueuedDeliveries,
  takenByEndpoint,
  usageOf,
} from '../webhook-outbox.ts';
import * as outboxSql from '../webhook-outbox-sql.ts';
import * as webhookRows from '../webhook-rows.ts';
import * as webhookSql from '../webhook-sql.ts';
import { all, get, run, type SqliteDb } from './db.ts';

/**
 * Writes one delivery of each event per subscribed endpoint: pending (blocked behind a pending one of its
 * endpoint and key) while its tenant's outbox has room, refused past it; call inside db.write (SQLite has one
 * writer at a time: nothing to lock). Tell the refusals (tellRefused) once the transaction committed.
 */
export function queueWebhookEvents(
  db: SqliteDb,
  events: readonly WebhookEvent[] | undefined,
): QueuedDeliveries {
  const queued = nothingQueued();
  if (!events?.length || !anyWebhooks(db)) return queued;
  const limits = outboxOf(db);
  const usage = new Map<string, WebhookOutboxUsage>();
  for (const event of events) {
    const endpoints = all(db, webhookSql.subscribedWebhooks(sqliteDialect, event, false));
    if (endpoints.length === 0) continue;
    const bytes = Buffer.byteLength(event.payload);
    const pending =
      usage.get(event.tenant_id) ?? usageOf(get(db, outboxSql.outboxUsage(sqliteDialect, event.tenant_id)));
    const room = deliveriesThatFit(limits, pending, endpoints.length, bytes);
    if (room > 0) run(db, insert(sqliteDialect, 'webhook_events', webhookRows.eventRow(event)));
    endpoints.forEach((endpoint, n) => {
      const webhookId = String(endpoint.id);
      let state: 'due' | 'blocked' | 'refused' = 'refused';
      if (n < room) {
        const latest = webhookSql.latestPendingDelivery(sqliteDialect, webhookId, event.ordering_key, false);
        state = get(db, latest) ? 'blocked' : 'due';
      }
      // The first of its key to an endpoint backed off waits with its others (see webhook-backoff-sql.ts).
      const held = endpoint.retry_at === null ? null : String(endpoint.retry_at);
      const row = webhookRows.deliveryRow(event, webhookId, bytes, state, held);
      run(db, insert(sqliteDialect, 'webhook_deliveries', row));
    });
    countQueued(queued, usage, event, pending, { wanted: endpoints.length, room, bytes });
  }
  for (const entry of inLockOrder(queued.added.values())) {
    if (entry.deliveries > 0) run(db, outboxSql.addToOutbox(sqliteDialect, entry));
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
    configureWebhookOutbox(settings) {
      configureOutbox(db, settings);
    },

    async webhookOutboxUsage(tenantId) {
      return usageOf(get(db, outboxSql.outboxUsage(sqliteDialect, tenantId)));
    },

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
      return db.write(() => {
        const owned = db.q('SELECT 1 FROM webhooks WHERE tenant_id = ? AND id = ?').get(tenantId, id);
        if (!owned) return false;
        // What its pending deliveries counted leaves its tenant's outbox with them.
        const pending = all(db, outboxSql.pendingOfEndpoint(sqliteDialect, id));
        // The deliveries go with it (ON DELETE CASCADE; the connection has foreign_keys on).
        db.q('DELETE FROM webhooks WHERE id = ?').run(id);
        for (const entry of takenByEndpoint(pending)) run(db, outboxSql.addToOutbox(sqliteDialect, entry));
        return true;
      });
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

    async dueWebhookDeliveries(at, limit, shards, skip) {
      return all(db, webhookSql.dueWebhookDeliveries(sqliteDialect, at, limit, shards, skip)).map(
        webhookRows.toDueWebhookDelivery,
      );
    },

    async claimWebhookProbe(claim) {
      const result = await db.grouped(() => run(db, backoffSql.claimWebhookProbe(sqliteDialect, claim)));
      return Number(result.changes) === 1;
    },

    async webhookPayload(eventId) {
      const row = db.q('SELECT payload FROM webhook_events WHERE id = ?').get(eventId);
      return row ? String(row.payload) : null;
    },

    async claimWebhookDelivery(claim) {
      const result = await db.grouped(() => run(db, webhookSql.claimWebhookDelivery(sqliteDialect, claim)));
      return Number(result.changes) === 1;
    },

    async releaseWebhookClaim(claim) {
      const result = await db.grouped(() => run(db, webhookSql.releaseWebhookClaim(sqliteDialect, claim)));
      return Number(result.changes) === 1;
    },

    async recordWebhookAttempt(attempt) {
      return db.grouped(() => {
        const recorded = get(db, webhookSql.recordWebhookAttempt(sqliteDialect, attempt));
        if (!recorded) return false;
        const webhookId = String(recorded.webhook_id);
        const done: Row[] = [];
        if (attempt.status !== 'pending') {
          const key = String(recorded.ordering_key);
          run(db, webhookSql.unblockNextDelivery(sqliteDialect, webhookId, key, attempt.at));
          done.push(recorded);
        }
        if (attempt.endpoint === null) {
          run(db, backoffSql.endpointAnswered(sqliteDialect, webhookId));
        } else {
          const { endpoint } = attempt;
          const failed = { at: attempt.at, retry_at: endpoint.retry_at, probe: endpoint.probe };
          const state = get(db, backoffSql.endpointFailed(sqliteDialect, webhookId, failed));
          const retryAt = String(state?.retry_at);
          run(db, backoffSql.holdDeliveries(sqliteDialect, webhookId, retryAt));
          if (state && String(state.failing_since) < instant(endpoint.give_up_before)) {
            const before = endpoint.give_up_before;
            done.push(...all(db, backoffSql.giveUpDeliveries(sqliteDialect, webhookId, before)));
            run(db, backoffSql.unblockEndpointKeys(sqliteDialect, webhookId, retryAt));
          }
        }
        for (const entry of inLockOrder(leftOutbox(done)))
          run(db, outboxSql.addToOutbox(sqliteDialect, entry));
        return true;
      });
    },

    async deleteOldWebhookDeliveries(before, limit) {
      const result = db.write(() =>
        run(db, webhookSql.deleteOldWebhookDeliveries(sqliteDialect, before, limit)),
      );
      return Number(result.changes);
    },

    async pruneWebhookEvents(limit) {
      const result = db.write(() => run(db, outboxSql.pruneWebhookEvents(sqliteDialect, limit)));
      return Number(result.changes);
    },
  };
}

// Sessions of SqliteStore: shard claims, fenced inserts, reads, and the one session write that every commit
// applies (SqliteStore groups those writes into transactions; see sqlite/store.ts). A write whose fence is stale
// throws StaleEpochError, and the transaction or savepoint around it undoes whatever it had written.
import { sessionNotFound } from '../../errors.ts';
import { decisionStatements, sessionsToWake } from '../approval-sql.ts';
import type { StoreParts } from '../composed-store.ts';
import { appendedMessages, sessionRow } from '../new-rows.ts';
import { now, sessionColumns, toLoadedSession, toSession, toSessionEvents } from '../rows.ts';
import { listSessions, toSessionPage } from '../session-list.ts';
import {
  deleteSessionStatements,
  insert,
  patchSession,
  recordIdempotencyKey,
  replaceSessionToken,
  sessionEventBatch,
  sessionEventBatches,
  sessionsCreatedBefore,
  sessionsDueForExpiry,
  sqliteDialect,
  storeIdempotencyResponse,
  toolCallStatements,
} from '../sql.ts';
import {
  ApprovalConflictError,
  type Fence,
  type SessionWrite,
  type SessionWriteResult,
  StaleEpochError,
} from '../store.ts';
import { countUsage } from '../usage-sql.ts';
import { all, get, run, type SqliteDb } from './db.ts';
import { queueWebhookEvents } from './webhooks.ts';

/** The sessions of SqliteStore, on its connection. */
export function part(db: SqliteDb): StoreParts['sessions'] {
  /** Throws StaleEpochError unless the shard's epoch is still the writer's; call inside db.write. */
  function checkFence(fence: Fence): void {
    const row = db.q('SELECT epoch FROM shard_owner WHERE shard = ?').get(fence.shard);
    if (row?.epoch !== fence.epoch) throw new StaleEpochError(fence.shard);
  }

  const sessions: StoreParts['sessions'] = {
    async claimShards(owner, shards) {
      const at = now();
      return db.write(() => {
        const claimed = new Map<number, number>();
        const claim = db.q(
          'UPDATE shard_owner SET epoch = epoch + 1, owner = ?, updated_at = ? WHERE shard = ? RETURNING epoch',
        );
        for (const shard of shards) {
          const row = claim.get(owner, at, shard);
          if (!row) throw new RangeError(`There is no shard ${shard}`);
          claimed.set(shard, Number(row.epoch));
        }
        return claimed;
      });
    },

    async holdsFence(fence) {
      return db.q('SELECT epoch FROM shard_owner WHERE shard = ?').get(fence.shard)?.epoch === fence.epoch;
    },

    async createSession(tenantId, session, fence) {
      const at = now();
      await db.grouped(() => {
        checkFence(fence);
        if (session.shard !== fence.shard) throw new StaleEpochError(session.shard);
        if (session.user_id !== null) {
          const user = db
            .q('SELECT 1 FROM users WHERE id = ? AND tenant_id = ?')
            .get(session.user_id, tenantId);
          if (!user) throw new Error(`User ${session.user_id} is not a user of tenant ${tenantId}`);
        }
        run(db, insert(sqliteDialect, 'sessions', sessionRow(tenantId, session, at)));
      });
      const created = await sessions.getSession(tenantId, session.id);
      if (!created) throw new Error(`Session ${session.id} vanished after its insert`);
      return created;
    },

    async getSession(tenantId, id) {
      const row = db
        .q(
          `SELECT ${sessionColumns} FROM sessions s LEFT JOIN users u ON u.id = s.user_id
             WHERE s.tenant_id = ? AND s.id = ?`,
        )
        .get(tenantId, id);
      return row ? toSession(row) : null;
    },

    async loadSession(id) {
      const sql = `SELECT ${sessionColumns}, s.snapshot FROM sessions s LEFT JOIN users u ON u.id = s.user_id
        WHERE s.id = ?`;
      return toLoadedSession(db.q(sql).get(id));
    },

    async listSessions(tenantId, filter, page) {
      return toSessionPage(all(db, listSessions(sqliteDialect, tenantId, filter, page)), page);
    },

    async sessionsDueForExpiry(at, limit, shards) {
      return all(db, sessionsDueForExpiry(sqliteDialect, at, limit, shards)).map((r) => String(r.id));
    },

    async sessionsCreatedBefore(tenantId, before, limit, shards) {
      const statement = sessionsCreatedBefore(sqliteDialect, tenantId, before, limit, shards);
      return all(db, statement).map((r) => String(r.id));
    },

    async deleteSession(sessionId, fence) {
      return db.write(() => {
        const row = db.q('SELECT shard FROM sessions WHERE id = ?').get(sessionId);
        if (!row) return false;
        if (row.shard !== fence.shard) throw new StaleEpochError(Number(row.shard));
        checkFence(fence);
        for (const statement of deleteSessionStatements(sqliteDialect, sessionId)) run(db, statement);
        db.q('DELETE FROM sessions WHERE id = ?').run(sessionId);
        return true;
      });
    },

    async replaceSessionToken(sessionId, expected, jti) {
      const statement = replaceSessionToken(sqliteDialect, sessionId, expected, jti, now());
      return db.grouped(() => Number(run(db, statement).changes) === 1);
    },

    async sessionsToWake(at, limit, shards) {
      return all(db, sessionsToWake(sqliteDialect, at, limit, shards)).map((r) => String(r.id));
    },

    async sessionEvents(sessionId, after, limit) {
      const batches = all(db, sessionEventBatches(sqliteDialect, sessionId, after, limit));
      return toSessionEvents(batches, after, limit);
    },
  };
  return sessions;
}

/** Applies one session write, fenced; call inside db.write (alone, or in a savepoint of a group). */
export function applySessionWrite(db: SqliteDb, write: SessionWrite): SessionWriteResult {
  const at = write.at ?? now();
  // The write holds the fence as its condition (one statement, not a lookup before it); a write that
  // changed nothing is then told apart, rarely, by the lookup.
  const row = get(db, patchSession(sqliteDialect, write, at, true));
  if (!row) throwRefusal(db, write);
  const messagesCount = Number(row?.messages_count);
  // Messages are only ever appended here, so the count is the last seq: no max(seq) lookup.
  const appended = appendedMessages(write, messagesCount - (write.messages?.length ?? 0), at);
  for (const { row } of appended) run(db, insert(sqliteDialect, 'messages', row));
  const eventsCount = Number(row?.events_count);
  const events = sessionEventBatch(sqliteDialect, write, eventsCount, at);
  if (events) run(db, events);
  const usage = countUsage(sqliteDialect, write, at);
  if (usage) run(db, usage);
  const idempotency = recordIdempotencyKey(sqliteDialect, write, at);
  if (idempotency) run(db, idempotency);
  const response = storeIdempotencyResponse(sqliteDialect, write);
  if (response) run(db, response);
  for (const statement of toolCallStatements(sqliteDialect, write, at)) run(db, statement);
  for (const [i, statement] of decisionStatements(sqliteDialect, write, at).entries()) {
    if (!get(db, statement)) throw new ApprovalConflictError(write.decisions?.[i]?.id ?? '');
  }
  const { queued, refused } = queueWebhookEvents(db, write.webhookEvents);
  return {
    messages: appended.map((m) => m.record),
    messages_count: messagesCount,
    events_count: eventsCount,
    updated_at: at,
    webhook_deliveries: queued,
    webhook_refused: refused,
  };
}

/** Why a fenced write changed no row: the session is gone, or its fence is stale. Throws either way. */
function throwRefusal(db: SqliteDb, write: SessionWrite): never {
  // The fence and the session's own shard in one lookup: a fence of another shard proves nothing.
  const owner = db
    .q('SELECT s.shard, o.epoch FROM sessions s LEFT JOIN shard_owner o ON o.shard = s.shard WHERE s.id = ?')
    .get(write.session_id);
  // Deleted meanwhile (the demo's retention): the caller learns the session is gone, not an internal error.
  if (!owner) throw sessionNotFound(write.session_id);
  throw new StaleEpochError(Number(owner.shard));
}

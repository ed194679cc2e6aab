// Sessions of PostgresStore: shard claims, fenced inserts, reads, and the one session write every commit
// applies in its own transaction. A write whose fence is stale throws StaleEpochError, and the caller's
// rollback leaves everything unchanged.
import { sessionNotFound } from '../../errors.ts';
import { SHARD_COUNT } from '../../shards.ts';
import { decisionStatements, sessionsToWake } from '../approval-sql.ts';
import type { StoreParts } from '../composed-store.ts';
import { appendedMessages, sessionRow } from '../new-rows.ts';
import { now, sessionColumns, toLoadedSession, toSession, toSessionEvents } from '../rows.ts';
import { listSessions, toSessionPage } from '../session-list.ts';
import {
  deleteSessionStatements,
  insert,
  patchSession,
  postgresDialect,
  recordIdempotencyKey,
  replaceSessionToken,
  type Statement,
  sessionEventBatch,
  sessionEventBatches,
  sessionsCreatedBefore,
  sessionsDueForExpiry,
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
import type { Db, Queryable } from './db.ts';
import { queueWebhookEvents } from './webhook-queue.ts';

/**
 * Throws StaleEpochError unless the shard's epoch is still the fence's. The row stays share-locked until
 * commit, so a claim of the shard waits for this write and the write can never land after a newer claim.
 */
async function checkFence(c: Queryable, fence: Fence): Promise<void> {
  const { rows } = await c.query('SELECT epoch FROM shard_owner WHERE shard = $1 FOR SHARE', [fence.shard]);
  if (rows[0]?.epoch !== fence.epoch) throw new StaleEpochError(fence.shard);
}

const execute = (c: Queryable, s: Statement) => c.query(s.sql, s.values);

/** The sessions of PostgresStore, on its connection. */
export function part(db: Db): StoreParts['sessions'] {
  const sessions: StoreParts['sessions'] = {
    async claimShards(owner, shards) {
      for (const shard of shards) {
        if (!Number.isInteger(shard) || shard < 0 || shard >= SHARD_COUNT) {
          throw new RangeError(`There is no shard ${shard}`);
        }
      }
      // One statement, rows in shard order: concurrent claims lock rows in the same order, never deadlock.
      const unique = [...new Set(shards)].sort((a, b) => a - b);
      const { rows } = await db.tx((c) =>
        c.query(
          `INSERT INTO shard_owner (shard, epoch, owner, updated_at)
             SELECT s, 1, $1, $2 FROM unnest($3::int[]) AS s ORDER BY s
           ON CONFLICT (shard) DO UPDATE
             SET epoch = shard_owner.epoch + 1, owner = excluded.owner, updated_at = excluded.updated_at
           RETURNING shard, epoch`,
          [owner, now(), unique],
        ),
      );
      return new Map(rows.map((r) => [Number(r.shard), Number(r.epoch)]));
    },

    async holdsFence(fence) {
      const [row] = await db.rows('SELECT epoch FROM shard_owner WHERE shard = $1', [fence.shard]);
      return row?.epoch === fence.epoch;
    },

    async createSession(tenantId, session, fence) {
      const at = now();
      await db.tx(async (c) => {
        await checkFence(c, fence);
        if (session.shard !== fence.shard) throw new StaleEpochError(session.shard);
        if (session.user_id !== null) {
          const user = await c.query('SELECT 1 FROM users WHERE id = $1 AND tenant_id = $2', [
            session.user_id,
            tenantId,
          ]);
          if (user.rowCount === 0)
            throw new Error(`User ${session.user_id} is not a user of tenant ${tenantId}`);
        }
        await execute(c, insert(postgresDialect, 'sessions', sessionRow(tenantId, session, at)));
      });
      const created = await sessions.getSession(tenantId, session.id);
      if (!created) throw new Error(`Session ${session.id} vanished after its insert`);
      return created;
    },

    async getSession(tenantId, id) {
      const [row] = await db.rows(
        `SELECT ${sessionColumns} FROM sessions s LEFT JOIN users u ON u.id = s.user_id
           WHERE s.tenant_id = $1 AND s.id = $2`,
        [tenantId, id],
      );
      return row ? toSession(row) : null;
    },

    async loadSession(id) {
      const sql = `SELECT ${sessionColumns}, s.snapshot FROM sessions s LEFT JOIN users u ON u.id = s.user_id
        WHERE s.id = $1`;
      return toLoadedSession((await db.rows(sql, [id]))[0]);
    },

    async listSessions(tenantId, filter, page) {
      const { sql, values } = listSessions(postgresDialect, tenantId, filter, page);
      return toSessionPage(await db.rows(sql, values), page);
    },

    async sessionsDueForExpiry(at, limit, shards) {
      const { sql, values } = sessionsDueForExpiry(postgresDialect, at, limit, shards);
      return (await db.rows(sql, values)).map((r) => String(r.id));
    },

    async sessionsCreatedBefore(tenantId, before, limit, shards) {
      const { sql, values } = sessionsCreatedBefore(postgresDialect, tenantId, before, limit, shards);
      return (await db.rows(sql, values)).map((r) => String(r.id));
    },

    async deleteSession(sessionId, fence) {
      return db.tx(async (c) => {
        // Locked first, as a session write locks it: a write of this session waits, then finds it gone.
        const { rows } = await c.query('SELECT shard FROM sessions WHERE id = $1 FOR UPDATE', [sessionId]);
        const shard: unknown = rows[0]?.shard;
        if (shard === undefined) return false;
        if (shard !== fence.shard) throw new StaleEpochError(Number(shard));
        await checkFence(c, fence);
        for (const statement of deleteSessionStatements(postgresDialect, sessionId))
          await execute(c, statement);
        await c.query('DELETE FROM sessions WHERE id = $1', [sessionId]);
        return true;
      });
    },

    async replaceSessionToken(sessionId, expected, jti) {
      const statement = replaceSessionToken(postgresDialect, sessionId, expected, jti, now());
      const { rowCount } = await db.tx((c) => execute(c, statement));
      return rowCount === 1;
    },
    async sessionsToWake(at, limit, shards) {
      const { sql, values } = sessionsToWake(postgresDialect, at, limit, shards);
      return (await db.rows(sql, values)).map((r) => String(r.id));
    },

    async sessionEvents(sessionId, after, limit) {
      const { sql, values } = sessionEventBatches(postgresDialect, sessionId, after, limit);
      return toSessionEvents(await db.rows(sql, values), after, limit);
    },
  };
  return sessions;
}

/**
 * Applies one session write, fenced; call inside a transaction on `c` (PostgresStore runs one per write) of
 * the store on `db`.
 */
export async function applySessionWrite(
  db: Db,
  c: Queryable,
  write: SessionWrite,
): Promise<SessionWriteResult> {
  const at = write.at ?? now();
  const session = await c.query('SELECT shard FROM sessions WHERE id = $1', [write.session_id]);
  const shard: unknown = session.rows[0]?.shard;
  // Deleted meanwhile (the demo's retention): the caller learns the session is gone, not an internal error.
  if (shard === undefined) throw sessionNotFound(write.session_id);
  // A fence of another shard proves nothing about this session's shard.
  if (shard !== write.fence.shard) throw new StaleEpochError(Number(shard));
  await checkFence(c, write.fence);
  const { rows } = await execute(c, patchSession(postgresDialect, write, at));
  // Deleted after the lookup (deleteSession holds the row until it commits): the update found no row. The
  // event log has no foreign key to catch it, so say so here rather than append to a session that is gone.
  if (rows.length === 0) throw sessionNotFound(write.session_id);
  const messagesCount = Number(rows[0]?.messages_count);
  // Messages are only ever appended here, so the count is the last seq: no max(seq) lookup.
  const appended = appendedMessages(write, messagesCount - (write.messages?.length ?? 0), at);
  for (const { row } of appended) await execute(c, insert(postgresDialect, 'messages', row));
  const eventsCount = Number(rows[0]?.events_count);
  const events = sessionEventBatch(postgresDialect, write, eventsCount, at);
  if (events) await execute(c, events);
  const usage = countUsage(postgresDialect, write, at);
  if (usage) await execute(c, usage);
  const idempotency = recordIdempotencyKey(postgresDialect, write, at);
  if (idempotency) await execute(c, idempotency);
  const response = storeIdempotencyResponse(postgresDialect, write);
  if (response) await execute(c, response);
  for (const statement of toolCallStatements(postgresDialect, write, at)) await execute(c, statement);
  for (const [i, statement] of decisionStatements(postgresDialect, write, at).entries()) {
    const { rows: decided } = await execute(c, statement);
    if (decided.length === 0) throw new ApprovalConflictError(write.decisions?.[i]?.id ?? '');
  }
  const { queued, refused } = await queueWebhookEvents(db, c, write.webhookEvents);
  return {
    messages: appended.map((m) => m.record),
    messages_count: messagesCount,
    events_count: eventsCount,
    updated_at: at,
    webhook_deliveries: queued,
    webhook_refused: refused,
  };
}

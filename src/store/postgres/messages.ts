// What PostgresStore keeps of a session's conversation besides the session row: messages (in `seq` order),
// the conversation's feedback, and Idempotency-Key records (written by session commits; see
// postgres/sessions.ts).

import { awaitingApproval } from '../approval-sql.ts';
import type { StoreParts } from '../composed-store.ts';
import { now, toFeedback, toIdempotency, toMessage, toPage, toToolCall, toWaitingCall } from '../rows.ts';
import { feedbackOf, messagesById, postgresDialect, recentMessages, upsertFeedback } from '../sql.ts';
import { tellRefused } from '../webhook-outbox.ts';
import type { Db } from './db.ts';
import { queueWebhookEvents } from './webhook-queue.ts';

/** The messages, feedback and Idempotency-Key records of PostgresStore, on its connection. */
export function part(db: Db): StoreParts['messages'] {
  return {
    async getMessage(tenantId, sessionId, messageId) {
      const [row] = await db.rows(
        `SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id
           WHERE s.tenant_id = $1 AND m.session_id = $2 AND m.id = $3`,
        [tenantId, sessionId, messageId],
      );
      return row ? toMessage(row) : null;
    },

    async listMessages(tenantId, sessionId, page) {
      const owned = await db.rows('SELECT 1 FROM sessions WHERE tenant_id = $1 AND id = $2', [
        tenantId,
        sessionId,
      ]);
      if (owned.length === 0) return null;
      const rows = await db.rows(
        'SELECT * FROM messages WHERE session_id = $1 ORDER BY seq LIMIT $2 OFFSET $3',
        [sessionId, page.limit + 1, page.offset],
      );
      return toPage(rows.map(toMessage), page);
    },

    async recentMessages(sessionId, limit, maxChars) {
      const { sql, values } = recentMessages(postgresDialect, sessionId, limit, maxChars);
      return (await db.rows(sql, values)).map(toMessage);
    },

    async messagesById(sessionId, ids) {
      const { sql, values } = messagesById(postgresDialect, sessionId, ids);
      return (await db.rows(sql, values)).map(toMessage);
    },

    async turnMessages(sessionId, turnId) {
      const rows = await db.rows(
        'SELECT * FROM messages WHERE session_id = $1 AND turn_id = $2 ORDER BY seq',
        [sessionId, turnId],
      );
      return rows.map(toMessage);
    },

    async turnToolCalls(sessionId, turnId) {
      const rows = await db.rows(
        'SELECT * FROM tool_calls WHERE session_id = $1 AND turn_id = $2 ORDER BY step, position',
        [sessionId, turnId],
      );
      return rows.map(toToolCall);
    },

    async awaitingApproval(sessionIds) {
      if (sessionIds.length === 0) return [];
      const { sql, values } = awaitingApproval(postgresDialect, sessionIds);
      return (await db.rows(sql, values)).map(toWaitingCall);
    },

    async upsertFeedback(sessionId, feedback, event) {
      const { sql, values } = upsertFeedback(postgresDialect, sessionId, feedback, now());
      let refused = 0;
      const stored = await db.tx(async (c) => {
        const { rows } = await c.query(sql, values);
        if (!rows[0]) throw new Error(`The feedback of session ${sessionId} was not stored`);
        const kept = toFeedback(rows[0]);
        // The event reports the feedback as stored (a replacement keeps the first id).
        if (event) refused = (await queueWebhookEvents(db, c, [event(kept)])).refused;
        return kept;
      });
      tellRefused(db, refused);
      return stored;
    },

    async getFeedback(sessionId) {
      const [row] = await db.rows('SELECT * FROM feedback WHERE session_id = $1', [sessionId]);
      return row ? toFeedback(row) : null;
    },

    async feedbackOf(sessionIds) {
      const { sql, values } = feedbackOf(postgresDialect, sessionIds);
      return (await db.rows(sql, values)).map(toFeedback);
    },

    async getIdempotencyRecord(sessionId, key) {
      const [row] = await db.rows('SELECT * FROM idempotency_records WHERE session_id = $1 AND key = $2', [
        sessionId,
        key,
      ]);
      return row ? toIdempotency(row) : null;
    },

    async deleteExpiredIdempotencyRecords(at) {
      const result = await db.tx((c) =>
        c.query('DELETE FROM idempotency_records WHERE expires_at <= $1', [at]),
      );
      return result.rowCount ?? 0;
    },
  };
}

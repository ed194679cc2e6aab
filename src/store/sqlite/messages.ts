// What SqliteStore keeps of a session's conversation besides the session row: messages (in `seq` order),
// the conversation's feedback, and Idempotency-Key records (written by session commits; see
// sqlite/sessions.ts).

import { awaitingApproval } from '../approval-sql.ts';
import type { StoreParts } from '../composed-store.ts';
import { now, toFeedback, toIdempotency, toMessage, toPage, toToolCall, toWaitingCall } from '../rows.ts';
import { feedbackOf, messagesById, recentMessages, sqliteDialect, upsertFeedback } from '../sql.ts';
import { tellRefused } from '../webhook-outbox.ts';
import { all, get, type SqliteDb } from './db.ts';
import { queueWebhookEvents } from './webhooks.ts';

/** The messages, feedback and Idempotency-Key records of SqliteStore, on its connection. */
export function part(db: SqliteDb): StoreParts['messages'] {
  return {
    async getMessage(tenantId, sessionId, messageId) {
      const row = db
        .q(
          `SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id
             WHERE s.tenant_id = ? AND m.session_id = ? AND m.id = ?`,
        )
        .get(tenantId, sessionId, messageId);
      return row ? toMessage(row) : null;
    },

    async listMessages(tenantId, sessionId, page) {
      const owned = db.q('SELECT 1 FROM sessions WHERE tenant_id = ? AND id = ?').get(tenantId, sessionId);
      if (!owned) return null;
      const rows = db
        .q('SELECT * FROM messages WHERE session_id = ? ORDER BY seq LIMIT ? OFFSET ?')
        .all(sessionId, page.limit + 1, page.offset);
      return toPage(rows.map(toMessage), page);
    },

    async recentMessages(sessionId, limit, maxChars) {
      return all(db, recentMessages(sqliteDialect, sessionId, limit, maxChars)).map(toMessage);
    },

    async turnMessages(sessionId, turnId) {
      return db
        .q('SELECT * FROM messages WHERE session_id = ? AND turn_id = ? ORDER BY seq')
        .all(sessionId, turnId)
        .map(toMessage);
    },

    async messagesById(sessionId, ids) {
      return all(db, messagesById(sqliteDialect, sessionId, ids)).map(toMessage);
    },

    async turnToolCalls(sessionId, turnId) {
      return db
        .q('SELECT * FROM tool_calls WHERE session_id = ? AND turn_id = ? ORDER BY step, position')
        .all(sessionId, turnId)
        .map(toToolCall);
    },

    async awaitingApproval(sessionIds) {
      if (sessionIds.length === 0) return [];
      return all(db, awaitingApproval(sqliteDialect, sessionIds)).map(toWaitingCall);
    },

    async upsertFeedback(sessionId, feedback, event) {
      let refused = 0;
      const stored = await db.grouped(() => {
        const row = get(db, upsertFeedback(sqliteDialect, sessionId, feedback, now()));
        if (!row) throw new Error(`The feedback of session ${sessionId} was not stored`);
        const kept = toFeedback(row);
        // The event reports the feedback as stored (a replacement keeps the first id).
        if (event) refused = queueWebhookEvents(db, [event(kept)]).refused;
        return kept;
      });
      tellRefused(db, refused);
      return stored;
    },

    async getFeedback(sessionId) {
      const row = db.q('SELECT * FROM feedback WHERE session_id = ?').get(sessionId);
      return row ? toFeedback(row) : null;
    },

    async feedbackOf(sessionIds) {
      return all(db, feedbackOf(sqliteDialect, sessionIds)).map(toFeedback);
    },

    async getIdempotencyRecord(sessionId, key) {
      const row = db
        .q('SELECT * FROM idempotency_records WHERE session_id = ? AND key = ?')
        .get(sessionId, key);
      return row ? toIdempotency(row) : null;
    },

    async deleteExpiredIdempotencyRecords(at) {
      const result = db.write(() => db.q('DELETE FROM idempotency_records WHERE expires_at <= ?').run(at));
      return Number(result.changes);
    },
  };
}

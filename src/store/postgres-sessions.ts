// Session writes of PostgresStore, each run inside the caller's transaction and fenced by the shard's
// epoch: a stale writer throws StaleEpochError, and the caller's rollback leaves everything unchanged.
import { json, now, type Queryable } from './postgres-rows.ts';
import {
  type Fence,
  type MessageRecord,
  type NewSession,
  type SessionWrite,
  type SessionWriteResult,
  StaleEpochError,
} from './store.ts';

/**
 * Throws StaleEpochError unless the shard's epoch is still the fence's. The row stays share-locked until
 * commit, so a claim of the shard waits for this write and the write can never land after a newer claim.
 */
export async function checkFence(c: Queryable, fence: Fence): Promise<void> {
  const { rows } = await c.query('SELECT epoch FROM shard_owner WHERE shard = $1 FOR SHARE', [fence.shard]);
  if (rows[0]?.epoch !== fence.epoch) throw new StaleEpochError(fence.shard);
}

/** Inserts a new session, fenced; call inside a transaction. */
export async function insertSession(
  c: Queryable,
  tenantId: string,
  session: NewSession,
  fence: Fence,
  at: string,
): Promise<void> {
  await checkFence(c, fence);
  if (session.shard !== fence.shard) throw new StaleEpochError(session.shard);
  if (session.user_id !== null) {
    const user = await c.query('SELECT 1 FROM users WHERE id = $1 AND tenant_id = $2', [
      session.user_id,
      tenantId,
    ]);
    if (user.rowCount === 0) throw new Error(`User ${session.user_id} is not a user of tenant ${tenantId}`);
  }
  await c.query(
    `INSERT INTO sessions (id, tenant_id, agent_id, user_id, shard, status, context, metadata, expires_at,
       snapshot, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'active', $6, $7, $8, $9, $10, $10)`,
    [
      session.id,
      tenantId,
      session.agent_id,
      session.user_id,
      session.shard,
      json(session.context),
      json(session.metadata),
      new Date(session.expires_at).toISOString(),
      session.snapshot,
      at,
    ],
  );
}

/** Applies one session write, fenced, as SqliteStore does; call inside a transaction. */
export async function applySessionWrite(c: Queryable, write: SessionWrite): Promise<SessionWriteResult> {
  const at = write.at ?? now();
  const session = await c.query('SELECT shard FROM sessions WHERE id = $1', [write.session_id]);
  const shard = session.rows[0]?.shard as number | undefined;
  if (shard === undefined) throw new Error(`Session ${write.session_id} does not exist`);
  // A fence of another shard proves nothing about this session's shard.
  if (shard !== write.fence.shard) throw new StaleEpochError(shard);
  await checkFence(c, write.fence);
  const added = write.messages ?? [];
  const p = write.patch;
  const { rows } = await c.query(
    `UPDATE sessions SET
       status = coalesce($2::text, status),
       closed_at = coalesce($3::text, closed_at),
       close_reason = CASE WHEN $4::boolean THEN $5::text ELSE close_reason END,
       expires_at = coalesce($6::text, expires_at),
       last_message_at = coalesce($7::text, last_message_at),
       messages_count = messages_count + $8::int,
       snapshot = $9, version = version + 1, updated_at = $10
     WHERE id = $1 RETURNING messages_count`,
    [
      write.session_id,
      p.status ?? null,
      p.closed_at ?? null,
      p.close_reason !== undefined,
      p.close_reason ?? null,
      p.expires_at === undefined ? null : new Date(p.expires_at).toISOString(),
      p.last_message_at ?? null,
      added.length,
      p.snapshot,
      at,
    ],
  );
  const messagesCount = rows[0]?.messages_count as number;
  // Messages are only ever appended here, so the count is the last seq: no max(seq) lookup.
  let seq = messagesCount - added.length;
  const messages: MessageRecord[] = [];
  for (const m of added) {
    seq += 1;
    const metadata = m.metadata === null ? null : JSON.stringify(m.metadata);
    await c.query(
      `INSERT INTO messages (id, session_id, seq, role, content, metadata, turn_id, created_at, epoch)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        m.id,
        write.session_id,
        seq,
        m.role,
        JSON.stringify(m.content),
        metadata,
        m.turn_id,
        at,
        write.fence.epoch,
      ],
    );
    messages.push({ ...m, session_id: write.session_id, created_at: at });
  }
  if (write.idempotency) {
    const k = write.idempotency;
    // Replaces the whole record, as SQLite's INSERT OR REPLACE does: a new use has no answer yet.
    await c.query(
      `INSERT INTO idempotency_records
         (session_id, key, fingerprint, turn_id, user_message_id, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (session_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
         turn_id = excluded.turn_id, user_message_id = excluded.user_message_id, status_code = NULL,
         response = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at`,
      [write.session_id, k.key, k.fingerprint, k.turn_id, k.user_message_id, at, k.expires_at],
    );
  }
  if (write.idempotencyResponse) {
    const r = write.idempotencyResponse;
    await c.query(
      'UPDATE idempotency_records SET status_code = $1, response = $2 WHERE session_id = $3 AND key = $4',
      [r.status_code, JSON.stringify(r.response), write.session_id, r.key],
    );
  }
  return { messages, messages_count: messagesCount, updated_at: at };
}

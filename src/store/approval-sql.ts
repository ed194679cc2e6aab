// The SQL of approvals (docs/internals/decisions.md#approvals), for both stores as sql.ts writes the rest: the
// sessions whose paused turn is due, the calls waiting for a decision, and the decisions a write applies.
import { type Dialect, instant, Query, type Statement } from './sql.ts';
import type { SessionWrite } from './store.ts';

/** Active sessions whose owner must act on their paused turn by `at` (sessions_wake holds only those). */
export function sessionsToWake(
  d: Dialect,
  at: string,
  limit: number,
  shards: readonly number[] | undefined,
): Statement {
  const q = new Query(d);
  const where = ['wake_at IS NOT NULL', `wake_at <= ${q.param(instant(at))}`, `status = 'active'`];
  if (shards) where.push(d.inJsonArray('shard', q.param(JSON.stringify(shards)), 'int'));
  return q.statement(
    `SELECT id FROM sessions WHERE ${where.join(' AND ')} ORDER BY wake_at LIMIT ${q.param(limit)}`,
  );
}

/** The calls of `sessionIds` waiting for a decision (tool_calls_awaiting holds only those). */
export function awaitingApproval(d: Dialect, sessionIds: readonly string[]): Statement {
  const q = new Query(d);
  const ids = d.inJsonArray('session_id', q.param(JSON.stringify(sessionIds)), 'text');
  return q.statement(`SELECT * FROM tool_calls WHERE status = 'awaiting_approval' AND ${ids}
    ORDER BY session_id, turn_id, step, position`);
}

/**
 * The decisions of one write, each on a call still awaiting approval (RETURNING its id: a statement that
 * returns no row met a call that was not waiting, and the driver undoes the write). An approved call goes
 * back to no status, to be run; a denied one is completed with its error result, and a client's function
 * call with the output the client sent, next in the turn's order.
 */
export function decisionStatements(d: Dialect, write: SessionWrite, at: string): Statement[] {
  return (write.decisions ?? []).map((r) => {
    const q = new Query(d);
    // Parameters are added in the order the text reads them (SQLite's `?` is positional).
    // A denied call is completed with its error result, a client's function call with the output it sent.
    const result =
      r.decision === 'denied' || r.output !== undefined
        ? `status = ${r.decision === 'denied' ? `'error'` : `'ok'`}, output = ${q.param(JSON.stringify(r.output ?? null))}, duration_ms = 0,
        completed_at = ${q.param(at)}, completed_seq = (SELECT COALESCE(MAX(completed_seq), 0) + 1
          FROM tool_calls WHERE session_id = ${q.param(write.session_id)} AND turn_id = ${q.param(r.turn_id)}),`
        : 'status = NULL,';
    return q.statement(`UPDATE tool_calls SET ${result}
      decision = ${q.param(r.decision)}, decided_by = ${q.param(r.by)},
      decision_reason = ${q.param(r.reason)}, decided_at = ${q.param(at)}, epoch = ${q.param(write.fence.epoch)}
      WHERE session_id = ${q.param(write.session_id)} AND turn_id = ${q.param(r.turn_id)} AND id = ${q.param(r.id)}
        AND status = 'awaiting_approval' RETURNING id`);
  });
}

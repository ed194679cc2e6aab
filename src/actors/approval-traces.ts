// The approval waits a commit ended (decided, expired, cancelled, closed), drawn as `parley.approval` spans
// when tracing is on: read back from the store, since a decision does not carry when or what its call asked.
// Nothing of it runs with tracing off, and a failure to read costs the trace a span, never the turn.
import type { Store, ToolCallDecision } from '../store/store.ts';
import { type ApprovalWait, recordApprovalWait, tracingActive } from '../tracing/tracer.ts';

const outcome = (d: ToolCallDecision): ApprovalWait['decision'] => {
  if (d.decision === 'approved') return 'approved';
  if (d.by === 'system' && d.reason === 'expired') return 'expired';
  if (d.by === 'system' && d.reason === 'cancelled') return 'cancelled';
  return 'denied';
};

export function traceDecisions(
  store: Store,
  sessionId: string,
  decisions: readonly ToolCallDecision[],
): void {
  if (!tracingActive() || decisions.length === 0) return;
  const decidedAt = new Date().toISOString();
  const turns = [...new Set(decisions.map((d) => d.turn_id))];
  void Promise.all(
    turns.map(async (turnId) => {
      const calls = new Map((await store.turnToolCalls(sessionId, turnId)).map((c) => [c.id, c]));
      for (const d of decisions) {
        const call = d.turn_id === turnId ? calls.get(d.id) : undefined;
        if (!call?.approver) continue;
        recordApprovalWait({
          sessionId,
          turnId,
          callId: call.id,
          tool: call.name,
          approver: call.approver,
          requestedAt: call.created_at,
          decidedAt: call.decided_at ?? decidedAt,
          decision: outcome(d),
        });
      }
    }),
  ).catch(() => {});
}

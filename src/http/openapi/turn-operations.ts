// The OpenAPI descriptions of deciding and cancelling a turn, in both families (docs/guides/approvals.md).
import { A, deciding, type OperationDoc, P, session, token } from './operation-parts.ts';

export const turnOperationDocs: Record<string, OperationDoc> = {
  [`POST ${A}/sessions/{session_id}/turns/{turn_id}/approvals`]: {
    id: 'decideApprovals',
    description:
      'Approves or denies tool calls the paused turn waits for (`decisions`: `call_id`, `approved`, an optional `reason` of up to 500 characters); decisions may come in several requests, and the turn goes on once every call of its step is decided. A decision is stored before anything runs; an approved call then runs once, a denied one never (the model is told `{ "error": "denied", "by", "reason" }`). Answers like `sendMessage`: 201 with the reply, or 202 while calls still wait; with `Accept: text/event-stream`, the turn\'s events after the pause it decided. A call that is not waiting (unknown, of another turn, decided otherwise, expired) is 409 `approval_not_pending` and nothing is applied; the same decision again is answered like the first.',
    ok: "The agent's reply (201), the approvals the turn still waits for (202), or the turn's events (200)",
    errors: [...session, ...deciding],
  },
  [`POST ${A}/sessions/{session_id}/turns/{turn_id}/cancel`]: {
    id: 'cancelTurn',
    description:
      'Stops a running or paused turn: its model call is aborted, calls not yet sent are not sent, what it wrote so far is stored as its reply with `stop_reason: "cancelled"`, and the calls it waited for are denied; its stream ends with `turn.cancelled`. Answered once that is stored, with the turn as it is. Cancelling a finished turn changes nothing and answers it as it is (`completed`, `cancelled`, or `interrupted` when it ended without a reply).',
    ok: 'The turn as it is, with its reply',
    errors: [...session, 'turn_not_found'],
  },
  [`POST ${P}/turns/{turn_id}/approvals`]: {
    id: 'decideConversationApprovals',
    description:
      'The decisions of `decideApprovals`, by the end user: only calls whose approver is `user` may be decided here (403 `approval_forbidden` for an `operator` call), and only those are shown in the answers and events of this family.',
    ok: "The agent's reply (201), the approvals the turn still waits for (202), or the turn's events (200)",
    errors: [...token, ...deciding],
  },
  [`POST ${P}/turns/{turn_id}/cancel`]: {
    id: 'cancelConversationTurn',
    description: 'Stops a running or paused turn of the conversation, as `cancelTurn` does (a stop button).',
    ok: 'The turn as it is, with its reply',
    errors: [...token, 'turn_not_found'],
  },
};

// The session's event log (docs/internals/decisions.md#the-conversation-event-stream): the events each commit
// appends, in the same write, for the conversation event stream to read. Derived here, in one place, from what
// the commit stores (its messages, tool calls and results, decisions, handoff and the session's end), plus the
// turn events its operation names (turn.started, message.completed, turn.completed, …). Messages are named by
// id (they are stored beside, once), and read with the events; approvals are kept whole; each family's view
// of them is taken when they are read.

import type { NewSessionEvent } from '../store/store.ts';
import { EXPIRED_REASON } from '../webhooks/webhook-events.ts';
import type { SessionChange } from './operation-context.ts';
import type { PublicMessage } from './public-message.ts';
import type { Approval } from './step-approvals.ts';
import { approvalOf } from './step-approvals.ts';

/** The events of `change`, committed at `at`, in the order they happened. */
export function sessionEventsOf(sessionId: string, change: SessionChange, at: string): NewSessionEvent[] {
  const events: NewSessionEvent[] = [];
  for (const call of change.toolCalls ?? []) {
    const approval = approvalOf(call, at);
    if (approval) {
      const { call_id, tool, input, approver, expires_at } = approval;
      events.push(
        event('tool.approval_requested', {
          turn_id: call.turn_id,
          call_id,
          tool,
          input,
          approver,
          expires_at,
        }),
      );
    } else
      events.push(
        event('tool.started', {
          turn_id: call.turn_id,
          call_id: call.id,
          name: call.name,
          input: call.input,
        }),
      );
  }
  for (const r of change.toolResults ?? [])
    events.push(
      event('tool.completed', {
        turn_id: r.turn_id,
        call_id: r.id,
        name: r.name ?? null,
        status: r.status,
        output: r.output,
      }),
    );
  // A denied call, or a client's function call given its output, is completed by its decision.
  for (const d of change.decisions ?? []) {
    if (d.decision === 'denied' || d.output !== undefined)
      events.push(
        event('tool.completed', {
          turn_id: d.turn_id,
          call_id: d.id,
          name: d.name ?? null,
          status: d.decision === 'denied' ? 'error' : 'ok',
          output: d.output,
        }),
      );
  }
  for (const m of change.messages ?? [])
    events.push(event('message.created', { turn_id: m.turn_id, message_id: m.id }));
  events.push(...(change.events ?? []));
  const handoff = change.patch?.handoff;
  if (handoff) events.push(event('session.handoff_requested', { session_id: sessionId, handoff }));
  else if (handoff === null) events.push(event('session.handed_back', { session_id: sessionId }));
  const status = change.patch?.status;
  if (status === 'closed')
    events.push(
      event('session.closed', { session_id: sessionId, reason: change.patch?.close_reason ?? null }),
    );
  else if (status === 'expired')
    events.push(event('session.expired', { session_id: sessionId, reason: EXPIRED_REASON }));
  return events;
}

const event = (type: string, data: object): NewSessionEvent => ({ type, data });

/** turn.started: the turn's first message (`userMessageId`) is stored and a reply is to come. */
export const turnStarted = (sessionId: string, turnId: string, userMessageId: string): NewSessionEvent =>
  event('turn.started', { turn_id: turnId, session_id: sessionId, user_message_id: userMessageId });

/** message.completed then turn.completed (or turn.cancelled): the turn's reply is stored. */
export function turnReplied(sessionId: string, turnId: string, message: PublicMessage): NewSessionEvent[] {
  const cancelled = message.stop_reason === 'cancelled';
  const end = { turn_id: turnId, session_id: sessionId, conversation_status: 'active' };
  return [
    event('message.completed', { turn_id: turnId, message_id: message.id }),
    cancelled ? event('turn.cancelled', end) : event('turn.completed', { ...end, usage: message.usage }),
  ];
}

/** turn.failed: the turn ended without a reply. */
export const turnFailed = (turnId: string, error: { code: string; name: string; message: string }) =>
  event('turn.failed', { turn_id: turnId, error });

/** turn.awaiting_approval: the turn's calls `approvals` wait for decisions. */
export const turnAwaiting = (turnId: string, approvals: readonly Approval[]) =>
  event('turn.awaiting_approval', { turn_id: turnId, approvals });

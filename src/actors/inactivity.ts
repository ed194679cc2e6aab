// The inactivity operation: stores the agent's inactivity warning or final message. A warning marks the
// session warned; a final message closes it with reason `inactivity` when the agent says so. Inactivity is
// not activity: the expiry deadline stays where the last real message put it.
import { AppError } from '../errors.ts';
import type { SessionStatus } from '../machines/session.ts';
import { agentOf, type OperationContext, type OperationDeps, type OperationOf } from './operation-context.ts';
import { type PublicMessage, publicMessage } from './public-message.ts';
import { closed, warned } from './session-changes.ts';

export interface InactivityPayload {
  step: 'warning' | 'final';
  messageId: string;
}

export interface InactivityResult {
  step: 'warning' | 'final';
  message: PublicMessage;
  conversation_status: Exclude<SessionStatus, 'expired'>;
}

export async function runInactivity(
  deps: OperationDeps,
  context: OperationContext,
  op: OperationOf<InactivityPayload>,
): Promise<InactivityResult> {
  const { step, messageId } = op.payload;
  const { session } = context.entry;
  const { agent } = agentOf(deps, session.agent_id);
  const closes = step === 'final' && agent.inactivity.close_on_final;
  const limit = agent.limits.messages_per_session;
  // A closing message is let past the limit: a full conversation must still be closable this way.
  if (!closes && session.messages_count + 1 > limit) {
    throw new AppError('session_message_limit_reached', undefined, {
      context: { limit, messages_count: session.messages_count },
    });
  }
  const at = new Date().toISOString();
  const text = step === 'warning' ? agent.inactivity.warning_message : agent.inactivity.final_message;
  const message = { id: messageId, role: 'assistant' as const, content: [{ type: 'text' as const, text }] };
  const { patch, event } = closes ? closed(at, 'inactivity') : warned();
  const result = await context.commit({
    at,
    messages: [{ ...message, metadata: null, turn_id: op.id }],
    patch: { last_message_at: at, ...patch },
    event,
  });
  const stored = result.messages[0];
  return {
    step,
    message: stored
      ? publicMessage(stored)
      : {
          ...message,
          created_at: at,
          metadata: null,
          stop_reason: null,
          usage: null,
          tool_calls: null,
          author: null,
        },
    conversation_status: closes ? 'closed' : 'active',
  };
}

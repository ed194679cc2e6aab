// What each operation on a session does, between the actor (which runs one at a time) and the store: a
// turn (turn.ts), an inactivity message, terminate, expiry. Every change is a fenced commit, made before
// anything is answered.
import { AppError } from '../errors.ts';
import type { Operation } from '../machines/session.ts';
import type { OperationContext, OperationRunner } from './session-host.ts';
import { agentOf, type OperationDeps, type PublicMessage, publicMessage, runTurn } from './turn.ts';

export interface TerminateResult {
  id: string;
  status: 'closed';
  closed_at: string;
  reason: string | null;
}

export interface InactivityPayload {
  step: 'warning' | 'final';
  messageId: string;
}

export interface InactivityResult {
  step: 'warning' | 'final';
  message: PublicMessage;
  conversation_status: 'active' | 'closed';
}

export function createOperationRunner(deps: OperationDeps): OperationRunner {
  return async (context, op) => {
    switch (op.kind) {
      case 'send':
        return runTurn(deps, context, op);
      case 'terminate':
        return terminate(context, op);
      case 'inactivity':
        return inactivity(deps, context, op);
      case 'expire':
        await context.commit({ patch: { status: 'expired' } }, { type: 'EXPIRED' });
        return null;
      default:
        throw new Error(`No runner for ${op.kind} operations`);
    }
  };
}

async function terminate(context: OperationContext, op: Operation): Promise<TerminateResult> {
  const { reason } = op.payload as { reason: string | null };
  const closedAt = new Date().toISOString();
  await context.commit(
    { patch: { status: 'closed', closed_at: closedAt, close_reason: reason } },
    { type: 'CLOSED', closedAt, reason },
  );
  return { id: context.entry.session.id, status: 'closed', closed_at: closedAt, reason };
}

/**
 * Stores the agent's inactivity warning or final message. A warning marks the session warned; a final
 * message closes it with reason `inactivity` when the agent says so. Inactivity is not activity: the
 * expiry deadline stays where the last real message put it.
 */
async function inactivity(
  deps: OperationDeps,
  context: OperationContext,
  op: Operation,
): Promise<InactivityResult> {
  const { step, messageId } = op.payload as InactivityPayload;
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
  const result = await context.commit(
    {
      at,
      messages: [{ ...message, metadata: null, turn_id: op.id }],
      patch: {
        last_message_at: at,
        ...(closes ? { status: 'closed' as const, closed_at: at, close_reason: 'inactivity' } : {}),
      },
    },
    closes ? { type: 'CLOSED', closedAt: at, reason: 'inactivity' } : { type: 'WARNED' },
  );
  session.messages_count = result.messages_count;
  const stored = result.messages[0];
  return {
    step,
    message: stored ? publicMessage(stored) : { ...message, created_at: at, metadata: null },
    conversation_status: closes ? 'closed' : 'active',
  };
}

// How a turn ends, whichever operation ends it (a send, a decision that let it go on, a cancel): its reply
// committed with the answer its send's Idempotency-Key replays and the turn.completed event, or its failure
// reported; a paused turn's end also clears the paused state and the session's wake_at. And the system prompt
// every part of a turn is asked with.
import type { AgentConfig } from '../agents/catalogue.ts';
import { systemPrompt, withRequestInstructions } from '../agents/prompt.ts';
import { AppError } from '../errors.ts';
import type { TurnExtras } from '../machines/session.ts';
import type { MessageUsage } from '../store/store.ts';
import { handoffAsked } from '../tools/handoff-tool.ts';
import { turnCompletedEvent, turnFailedEvent } from '../webhooks/webhook-events.ts';
import type { OperationContext, OperationDeps, SessionChange } from './operation-context.ts';
import type { PublicMessage } from './public-message.ts';
import { activity } from './session-changes.ts';
import { turnFailed, turnReplied } from './session-events.ts';
import type { StepsReply } from './tool-steps.ts';

export interface TurnEnd {
  agent: AgentConfig;
  turnId: string;
  replyId: string;
  /** The Idempotency-Key of the send that started the turn: its answer is the reply. */
  key: string | null;
  reply: StepsReply;
  /** The turn had paused (the session's machine and row say so until this commit). */
  endsPaused: boolean;
  /** performance.now() when the operation began, for the turn's duration. */
  started: number;
  /** What else the reply's commit writes (a cancel's denials and the results of calls it never sent). */
  with?: Pick<SessionChange, 'toolResults' | 'decisions'>;
}

/** Commits the turn's reply (and, for a paused turn, its end) and counts it; the reply as the API shows it. */
export async function commitReply(
  deps: OperationDeps,
  context: OperationContext,
  end: TurnEnd,
): Promise<PublicMessage> {
  const { agent, turnId, reply } = end;
  const { session } = context.entry;
  const at = new Date().toISOString();
  const agentMessage: PublicMessage = {
    id: end.replyId,
    role: 'assistant',
    content: [{ type: 'text', text: reply.text }],
    created_at: at,
    metadata: null,
    stop_reason: reply.stop_reason,
    usage: reply.usage,
    tool_calls: reply.tool_calls,
    author: null,
  };

  await context.commit({
    ...end.with,
    at,
    messages: [
      {
        id: agentMessage.id,
        role: 'assistant',
        content: agentMessage.content,
        metadata: null,
        turn_id: turnId,
        stop_reason: reply.stop_reason,
        usage: reply.usage,
        tool_calls: reply.tool_calls,
      },
    ],
    ...handingOff(activity(at, agent.session_ttl * 1000, false, end.endsPaused), reply, at),
    last: true,
    ...(end.key
      ? { idempotencyResponse: { key: end.key, status_code: 201, response: { agent_message: agentMessage } } }
      : {}),
    webhookEvents: [turnCompletedEvent(session, turnId, agentMessage, at)],
    events: turnReplied(session.id, turnId, agentMessage),
  });
  const { metrics } = deps;
  countTurn(deps, agent, reply.stop_reason === 'cancelled' ? 'cancelled' : 'replied');
  metrics.tokens.inc({ agent: agent.id, direction: 'input' }, reply.usage.input_tokens);
  metrics.tokens.inc({ agent: agent.id, direction: 'output' }, reply.usage.output_tokens);
  countUsage(deps, agent, reply.usage);
  metrics.turnDuration.observe((performance.now() - end.started) / 1000);
  return agentMessage;
}

/**
 * The reply's activity, handing the session to people when the model called handoff_to_human in the turn
 * (and people do not handle it already): the handoff is committed with the reply.
 */
function handingOff(change: ReturnType<typeof activity>, reply: StepsReply, at: string) {
  const asked = handoffAsked(reply.tool_calls);
  if (!asked || change.event.type !== 'ACTIVITY') return change;
  const handoff = { requested_at: at, reason: asked.reason, by: 'agent' as const };
  return { patch: { ...change.patch, handoff }, event: { ...change.event, handoff } };
}

/** Counts a reply's usage as its commit counted it (the metrics follow the stored totals). */
function countUsage(deps: OperationDeps, agent: AgentConfig, usage: MessageUsage): void {
  const labels = { agent: agent.id, model: usage.model ?? 'unknown' };
  const { modelTokens, modelCost } = deps.metrics;
  modelTokens.inc({ ...labels, kind: 'input' }, usage.input_tokens);
  modelTokens.inc({ ...labels, kind: 'output' }, usage.output_tokens);
  modelTokens.inc({ ...labels, kind: 'cached_input' }, usage.cached_input_tokens);
  modelTokens.inc({ ...labels, kind: 'reasoning' }, usage.reasoning_tokens);
  modelCost.inc(labels, usage.cost_micro_usd / 1e6);
}

/** Counts a turn's outcome (replied, paused, cancelled, stored, or its error's code). */
export function countTurn(deps: OperationDeps, agent: AgentConfig, outcome: string): void {
  deps.metrics.turns.inc({ outcome });
  deps.metrics.agentTurns.inc({ agent: agent.id, outcome });
}

/**
 * turn.failed, committed on its own: the turn's messages are stored and its reply will not come from this
 * attempt (a paused turn that failed going on ends so: a keyed retry of its send may finish it). Not when the
 * shard moves or the process stops (the turn is then the next owner's, and a keyed retry may finish it), nor
 * when the write itself fails.
 */
export async function reportFailure(
  deps: OperationDeps,
  context: OperationContext,
  turn: { turnId: string; endsPaused: boolean },
  err: unknown,
): Promise<void> {
  const error =
    err instanceof AppError
      ? { code: err.code, message: err.message }
      : { code: 'internal_error', message: 'Something went wrong on our side.' };
  // Moving or stopping: the turn is not over, a keyed retry on the next owner may still complete it.
  if (error.code === 'shard_moving' || context.signal.aborted) return;
  const at = new Date().toISOString();
  try {
    await context.commit({
      at,
      webhookEvents: [turnFailedEvent(context.entry.session, turn.turnId, error, at)],
      events: [
        turnFailed(turn.turnId, {
          ...error,
          name: err instanceof AppError ? err.errorName : 'InternalServerError',
        }),
      ],
      ...(turn.endsPaused ? { patch: { wake_at: null }, event: { type: 'TURN_ENDED' } } : {}),
    });
  } catch (commitErr) {
    deps.log.warn(
      { err: commitErr, turn_id: turn.turnId },
      'the turn.failed webhook event could not be stored',
    );
  }
}

/**
 * The system prompt of the session's turns: the agent's instructions, its context and its user's details, then
 * the instructions the request added for this turn, if any.
 */
export async function turnPrompt(
  deps: OperationDeps,
  context: OperationContext,
  agent: AgentConfig,
  extras?: TurnExtras,
): Promise<string> {
  const { session } = context.entry;
  const user = session.user ? await deps.store.getUser(session.tenant_id, session.user.id) : null;
  const prompt = systemPrompt(agent.instructions, session.context, user);
  // A request's instructions come after the agent's, never instead of them: the agent's are the integrator's
  // rules for every conversation, a request's only add to them for its turn.
  return extras?.instructions ? withRequestInstructions(prompt, extras.instructions) : prompt;
}

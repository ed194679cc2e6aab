// A turn (the send operation): the user's messages are stored (with the Idempotency-Key's record), the model
// answers, its reply is stored (with the answer to replay). Two commits, so that a failed model call or a
// crash keeps what the user sent and a retry under the key produces only the reply; a model that calls
// tools goes through steps in between, each committed (tool-steps.ts), each calling the model as
// turn-model.ts says. An authored assistant message is itself the answer.
import type { AgentConfig } from '../agents/catalogue.ts';
import { estimateCorrection, fitsAlone } from '../agents/context-window.ts';
import { systemPrompt } from '../agents/prompt.ts';
import type { Usage } from '../agents/provider.ts';
import { AppError, ValidationError } from '../errors.ts';
import type { ContentBlock, JsonObject, MessageRecord } from '../store/store.ts';
import { turnCompletedEvent, turnFailedEvent } from '../webhooks/webhook-events.ts';
import { currentLookup, type EarlierAttempt, keyAnswer, keyRecord } from './idempotency.ts';
import { agentOf, type OperationContext, type OperationDeps, type OperationOf } from './operation-context.ts';
import { type PublicMessage, publicMessage } from './public-message.ts';
import { activity } from './session-changes.ts';
import { runSteps, type StepsReply } from './tool-steps.ts';
import { firstTokenTimed, modelCaller } from './turn-model.ts';

export interface SendPayload {
  messages: {
    id: string;
    role: 'user' | 'assistant';
    content: ContentBlock[];
    metadata: JsonObject | null;
  }[];
  /** False for an integrator-authored assistant message: it is stored and is itself the reply. */
  reply: boolean;
  replyId: string;
  /** Where the last message's content is in the request, for a 422 about it (a send's `body.content`). */
  contentAt?: (string | number)[];
}

export interface TurnResult {
  turn_id: string;
  agent_message: PublicMessage;
  /** What the model call cost; null when no model was called now (a replay, an authored reply). */
  usage: Usage | null;
  /** True when the answer is the stored one of an earlier attempt with the same Idempotency-Key. */
  replayed: boolean;
}

/** The answer of an earlier attempt that finished, replayed. */
export const replayOf = (attempt: Extract<EarlierAttempt, { state: 'finished' }>): TurnResult => ({
  turn_id: attempt.turn_id,
  // Answers stored before messages had these fields replay them as null, as the message now reads.
  agent_message: {
    ...attempt.agent_message,
    stop_reason: attempt.agent_message.stop_reason ?? null,
    usage: attempt.agent_message.usage ?? null,
    tool_calls: attempt.agent_message.tool_calls ?? null,
  },
  usage: null,
  replayed: true,
});

/** Runs a send (send-message and run) and returns the agent's reply. */
export async function runTurn(
  deps: OperationDeps,
  context: OperationContext,
  op: OperationOf<SendPayload>,
): Promise<TurnResult> {
  const { store, metrics } = deps;
  const { session } = context.entry;
  const { payload, idempotency } = op;
  const { agent, provider } = agentOf(deps, session.agent_id);
  const started = performance.now();
  const ttlMs = agent.session_ttl * 1000;
  let turnId = op.id;
  /** The turn's messages once stored; null while they are not. */
  let stored: MessageRecord[] | null = null;
  const counted = (outcome: string) => {
    metrics.turns.inc({ outcome });
    metrics.agentTurns.inc({ agent: agent.id, outcome });
  };

  const earlier = idempotency ? (await currentLookup(store, context.entry, idempotency)).attempt : null;
  if (earlier?.state === 'finished') return replayOf(earlier);
  const system = payload.reply ? await turnPrompt(deps, context, agent) : '';
  if (earlier?.state === 'started') {
    // The first attempt stored its messages and then failed or died: produce the missing reply only.
    turnId = earlier.turn_id;
    stored = await store.turnMessages(session.id, turnId);
  }

  if (stored === null) {
    const adding = payload.messages.length + (payload.reply ? 1 : 0);
    const limit = agent.limits.messages_per_session;
    if (session.messages_count + adding > limit) {
      throw new AppError('session_message_limit_reached', undefined, {
        context: { limit, messages_count: session.messages_count },
      });
    }
    if (payload.reply) await refuseUnfitting(agent, system, payload);
    const at = new Date().toISOString();
    const authored = payload.reply ? undefined : payload.messages.at(-1);
    const userMessageId = payload.messages.find((m) => m.role === 'user')?.id ?? null;
    const result = await context.commit({
      at,
      messages: payload.messages.map((m) => ({ ...m, turn_id: turnId })),
      ...activity(at, ttlMs, userMessageId !== null),
      ...(idempotency ? { idempotency: keyRecord(idempotency, turnId, userMessageId) } : {}),
      ...(idempotency && authored
        ? {
            idempotencyResponse: keyAnswer(idempotency, {
              ...authored,
              created_at: at,
              stop_reason: null,
              usage: null,
              tool_calls: null,
            }),
          }
        : {}),
    });
    stored = result.messages;
    const last = stored.at(-1);
    if (authored && last) {
      counted('stored');
      context.observer?.started(turnId, last, null);
      return { turn_id: turnId, agent_message: publicMessage(last), usage: null, replayed: false };
    }
  }
  const first = stored[0];
  if (first) context.observer?.started(turnId, first, payload.replyId);

  let reply: StepsReply;
  try {
    const ask = firstTokenTimed(
      deps,
      agent,
      started,
      await modelCaller(deps, context, agent, provider, system),
    );
    // A retried turn goes on from the steps its earlier attempt committed.
    const resumed = earlier?.state === 'started' ? await store.turnToolCalls(session.id, turnId) : [];
    reply = await runSteps(deps, context, { agent, turnId, ask, resumed });
  } catch (err) {
    counted(err instanceof AppError ? err.code : 'error');
    await reportFailure(deps, context, turnId, err);
    throw err;
  }
  const at = new Date().toISOString();
  const agentMessage: PublicMessage = {
    id: payload.replyId,
    role: 'assistant',
    content: [{ type: 'text', text: reply.text }],
    created_at: at,
    metadata: null,
    stop_reason: reply.stop_reason,
    usage: reply.usage,
    tool_calls: reply.tool_calls,
  };
  await context.commit({
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
    ...activity(at, ttlMs, false),
    last: true,
    ...(idempotency ? { idempotencyResponse: keyAnswer(idempotency, agentMessage) } : {}),
    webhookEvents: [turnCompletedEvent(session, turnId, agentMessage, at)],
  });
  counted('replied');
  metrics.tokens.inc({ agent: agent.id, direction: 'input' }, reply.usage.input_tokens);
  metrics.tokens.inc({ agent: agent.id, direction: 'output' }, reply.usage.output_tokens);
  metrics.turnDuration.observe((performance.now() - started) / 1000);
  return { turn_id: turnId, agent_message: agentMessage, usage: reply.usage, replayed: false };
}

/**
 * turn.failed, committed on its own: the turn's messages are stored and its reply will not come from this
 * attempt. Not when the shard moves or the process stops (the turn is then the next owner's, and a keyed
 * retry may finish it), nor when the write itself fails.
 */
async function reportFailure(
  deps: OperationDeps,
  context: OperationContext,
  turnId: string,
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
    await context.commit({ at, webhookEvents: [turnFailedEvent(context.entry.session, turnId, error, at)] });
  } catch (commitErr) {
    deps.log.warn({ err: commitErr, turn_id: turnId }, 'the turn.failed webhook event could not be stored');
  }
}

/** The system prompt of the session's turns: the agent's instructions, its context and its user's details. */
async function turnPrompt(
  deps: OperationDeps,
  context: OperationContext,
  agent: AgentConfig,
): Promise<string> {
  const { session } = context.entry;
  const user = session.user ? await deps.store.getUser(session.tenant_id, session.user.id) : null;
  return systemPrompt(agent.instructions, session.context, user);
}

/**
 * A new message that cannot fit the agent's window even alone could never be answered: refused (422) before
 * anything is stored, rather than stored and failed at every later send.
 */
export async function refuseUnfitting(
  agent: AgentConfig,
  system: string,
  payload: Pick<SendPayload, 'messages' | 'contentAt'>,
): Promise<void> {
  const newest = payload.messages.at(-1);
  if (!newest) return;
  const ratio = estimateCorrection.ratio(agent);
  const { fits, tokens } = await fitsAlone(system, newest.content, agent, ratio);
  if (fits) return;
  throw ValidationError.at(
    payload.contentAt ?? ['body', 'content'],
    `The message is too long for this agent: with its instructions it is about ${Math.ceil(tokens * ratio)} ` +
      `tokens, and the agent takes ${agent.context_window - agent.max_tokens} (its context_window of ` +
      `${agent.context_window} less ${agent.max_tokens} for the reply).`,
    'too_long_for_agent',
  );
}

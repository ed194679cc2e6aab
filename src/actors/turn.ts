// A turn (the send operation): the user's messages are stored (with the Idempotency-Key's record), the model
// answers, its reply is stored (with the answer to replay). Two commits, so that a failed model call or a
// crash keeps what the user sent and a retry under the key produces only the reply. An authored assistant
// message is itself the answer.
import { callModel } from '../agents/call-model.ts';
import type { AgentConfig } from '../agents/catalogue.ts';
import { toModelMessages } from '../agents/model-messages.ts';
import { systemPrompt } from '../agents/prompt.ts';
import type { ModelReply, Provider, Usage } from '../agents/provider.ts';
import { AppError } from '../errors.ts';
import type { ContentBlock, JsonObject, MessageRecord } from '../store/store.ts';
import { currentLookup, type EarlierAttempt, keyAnswer, keyRecord } from './idempotency.ts';
import { agentOf, type OperationContext, type OperationDeps, type OperationOf } from './operation-context.ts';
import { type PublicMessage, publicMessage } from './public-message.ts';
import { activity } from './session-changes.ts';

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
  agent_message: attempt.agent_message,
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

  const earlier = idempotency ? (await currentLookup(store, context.entry, idempotency)).attempt : null;
  if (earlier?.state === 'finished') return replayOf(earlier);
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
    const at = new Date().toISOString();
    const authored = payload.reply ? undefined : payload.messages.at(-1);
    const userMessageId = payload.messages.find((m) => m.role === 'user')?.id ?? null;
    const result = await context.commit({
      at,
      messages: payload.messages.map((m) => ({ ...m, turn_id: turnId })),
      ...activity(at, ttlMs, userMessageId !== null),
      ...(idempotency ? { idempotency: keyRecord(idempotency, turnId, userMessageId) } : {}),
      ...(idempotency && authored
        ? { idempotencyResponse: keyAnswer(idempotency, { ...authored, created_at: at }) }
        : {}),
    });
    stored = result.messages;
    const last = stored.at(-1);
    if (authored && last) {
      metrics.turns.inc({ outcome: 'stored' });
      context.observer?.started(turnId, last, null);
      return { turn_id: turnId, agent_message: publicMessage(last), usage: null, replayed: false };
    }
  }
  const first = stored[0];
  if (first) context.observer?.started(turnId, first, payload.replyId);

  const reply = await askModel(deps, context, agent, provider);
  const at = new Date().toISOString();
  const agentMessage: PublicMessage = {
    id: payload.replyId,
    role: 'assistant',
    content: [{ type: 'text', text: reply.text }],
    created_at: at,
    metadata: null,
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
      },
    ],
    ...activity(at, ttlMs, false),
    ...(idempotency ? { idempotencyResponse: keyAnswer(idempotency, agentMessage) } : {}),
  });
  metrics.turns.inc({ outcome: 'replied' });
  metrics.turnDuration.observe((performance.now() - started) / 1000);
  return { turn_id: turnId, agent_message: agentMessage, usage: reply.usage, replayed: false };
}

/** Calls the model on the session's recent history (this turn's messages are stored by now). */
async function askModel(
  deps: OperationDeps,
  context: OperationContext,
  agent: AgentConfig,
  provider: Provider,
): Promise<ModelReply> {
  const { store, metrics } = deps;
  const { session } = context.entry;
  const modelStarted = performance.now();
  const observe = (outcome: string) =>
    metrics.providerDuration.observe(
      { provider: provider.name, outcome },
      (performance.now() - modelStarted) / 1000,
    );
  try {
    const limit = agent.history_limit;
    const maxChars = deps.maxHistoryChars;
    const history = await context.entry.history.recent(limit, maxChars, () =>
      store.recentMessages(session.id, limit, maxChars),
    );
    const user = session.user ? await store.getUser(session.tenant_id, session.user.id) : null;
    const reply = await callModel(
      provider,
      {
        model: agent.model,
        system: systemPrompt(agent.instructions, session.context, user),
        messages: await toModelMessages(store, session.tenant_id, history, deps.files),
        onDelta: (text) => context.observer?.delta(text),
      },
      { totalMs: agent.timeouts.total_ms, stallMs: agent.timeouts.stall_ms, signal: context.signal },
    );
    observe('ok');
    return reply;
  } catch (err) {
    const outcome = err instanceof AppError ? err.code : 'error';
    observe(outcome);
    metrics.turns.inc({ outcome });
    throw err;
  }
}

// What each operation on a session does, between the actor (which runs one at a time) and the store:
// a send stores the user's messages, asks the model and stores its reply; terminate and expiry close the
// session. Every step is one fenced commit, made before anything is answered.

import { callModel } from '../agents/call-model.ts';
import type { Catalogue } from '../agents/catalogue.ts';
import { toModelMessages } from '../agents/model-messages.ts';
import { systemPrompt } from '../agents/prompt.ts';
import type { Provider, Usage } from '../agents/provider.ts';
import { AppError } from '../errors.ts';
import type { Operation } from '../machines/session.ts';
import type { ContentBlock, JsonObject, MessageRecord, Store } from '../store/store.ts';
import type { ActorMetrics } from './actor-metrics.ts';
import type { OperationContext, OperationRunner } from './session-host.ts';

/** Idempotency-Keys are remembered for 24 h from their first use (DESIGN.md §5). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 3600 * 1000;

export interface PublicMessage {
  id: string;
  role: 'user' | 'assistant';
  content: ContentBlock[];
  created_at: string;
  metadata: JsonObject | null;
}

export const publicMessage = (m: MessageRecord): PublicMessage => ({
  id: m.id,
  role: m.role,
  content: m.content,
  created_at: m.created_at,
  metadata: m.metadata,
});

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

export interface OperationDeps {
  store: Store;
  catalogue: Catalogue;
  providers: ReadonlyMap<string, Provider>;
  metrics: ActorMetrics;
}

export function createOperationRunner(deps: OperationDeps): OperationRunner {
  return async (context, op) => {
    switch (op.kind) {
      case 'send':
        return send(deps, context, op);
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

/**
 * What an earlier use of this Idempotency-Key left: its answer to replay, the turn it began and did not
 * finish, or nothing (no key, or never used, or retention passed). Another request under the key: 409.
 */
export async function earlierAttempt(
  store: Store,
  sessionId: string,
  key: string | undefined,
  fingerprint: string | undefined,
): Promise<TurnResult | { turn_id: string } | null> {
  if (key === undefined) return null;
  const record = await store.getIdempotencyRecord(sessionId, key);
  if (!record || Date.parse(record.expires_at) <= Date.now()) return null;
  if (record.fingerprint !== fingerprint) {
    throw new AppError('idempotency_key_reused', undefined, { context: { idempotency_key: key } });
  }
  if (record.status_code === null) return { turn_id: record.turn_id };
  const stored = record.response as { agent_message: PublicMessage };
  return { turn_id: record.turn_id, agent_message: stored.agent_message, usage: null, replayed: true };
}

function agentOf(deps: OperationDeps, agentId: string) {
  const agent = deps.catalogue.get(agentId);
  const provider = deps.providers.get(agentId);
  if (!agent || !provider)
    throw new AppError('agent_not_found', undefined, { context: { agent_id: agentId } });
  return { agent, provider };
}

async function send(deps: OperationDeps, context: OperationContext, op: Operation): Promise<TurnResult> {
  const { store } = deps;
  const { session } = context.entry;
  const payload = op.payload as SendPayload;
  const { agent, provider } = agentOf(deps, session.agent_id);
  const started = performance.now();
  const now = Date.now();
  let turnId = op.id;
  let userMessages: MessageRecord[] | null = null;

  const earlier = await earlierAttempt(store, session.id, op.key, op.fingerprint);
  if (earlier && 'replayed' in earlier) return earlier;
  if (earlier) {
    // The first attempt stored its messages and then failed or died: produce the missing reply only.
    turnId = earlier.turn_id;
    userMessages = await store.turnMessages(session.id, turnId);
  }

  const expiresAt = (at: number) => new Date(at + agent.session_ttl * 1000).toISOString();
  if (userMessages === null) {
    const adding = payload.messages.length + (payload.reply ? 1 : 0);
    const limit = agent.limits.messages_per_session;
    if (session.messages_count + adding > limit) {
      throw new AppError('session_message_limit_reached', undefined, {
        context: { limit, messages_count: session.messages_count },
      });
    }
    const at = new Date();
    const firstUser = payload.messages.find((m) => m.role === 'user');
    const lastMessage = payload.messages.at(-1);
    const done = !payload.reply && lastMessage !== undefined;
    const result = await context.commit(
      {
        at: at.toISOString(),
        messages: payload.messages.map((m) => ({ ...m, turn_id: turnId })),
        patch: { last_message_at: at.toISOString(), expires_at: expiresAt(at.getTime()) },
        ...(op.key !== undefined && op.fingerprint !== undefined
          ? {
              idempotency: {
                key: op.key,
                fingerprint: op.fingerprint,
                turn_id: turnId,
                user_message_id: firstUser?.id ?? null,
                expires_at: new Date(now + IDEMPOTENCY_RETENTION_MS).toISOString(),
              },
            }
          : {}),
        ...(done && op.key !== undefined
          ? {
              idempotencyResponse: {
                key: op.key,
                status_code: 201,
                response: { agent_message: { ...lastMessage, created_at: at.toISOString() } },
              },
            }
          : {}),
      },
      {
        type: 'ACTIVITY',
        expiresAt: at.getTime() + agent.session_ttl * 1000,
        byUser: firstUser !== undefined,
      },
    );
    session.messages_count = result.messages_count;
    userMessages = result.messages;
    const last = result.messages.at(-1);
    if (done && last) {
      deps.metrics.turns.inc({ outcome: 'stored' });
      context.observer?.started(turnId, last, null);
      return { turn_id: turnId, agent_message: publicMessage(last), usage: null, replayed: false };
    }
  }
  const first = userMessages[0];
  if (first) context.observer?.started(turnId, first, payload.replyId);

  let reply: Awaited<ReturnType<typeof callModel>>;
  const modelStarted = performance.now();
  try {
    const history = await store.recentMessages(session.id, agent.history_limit);
    const user = session.user ? await store.getUser(session.tenant_id, session.user.id) : null;
    reply = await callModel(
      provider,
      {
        model: agent.model,
        system: systemPrompt(agent.instructions, session.context, user),
        messages: await toModelMessages(store, session.tenant_id, history),
        onDelta: (text) => context.observer?.delta(text),
      },
      { totalMs: agent.timeouts.total_ms, stallMs: agent.timeouts.stall_ms, signal: context.signal },
    );
    deps.metrics.providerDuration.observe(
      { provider: provider.name, outcome: 'ok' },
      (performance.now() - modelStarted) / 1000,
    );
  } catch (err) {
    const outcome = err instanceof AppError ? err.code : 'error';
    deps.metrics.providerDuration.observe(
      { provider: provider.name, outcome },
      (performance.now() - modelStarted) / 1000,
    );
    deps.metrics.turns.inc({ outcome });
    throw err;
  }

  const at = new Date();
  const agentMessage: PublicMessage = {
    id: payload.replyId,
    role: 'assistant',
    content: [{ type: 'text', text: reply.text }],
    created_at: at.toISOString(),
    metadata: null,
  };
  const result = await context.commit(
    {
      at: agentMessage.created_at,
      messages: [
        {
          id: agentMessage.id,
          role: 'assistant',
          content: agentMessage.content,
          metadata: null,
          turn_id: turnId,
        },
      ],
      patch: { last_message_at: agentMessage.created_at, expires_at: expiresAt(at.getTime()) },
      ...(op.key !== undefined
        ? {
            idempotencyResponse: { key: op.key, status_code: 201, response: { agent_message: agentMessage } },
          }
        : {}),
    },
    { type: 'ACTIVITY', expiresAt: at.getTime() + agent.session_ttl * 1000, byUser: false },
  );
  session.messages_count = result.messages_count;
  deps.metrics.turns.inc({ outcome: 'replied' });
  deps.metrics.turnDuration.observe((performance.now() - started) / 1000);
  return { turn_id: turnId, agent_message: agentMessage, usage: reply.usage, replayed: false };
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

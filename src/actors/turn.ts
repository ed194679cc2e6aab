// A turn: the user's messages are stored (with the Idempotency-Key's record), the model answers, its reply is
// stored (with the answer to replay). Two commits, so that a failed model call or a crash keeps what the user
// sent and a retry under the key produces only the reply. An authored assistant message is itself the answer.
import { callModel } from '../agents/call-model.ts';
import type { AgentConfig, Catalogue } from '../agents/catalogue.ts';
import { toModelMessages } from '../agents/model-messages.ts';
import { systemPrompt } from '../agents/prompt.ts';
import type { ModelReply, Provider, Usage } from '../agents/provider.ts';
import { AppError } from '../errors.ts';
import type { Operation } from '../machines/session.ts';
import type { ContentBlock, JsonObject, MessageRecord, Store } from '../store/store.ts';
import type { ActorMetrics } from './actor-metrics.ts';
import type { OperationContext, SessionChange, SessionEntry } from './session-host.ts';

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

export interface OperationDeps {
  store: Store;
  catalogue: Catalogue;
  providers: ReadonlyMap<string, Provider>;
  metrics: ActorMetrics;
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

export function agentOf(deps: OperationDeps, agentId: string) {
  const agent = deps.catalogue.get(agentId);
  const provider = deps.providers.get(agentId);
  if (!agent || !provider)
    throw new AppError('agent_not_found', undefined, { context: { agent_id: agentId } });
  return { agent, provider };
}

/** Runs a send operation (send-message and run) and returns the agent's reply. */
export async function runTurn(
  deps: OperationDeps,
  context: OperationContext,
  op: Operation,
): Promise<TurnResult> {
  const { store, metrics } = deps;
  const { session } = context.entry;
  const payload = op.payload as SendPayload;
  const { agent, provider } = agentOf(deps, session.agent_id);
  const started = performance.now();
  const ttlMs = agent.session_ttl * 1000;
  const lifetime = (at: string) => new Date(Date.parse(at) + ttlMs).toISOString();
  let turnId = op.id;
  /** The turn's messages once stored; null while they are not. */
  let stored: MessageRecord[] | null = null;

  const earlier = await earlierAttempt(store, session.id, op.key, op.fingerprint);
  if (earlier && 'replayed' in earlier) return earlier;
  if (earlier) {
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
    const result = await context.commit(
      {
        at,
        messages: payload.messages.map((m) => ({ ...m, turn_id: turnId })),
        patch: { last_message_at: at, expires_at: lifetime(at) },
        ...(op.key !== undefined && op.fingerprint !== undefined
          ? {
              idempotency: {
                key: op.key,
                fingerprint: op.fingerprint,
                turn_id: turnId,
                user_message_id: payload.messages.find((m) => m.role === 'user')?.id ?? null,
                expires_at: new Date(Date.now() + IDEMPOTENCY_RETENTION_MS).toISOString(),
              },
            }
          : {}),
        ...(authored ? response(op, { ...authored, created_at: at }) : {}),
      },
      activity(
        at,
        ttlMs,
        payload.messages.some((m) => m.role === 'user'),
      ),
    );
    session.messages_count = result.messages_count;
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
  const result = await context.commit(
    {
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
      patch: { last_message_at: at, expires_at: lifetime(at) },
      ...response(op, agentMessage),
    },
    activity(at, ttlMs, false),
  );
  session.messages_count = result.messages_count;
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
    const history = await recentHistory(store, context.entry, agent.history_limit);
    const user = session.user ? await store.getUser(session.tenant_id, session.user.id) : null;
    const reply = await callModel(
      provider,
      {
        model: agent.model,
        system: systemPrompt(agent.instructions, session.context, user),
        messages: await toModelMessages(store, session.tenant_id, history),
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

/** The last `limit` messages, from the actor's cache (kept to `limit`) or, on its first turn, the store. */
async function recentHistory(store: Store, entry: SessionEntry, limit: number): Promise<MessageRecord[]> {
  entry.history ??= await store.recentMessages(entry.session.id, limit);
  if (entry.history.length > limit) entry.history.splice(0, entry.history.length - limit);
  return entry.history;
}

/** The stored answer of a finished turn, for replays under its Idempotency-Key. */
function response(op: Operation, agentMessage: PublicMessage): Pick<SessionChange, 'idempotencyResponse'> {
  return op.key === undefined
    ? {}
    : { idempotencyResponse: { key: op.key, status_code: 201, response: { agent_message: agentMessage } } };
}

const activity = (at: string, ttlMs: number, byUser: boolean) =>
  ({ type: 'ACTIVITY', expiresAt: Date.parse(at) + ttlMs, byUser }) as const;

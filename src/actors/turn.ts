// A turn (the send operation): the user's messages are stored (with the Idempotency-Key's record), the model
// answers, its reply is stored (with the answer to replay). Two commits, so that a failed model call or a
// crash keeps what the user sent and a retry under the key produces only the reply; a model that calls
// tools goes through steps in between, each committed (tool-steps.ts), each calling the model as
// turn-model.ts says, and may pause on calls that wait for approvals (turn-continue.ts goes on with it). An
// authored assistant message is itself the answer.
import type { AgentConfig } from '../agents/catalogue.ts';
import { estimateCorrection, fitsAlone } from '../agents/context-window.ts';
import type { Usage } from '../agents/provider.ts';
import { AppError, ValidationError } from '../errors.ts';
import type { TurnExtras } from '../machines/session.ts';
import type { ContentBlock, JsonObject, MessageAuthor, MessageRecord } from '../store/store.ts';
import { MAX_AGENT_TOOLS } from '../tools/agent-tools.ts';
import { checkBudget } from './budgets.ts';
import {
  currentLookup,
  type EarlierAttempt,
  humansKeyAnswer,
  type KeyLookup,
  keyAnswer,
  keyRecord,
} from './idempotency.ts';
import { agentOf, type OperationContext, type OperationDeps, type OperationOf } from './operation-context.ts';
import { newMessageView, type PublicMessage, publicMessage } from './public-message.ts';
import { activity } from './session-changes.ts';
import { turnStarted } from './session-events.ts';
import type { Approval } from './step-approvals.ts';
import { runSteps, type StepsOutcome } from './tool-steps.ts';
import { commitReply, countTurn, reportFailure, turnPrompt } from './turn-end.ts';
import { firstTokenTimed, modelCaller } from './turn-model.ts';

export interface SendPayload {
  messages: {
    id: string;
    role: 'user' | 'assistant';
    content: ContentBlock[];
    metadata: JsonObject | null;
    /** The operator who wrote an assistant message. */
    author?: MessageAuthor | null;
  }[];
  /** False for an integrator-authored assistant message: it is stored and is itself the reply. */
  reply: boolean;
  replyId: string;
  /** Where the last message's content is in the request, for a 422 about it (a send's `body.content`). */
  contentAt?: (string | number)[];
  /** What the request adds to this turn: functions the client runs, instructions after the agent's. */
  extras?: TurnExtras;
}

export interface TurnResult {
  turn_id: string;
  /** The agent's reply; null while the turn waits for approvals. */
  agent_message: PublicMessage | null;
  /** The calls the paused turn waits for (docs/internals/decisions.md#approvals); null once it replied. */
  approvals: Approval[] | null;
  /** What the model call cost; null when no model was called now (a replay, an authored reply). */
  usage: Usage | null;
  /** True when the answer is the stored one of an earlier attempt with the same Idempotency-Key. */
  replayed: boolean;
  /** Set when people handle the session: the message was stored and no model was called. */
  handled_by?: 'humans';
  /** The stored message, when people handle the session (what a stream tells as message.created). */
  user_message?: PublicMessage;
}

/** The answer of an earlier attempt that finished, replayed. */
export const replayOf = (attempt: Extract<EarlierAttempt, { state: 'finished' }>): TurnResult =>
  attempt.agent_message === null
    ? {
        turn_id: attempt.turn_id,
        agent_message: null,
        approvals: null,
        usage: null,
        replayed: true,
        handled_by: 'humans',
        user_message: attempt.user_message,
      }
    : replayOfReply(attempt);

const replayOfReply = (attempt: { turn_id: string; agent_message: PublicMessage }): TurnResult => ({
  turn_id: attempt.turn_id,
  // Answers stored before messages had these fields replay them as null, as the message now reads.
  agent_message: {
    ...attempt.agent_message,
    stop_reason: attempt.agent_message.stop_reason ?? null,
    usage: attempt.agent_message.usage ?? null,
    tool_calls: attempt.agent_message.tool_calls ?? null,
    author: attempt.agent_message.author ?? null,
  },
  approvals: null,
  usage: null,
  replayed: true,
});

/** Runs a send (send-message and run) and returns the agent's reply. */
export async function runTurn(
  deps: OperationDeps,
  context: OperationContext,
  op: OperationOf<SendPayload>,
): Promise<TurnResult> {
  const { store } = deps;
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
  if (payload.extras?.functions) refuseClashes(deps, agent, payload.extras.functions);
  const system = payload.reply ? await turnPrompt(deps, context, agent, payload.extras) : '';
  if (earlier?.state === 'started') {
    // The first attempt stored its messages and then failed or died: produce the missing reply only.
    turnId = earlier.turn_id;
    stored = await store.turnMessages(session.id, turnId);
  }
  context.runsTurn(turnId);

  if (stored === null) {
    const adding = payload.messages.length + (payload.reply ? 1 : 0);
    const limit = agent.limits.messages_per_session;
    if (session.messages_count + adding > limit) {
      throw new AppError('session_message_limit_reached', undefined, {
        context: { limit, messages_count: session.messages_count },
      });
    }
    if (payload.reply) {
      await refuseUnfitting(agent, system, payload);
      // Refused before anything is stored: a spent budget changes nothing (the loop checks again per call).
      await checkBudget(deps, session, agent);
    }
    const at = new Date().toISOString();
    const authored = payload.reply ? undefined : payload.messages.at(-1);
    const userMessageId = payload.messages.find((m) => m.role === 'user')?.id ?? null;
    if (payload.reply && context.entry.actor.getSnapshot().context.handoff)
      return storeForHumans(deps, context, { agent, turnId, at, idempotency, payload });
    const messages = payload.messages.map((m) => ({ ...m, turn_id: turnId }));
    const first = messages[0];
    const result = await context.commit({
      at,
      messages,
      ...(payload.reply && first ? { events: [turnStarted(session.id, turnId, first.id)] } : {}),
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
              author: authored.author ?? null,
            }),
          }
        : {}),
    });
    stored = result.messages;
    const last = stored.at(-1);
    if (authored && last) {
      countTurn(deps, agent, 'stored');
      context.observer?.started(turnId, last, null);
      return {
        turn_id: turnId,
        agent_message: publicMessage(last),
        approvals: null,
        usage: null,
        replayed: false,
      };
    }
  }
  // A retried turn goes on from the steps its earlier attempt committed: an observer that reads them from the
  // store has them told so, another is told them again.
  const retried = earlier?.state === 'started';
  const continued = retried ? context.observer?.continued : undefined;
  const first = stored[0];
  if (continued) await continued.call(context.observer, turnId, payload.replyId);
  else if (first) context.observer?.started(turnId, first, payload.replyId);

  const key = idempotency?.key ?? null;
  let outcome: StepsOutcome;
  try {
    const ask = firstTokenTimed(
      deps,
      agent,
      started,
      await modelCaller(deps, context, agent, provider, system),
    );
    const resumed = retried ? await store.turnToolCalls(session.id, turnId) : [];
    outcome = await runSteps(deps, context, {
      agent,
      turnId,
      ask,
      resumed,
      pause: { replyId: payload.replyId, key, extras: payload.extras },
      retell: !continued,
    });
  } catch (err) {
    countTurn(deps, agent, err instanceof AppError ? err.code : 'error');
    await reportFailure(deps, context, { turnId, endsPaused: false }, err);
    throw err;
  }
  if ('paused' in outcome) {
    countTurn(deps, agent, 'paused');
    const { approvals } = outcome.paused;
    return { turn_id: turnId, agent_message: null, approvals, usage: null, replayed: false };
  }
  const { reply } = outcome;
  const agentMessage = await commitReply(deps, context, {
    agent,
    turnId,
    replyId: payload.replyId,
    key,
    reply,
    endsPaused: false,
    started,
  });
  return {
    turn_id: turnId,
    agent_message: agentMessage,
    approvals: null,
    usage: reply.usage,
    replayed: false,
  };
}

/**
 * A send while people handle the session (docs/guides/humans.md): its messages are stored, with the answer a
 * keyed retry replays, and no model is called; the operators answer.
 */
async function storeForHumans(
  deps: OperationDeps,
  context: OperationContext,
  o: {
    agent: AgentConfig;
    turnId: string;
    at: string;
    idempotency: KeyLookup | undefined;
    payload: SendPayload;
  },
): Promise<TurnResult> {
  const { agent, turnId, at, idempotency, payload } = o;
  const userMessage = payload.messages.at(-1);
  if (!userMessage) throw new Error('A send stores at least one message');
  const view = newMessageView({ ...userMessage, turn_id: turnId }, at);
  await context.commit({
    at,
    messages: payload.messages.map((m) => ({ ...m, turn_id: turnId })),
    ...activity(at, agent.session_ttl * 1000, true),
    last: true,
    ...(idempotency
      ? {
          idempotency: keyRecord(idempotency, turnId, userMessage.id),
          idempotencyResponse: humansKeyAnswer(idempotency, view),
        }
      : {}),
  });
  countTurn(deps, agent, 'humans');
  return {
    turn_id: turnId,
    agent_message: null,
    approvals: null,
    usage: null,
    replayed: false,
    handled_by: 'humans',
    user_message: view,
  };
}

/**
 * Functions the client declares that the model could not be offered with the agent's tools are refused (422)
 * before anything is stored: one under the name of an agent's tool (a call to it would be ambiguous: run by
 * Parley, or by the client?), a name with `__` (reserved for MCP tools, whose servers may list more tools
 * later), a name given twice, or more tools in all than a provider takes in one request.
 */
function refuseClashes(
  deps: OperationDeps,
  agent: AgentConfig,
  functions: NonNullable<TurnExtras['functions']>,
): void {
  const own = new Set((deps.tools.get(agent.id)?.specs() ?? []).map((spec) => spec.name));
  if (own.size + functions.length > MAX_AGENT_TOOLS) {
    throw ValidationError.at(
      ['body', 'tools'],
      `The agent has ${own.size} tools and a request may add ${MAX_AGENT_TOOLS - own.size} functions at most`,
      'value_error',
    );
  }
  const seen = new Set<string>();
  functions.forEach((f, i) => {
    const why = own.has(f.name)
      ? `The agent has a tool named ${f.name}; name the function otherwise`
      : f.name.includes('__')
        ? 'A function name must not contain __, which is reserved for MCP tools (<server>__<tool>)'
        : seen.has(f.name)
          ? `The function ${f.name} is declared twice`
          : null;
    if (why) throw ValidationError.at(['body', 'tools', i, 'name'], why, 'value_error');
    seen.add(f.name);
  });
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

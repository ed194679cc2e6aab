// ParleyClient: the server-side family (`/v1/agents/…`, X-API-Key), one method per route: sessions, their
// messages and turns (decisions and cancel included) and conversations here, users, files and webhooks in
// key-resources.ts. For your own backend only: the API key must never reach a browser (a front-end uses
// ParleyConversation with a token).
import { ConversationEvents, type FollowOptions } from './conversation-events.ts';
import { KeyResources, type Signal } from './key-resources.ts';
import type { ResumeOptions, SendOptions, SendRoute } from './send.ts';
import { resumeEvents, sendForReply, sendStreamed } from './send.ts';
import { type Fetch, seg, Transport } from './transport.ts';
import {
  type CallIds,
  cancelTurn,
  type DecideOptions,
  decideForResult,
  decideStreamed,
  decisionsFor,
} from './turn-actions.ts';
import type { TurnStream } from './turn-stream.ts';
import type {
  AgentReply,
  CancelResult,
  ChatRequest,
  ConversationStart,
  Decision,
  Message,
  MessagePage,
  PageQuery,
  RunRequest,
  RunResult,
  SendInput,
  Session,
  SessionCreate,
  SessionEvent,
  SessionListQuery,
  SessionPage,
  SessionToken,
  SessionTurnEvent,
  SessionTurnResult,
  TerminateResult,
} from './types.ts';
import { UsageApi } from './usage.ts';

export interface ParleyClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Default: the global fetch. */
  fetch?: Fetch | undefined;
  /** Retries of one request on 429 or 503 (after Retry-After, at most 30 s) or a network failure. Default 2 (also for NaN or Infinity). */
  maxRetries?: number | undefined;
  /** Consecutive failed connections a stream tolerates while resuming. Default 5 (also for NaN or Infinity). */
  maxReconnects?: number | undefined;
}

export class ParleyClient extends KeyResources {
  readonly #maxReconnects: number | undefined;
  /** Usage and budgets (usage.ts). */
  readonly usage: UsageApi;

  constructor(options: ParleyClientOptions) {
    const headers = { 'x-api-key': options.apiKey };
    super(
      new Transport({
        baseUrl: options.baseUrl,
        fetch: options.fetch,
        maxRetries: options.maxRetries,
        credentials: { headers: () => headers },
      }),
    );
    this.#maxReconnects = options.maxReconnects;
    this.usage = new UsageApi(this.t);
  }

  // Sessions

  /** POST /v1/agents/{agent_id}/sessions */
  createSession(agentId: string, body: SessionCreate = {}, o: Signal = {}): Promise<Session> {
    return this.t.json({
      method: 'POST',
      path: `/v1/agents/${seg(agentId)}/sessions`,
      json: body,
      idempotent: false,
      ...o,
    });
  }

  /** GET /v1/agents/sessions (newest first) */
  listSessions(query: SessionListQuery = {}, o: Signal = {}): Promise<SessionPage> {
    return this.t.json({ method: 'GET', path: '/v1/agents/sessions', query, idempotent: true, ...o });
  }

  /** GET /v1/agents/sessions/{session_id} */
  getSession(sessionId: string, o: Signal = {}): Promise<Session> {
    return this.t.json({
      method: 'GET',
      path: `/v1/agents/sessions/${seg(sessionId)}`,
      idempotent: true,
      ...o,
    });
  }

  /** POST /v1/agents/sessions/{session_id}/terminate (idempotent) */
  terminateSession(sessionId: string, reason?: string | null, o: Signal = {}): Promise<TerminateResult> {
    return this.t.json({
      method: 'POST',
      path: `/v1/agents/sessions/${seg(sessionId)}/terminate`,
      json: reason === undefined ? {} : { reason },
      idempotent: true,
      ...o,
    });
  }

  /**
   * POST /v1/agents/sessions/{session_id}/handoff: people take the session over; its user's sends are then
   * stored and no model answers (idempotent: a repeat keeps the first handoff).
   */
  handoff(sessionId: string, reason?: string | null, o: Signal = {}): Promise<Session> {
    return this.t.json({
      method: 'POST',
      path: `/v1/agents/sessions/${seg(sessionId)}/handoff`,
      json: reason === undefined ? {} : { reason },
      idempotent: true,
      ...o,
    });
  }

  /** POST /v1/agents/sessions/{session_id}/handback: the agent answers again, seeing what people wrote. */
  handback(sessionId: string, o: Signal = {}): Promise<Session> {
    return this.t.json({
      method: 'POST',
      path: `/v1/agents/sessions/${seg(sessionId)}/handback`,
      json: {},
      idempotent: true,
      ...o,
    });
  }

  /** POST /v1/agents/{agent_id}/run: a new session with 1 to 10 messages, and the agent's reply. */
  run(agentId: string, body: RunRequest, o: Signal = {}): Promise<RunResult> {
    return this.t.json({
      method: 'POST',
      path: `/v1/agents/${seg(agentId)}/run`,
      json: body,
      idempotent: false,
      ...o,
    });
  }

  // Messages

  /**
   * POST /v1/agents/sessions/{session_id}/messages, with an Idempotency-Key (given or new): the reply
   * (`status: 'replied'`), or the turn waiting for decisions (`status: 'awaiting_approval'`, the 202).
   */
  sendMessage(sessionId: string, input: SendInput, options: SendOptions = {}): Promise<SessionTurnResult> {
    return sendForReply<AgentReply>(this.#route(sessionId), input, options);
  }

  /** POST /v1/agents/sessions/{session_id}/messages/stream: the turn's events, resumed across breaks. */
  streamMessage(
    sessionId: string,
    input: SendInput,
    options: SendOptions = {},
  ): TurnStream<SessionTurnEvent> {
    return sendStreamed(this.#route(sessionId), input, options);
  }

  /** GET /v1/agents/sessions/{session_id}/turns/{turn_id}/events: the turn's events after `after`. */
  resumeTurn(sessionId: string, turnId: string, options: ResumeOptions = {}): TurnStream<SessionTurnEvent> {
    return resumeEvents(this.#route(sessionId), turnId, options);
  }

  /**
   * GET /v1/agents/sessions/{session_id}/events: everything that happens in the session, whoever caused it,
   * from after `options.after`, followed across dropped connections and ownership moves; see ConversationEvents.
   */
  sessionEvents(sessionId: string, options: FollowOptions = {}): ConversationEvents<SessionEvent> {
    return new ConversationEvents<SessionEvent>(this.t, `/v1/agents/sessions/${seg(sessionId)}/events`, {
      ...options,
      maxReconnects: this.#maxReconnects,
    });
  }

  // Turns: decisions on the calls a paused turn waits for, and cancel

  /**
   * POST /v1/agents/sessions/{session_id}/turns/{turn_id}/approvals: decides calls of either approver (`user`
   * or `operator`), waits for the turn to go on, and answers like sendMessage (the reply, or the turn waiting
   * again). Calls may be decided over several requests; the turn goes on once every waiting call is.
   */
  decide(
    sessionId: string,
    turnId: string,
    decisions: readonly Decision[],
    o: DecideOptions = {},
  ): Promise<SessionTurnResult> {
    return decideForResult<AgentReply>(this.#route(sessionId), turnId, decisions, o);
  }

  /** decide() approving the given calls. */
  approve(
    sessionId: string,
    turnId: string,
    callIds: CallIds,
    o: DecideOptions = {},
  ): Promise<SessionTurnResult> {
    return this.decide(sessionId, turnId, decisionsFor(callIds, true), o);
  }

  /** decide() denying the given calls; the model is told `{ error: "denied", by: "operator", reason }`. */
  deny(
    sessionId: string,
    turnId: string,
    callIds: CallIds,
    reason?: string | null,
    o: DecideOptions = {},
  ): Promise<SessionTurnResult> {
    return this.decide(sessionId, turnId, decisionsFor(callIds, false, reason), o);
  }

  /** The same decision with Accept: text/event-stream: the turn's events from the pause it decided on. */
  streamDecision(
    sessionId: string,
    turnId: string,
    decisions: readonly Decision[],
    o: DecideOptions = {},
  ): TurnStream<SessionTurnEvent> {
    return decideStreamed(this.#route(sessionId), turnId, decisions, o);
  }

  /**
   * POST /v1/agents/sessions/{session_id}/turns/{turn_id}/cancel: stops a running or paused turn; the text
   * written so far is its reply (`stop_reason: "cancelled"`). A finished turn is answered as it is.
   */
  cancelTurn(sessionId: string, turnId: string, o: Signal = {}): Promise<CancelResult> {
    return cancelTurn(this.#route(sessionId), turnId, o);
  }

  /**
   * POST /v1/agents/sessions/{session_id}/chat: useChat's body in, the AI SDK UI message stream out, as the
   * raw Response (to pipe to your own front-end). The Idempotency-Key defaults to the newest user message's id.
   */
  chat(sessionId: string, body: ChatRequest, options: SendOptions = {}): Promise<Response> {
    return this.t.request({
      method: 'POST',
      path: `/v1/agents/sessions/${seg(sessionId)}/chat`,
      json: body,
      headers: options.idempotencyKey === undefined ? {} : { 'idempotency-key': options.idempotencyKey },
      accept: 'text/event-stream',
      idempotent: true,
      signal: options.signal,
    });
  }

  /** GET /v1/agents/sessions/{session_id}/messages (oldest first) */
  listMessages(sessionId: string, query: PageQuery = {}, o: Signal = {}): Promise<MessagePage> {
    return this.t.json({
      method: 'GET',
      path: `/v1/agents/sessions/${seg(sessionId)}/messages`,
      query,
      idempotent: true,
      ...o,
    });
  }

  /** GET /v1/agents/sessions/{session_id}/messages/{message_id} */
  getMessage(sessionId: string, messageId: string, o: Signal = {}): Promise<Message> {
    return this.t.json({
      method: 'GET',
      path: `/v1/agents/sessions/${seg(sessionId)}/messages/${seg(messageId)}`,
      idempotent: true,
      ...o,
    });
  }

  // Conversations (the public family's tokens)

  /** POST /v1/agents/{agent_id}/conversations: the conversation and its first session token. */
  createConversation(agentId: string, body: SessionCreate = {}, o: Signal = {}): Promise<ConversationStart> {
    return this.t.json({
      method: 'POST',
      path: `/v1/agents/${seg(agentId)}/conversations`,
      json: body,
      idempotent: false,
      ...o,
    });
  }

  /** POST /v1/agents/conversations/{conversation_id}/token: a fresh session token. */
  refreshToken(conversationId: string, o: Signal = {}): Promise<SessionToken> {
    return this.t.json({
      method: 'POST',
      path: `/v1/agents/conversations/${seg(conversationId)}/token`,
      idempotent: true,
      ...o,
    });
  }

  #route(sessionId: string): SendRoute {
    return {
      transport: this.t,
      session: `/v1/agents/sessions/${seg(sessionId)}`,
      messages: `/v1/agents/sessions/${seg(sessionId)}/messages`,
      events: (turnId, after, signal) => this.#events(sessionId, turnId, after, signal),
      maxReconnects: this.#maxReconnects,
    };
  }

  #events(
    sessionId: string,
    turnId: string,
    after: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Response> {
    return this.t.request({
      method: 'GET',
      path: `/v1/agents/sessions/${seg(sessionId)}/turns/${seg(turnId)}/events`,
      headers: after === undefined ? {} : { 'last-event-id': after },
      accept: 'text/event-stream',
      idempotent: true,
      noNetworkRetry: true,
      signal,
    });
  }
}

// ParleyConversation: the public family (`/v1/public/agents/conversations/{id}/…`) as a front-end uses it, with
// the conversation's session token (Authorization: Bearer), refreshed through the caller's callback when the
// server says it expired. Never holds an API key.
import { ConversationEvents, type FollowOptions } from './conversation-events.ts';
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
  Conversation,
  ConversationCancelResult,
  ConversationFile,
  ConversationFilePage,
  ConversationMessagePage,
  ConversationReply,
  ConversationTurnResult,
  Decision,
  Feedback,
  FeedbackCreate,
  InactivityResult,
  InactivityStep,
  PageQuery,
  SendInput,
  TerminateResult,
} from './types.ts';

export interface ParleyConversationOptions {
  /** Where Parley answers, e.g. `https://parley.example.com` (no trailing path). */
  baseUrl: string;
  conversationId: string;
  /** The session token your server minted (POST /v1/agents/{agent_id}/conversations or …/token). */
  token: string;
  /**
   * Asked for a fresh token when the server answers 401 `session_token_expired` (once per request; calls made
   * at the same time share one refresh). Typically calls your server, which calls
   * POST /v1/agents/conversations/{id}/token with its API key. Without it, that 401 is thrown.
   */
  refreshToken?: (() => Promise<string>) | undefined;
  /** Default: the global fetch. */
  fetch?: Fetch | undefined;
  /** Retries of one request on 429 or 503 (after Retry-After, at most 30 s) or a network failure. Default 2 (also for NaN or Infinity). */
  maxRetries?: number | undefined;
  /** Consecutive failed connections a stream tolerates while resuming. Default 5 (also for NaN or Infinity). */
  maxReconnects?: number | undefined;
}

export class ParleyConversation {
  readonly conversationId: string;
  readonly #transport: Transport;
  readonly #path: string;
  readonly #route: SendRoute;
  #token: string;
  #refreshing: Promise<void> | null = null;

  constructor(options: ParleyConversationOptions) {
    this.conversationId = options.conversationId;
    this.#token = options.token;
    this.#path = `/v1/public/agents/conversations/${seg(options.conversationId)}`;
    const refreshToken = options.refreshToken;
    this.#transport = new Transport({
      baseUrl: options.baseUrl,
      fetch: options.fetch,
      maxRetries: options.maxRetries,
      credentials: {
        headers: () => ({ authorization: `Bearer ${this.#token}` }),
        ...(refreshToken ? { refresh: () => this.#refresh(refreshToken) } : {}),
      },
    });
    this.#route = {
      transport: this.#transport,
      session: this.#path,
      messages: `${this.#path}/messages`,
      events: (turnId, after, signal) => this.#events(turnId, after, signal),
      maxReconnects: options.maxReconnects,
    };
  }

  /** The token in use: the one given, or the latest the refresh callback returned. */
  get token(): string {
    return this.#token;
  }

  /** The conversation record. */
  get(options: { signal?: AbortSignal } = {}): Promise<Conversation> {
    return this.#transport.json({
      method: 'GET',
      path: this.#path,
      idempotent: true,
      signal: options.signal,
    });
  }

  /**
   * Sends a message (a string is `{ content }`) and resolves the agent's reply (the 201, `status: 'replied'`), or
   * the turn waiting for the user's decisions (the 202, `status: 'awaiting_approval'`, with `turn.approvals`).
   */
  send(input: SendInput, options: SendOptions = {}): Promise<ConversationTurnResult> {
    return sendForReply<ConversationReply>(this.#route, input, options);
  }

  /** Sends a message and streams the turn's events; see TurnStream for resumption. */
  stream(input: SendInput, options: SendOptions = {}): TurnStream {
    return sendStreamed(this.#route, input, options);
  }

  /**
   * The events of a turn after `after` (a full event id), live while it runs, replayed once it is finished;
   * ends with turn.completed or turn.failed (a turn_interrupted failure included: send it again to finish it).
   */
  resume(turnId: string, options: ResumeOptions = {}): TurnStream {
    return resumeEvents(this.#route, turnId, options);
  }

  /**
   * GET …/events: everything that happens in the conversation (its messages, an operator's included, turns,
   * handoffs) from after `options.after`, followed across dropped connections; see ConversationEvents.
   */
  events(options: FollowOptions = {}): ConversationEvents {
    return new ConversationEvents(this.#transport, `${this.#path}/events`, {
      ...options,
      maxReconnects: this.#route.maxReconnects,
    });
  }

  /**
   * Decides calls the turn waits for (the user's: `approver: "user"`), waits for the turn to go on, and answers
   * like send(): the reply, or the turn waiting again. A call of another approver is refused (403).
   */
  decide(
    turnId: string,
    decisions: readonly Decision[],
    options: DecideOptions = {},
  ): Promise<ConversationTurnResult> {
    return decideForResult<ConversationReply>(this.#route, turnId, decisions, options);
  }

  /** decide() approving the given calls. */
  approve(turnId: string, callIds: CallIds, options: DecideOptions = {}): Promise<ConversationTurnResult> {
    return this.decide(turnId, decisionsFor(callIds, true), options);
  }

  /** decide() denying the given calls; the model is told `{ error: "denied", by: "user", reason }`. */
  deny(
    turnId: string,
    callIds: CallIds,
    reason?: string | null,
    options: DecideOptions = {},
  ): Promise<ConversationTurnResult> {
    return this.decide(turnId, decisionsFor(callIds, false, reason), options);
  }

  /** The same decision, answered as the turn's events from the pause it decided on (see TurnStream). */
  streamDecision(turnId: string, decisions: readonly Decision[], options: DecideOptions = {}): TurnStream {
    return decideStreamed(this.#route, turnId, decisions, options);
  }

  /**
   * Stops a running or paused turn: the text written so far is its reply (`stop_reason: "cancelled"`), and a
   * stream of it ends with turn.cancelled. A finished turn is answered as it is.
   */
  cancel(turnId: string, options: DecideOptions = {}): Promise<ConversationCancelResult> {
    return cancelTurn(this.#route, turnId, options);
  }

  /**
   * Asks for a human, where the conversation's agent allows it (else 403 `handoff_not_allowed`): people then
   * answer, and sends are stored without a model's reply (`status: 'handled_by_humans'`). Idempotent.
   */
  requestHuman(reason?: string | null, options: { signal?: AbortSignal } = {}): Promise<Conversation> {
    return this.#transport.json({
      method: 'POST',
      path: `${this.#path}/handoff`,
      json: reason === undefined ? {} : { reason },
      idempotent: true,
      signal: options.signal,
    });
  }

  /** A page of the conversation's messages, oldest first. */
  messages(query: PageQuery = {}, options: { signal?: AbortSignal } = {}): Promise<ConversationMessagePage> {
    return this.#transport.json({
      method: 'GET',
      path: `${this.#path}/messages`,
      query,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Uploads a file (multipart `file`) for image and file blocks of this conversation. */
  upload(file: Blob, filename?: string, options: { signal?: AbortSignal } = {}): Promise<ConversationFile> {
    const form = new FormData();
    const name = filename ?? ('name' in file && typeof file.name === 'string' ? file.name : 'file');
    form.append('file', file, name);
    return this.#transport.json({
      method: 'POST',
      path: `${this.#path}/files`,
      form,
      idempotent: false,
      signal: options.signal,
    });
  }

  /** A page of the files uploaded in this conversation, newest first. */
  files(query: PageQuery = {}, options: { signal?: AbortSignal } = {}): Promise<ConversationFilePage> {
    return this.#transport.json({
      method: 'GET',
      path: `${this.#path}/files`,
      query,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Leaves NPS feedback (0–10, optional comment); a second call replaces the first. */
  feedback(body: FeedbackCreate, options: { signal?: AbortSignal } = {}): Promise<Feedback> {
    return this.#transport.json({
      method: 'POST',
      path: `${this.#path}/feedback`,
      json: body,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Stores the agent's inactivity warning or final message (the final one may close the conversation). */
  inactivity(kind: InactivityStep, options: { signal?: AbortSignal } = {}): Promise<InactivityResult> {
    return this.#transport.json({
      method: 'POST',
      path: `${this.#path}/inactivity`,
      json: { step: kind },
      idempotent: false,
      signal: options.signal,
    });
  }

  /** Closes the conversation; a second call answers with the first closing. */
  terminate(reason?: string | null, options: { signal?: AbortSignal } = {}): Promise<TerminateResult> {
    return this.#transport.json({
      method: 'POST',
      path: `${this.#path}/terminate`,
      json: reason === undefined ? {} : { reason },
      idempotent: true,
      signal: options.signal,
    });
  }

  #events(turnId: string, after: string | undefined, signal: AbortSignal | undefined): Promise<Response> {
    return this.#transport.request({
      method: 'GET',
      path: `${this.#path}/turns/${seg(turnId)}/events`,
      // `?after=` rather than Last-Event-ID: a header outside the CORS allow-list would fail the preflight.
      query: { after },
      accept: 'text/event-stream',
      idempotent: true,
      noNetworkRetry: true,
      signal,
    });
  }

  /** One refresh at a time: calls that meet an expired token together wait for the same new one. */
  #refresh(refreshToken: () => Promise<string>): Promise<void> {
    this.#refreshing ??= refreshToken()
      .then((token) => {
        this.#token = token;
      })
      .finally(() => {
        this.#refreshing = null;
      });
    return this.#refreshing;
  }
}

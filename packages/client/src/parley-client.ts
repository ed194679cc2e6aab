// ParleyClient: the server-side family (`/v1/agents/…`, X-API-Key), one method per route. For your own
// backend only: the API key must never reach a browser (a front-end uses ParleyConversation with a token).
import type { ResumeOptions, SendOptions, SendRoute } from './send.ts';
import { resumeEvents, sendForReply, sendStreamed } from './send.ts';
import { type Fetch, seg, Transport } from './transport.ts';
import type { TurnStream } from './turn-stream.ts';
import type {
  AgentReply,
  ChatRequest,
  ConversationStart,
  CreatedWebhook,
  FileListQuery,
  FilePage,
  FileRecord,
  Message,
  MessagePage,
  PageQuery,
  RunRequest,
  RunResult,
  SendInput,
  Session,
  SessionCreate,
  SessionListQuery,
  SessionPage,
  SessionToken,
  SessionTurnEvent,
  TerminateResult,
  User,
  UserFields,
  UserListQuery,
  UserPage,
  Webhook,
  WebhookCreate,
  WebhookDeliveryPage,
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

type Signal = { signal?: AbortSignal | undefined };

export class ParleyClient {
  readonly #t: Transport;
  readonly #maxReconnects: number | undefined;
  /** Usage and budgets (usage.ts). */
  readonly usage: UsageApi;

  constructor(options: ParleyClientOptions) {
    const headers = { 'x-api-key': options.apiKey };
    this.#t = new Transport({
      baseUrl: options.baseUrl,
      fetch: options.fetch,
      maxRetries: options.maxRetries,
      credentials: { headers: () => headers },
    });
    this.#maxReconnects = options.maxReconnects;
    this.usage = new UsageApi(this.#t);
  }

  // Users

  /** POST /v1/agents/users */
  createUser(body: UserFields = {}, o: Signal = {}): Promise<User> {
    return this.#t.json({ method: 'POST', path: '/v1/agents/users', json: body, idempotent: false, ...o });
  }

  /** GET /v1/agents/users (newest first) */
  listUsers(query: UserListQuery = {}, o: Signal = {}): Promise<UserPage> {
    return this.#t.json({ method: 'GET', path: '/v1/agents/users', query, idempotent: true, ...o });
  }

  /** GET /v1/agents/users/{user_id} */
  getUser(userId: string, o: Signal = {}): Promise<User> {
    return this.#t.json({ method: 'GET', path: `/v1/agents/users/${seg(userId)}`, idempotent: true, ...o });
  }

  /** PATCH /v1/agents/users/{user_id}: each given field replaces the stored value. */
  updateUser(userId: string, body: UserFields, o: Signal = {}): Promise<User> {
    return this.#t.json({
      method: 'PATCH',
      path: `/v1/agents/users/${seg(userId)}`,
      json: body,
      idempotent: true,
      ...o,
    });
  }

  /** DELETE /v1/agents/users/{user_id} (soft: frees the reference) */
  async deleteUser(userId: string, o: Signal = {}): Promise<void> {
    await this.#noContent({ method: 'DELETE', path: `/v1/agents/users/${seg(userId)}`, ...o });
  }

  // Files

  /** POST /v1/agents/files: multipart `file`, with an optional `metadata` JSON object. */
  uploadFile(
    file: Blob,
    options: { filename?: string; metadata?: Record<string, unknown> } & Signal = {},
  ): Promise<FileRecord> {
    const form = new FormData();
    const name = options.filename ?? ('name' in file && typeof file.name === 'string' ? file.name : 'file');
    form.append('file', file, name);
    if (options.metadata !== undefined) form.append('metadata', JSON.stringify(options.metadata));
    return this.#t.json({
      method: 'POST',
      path: '/v1/agents/files',
      form,
      idempotent: false,
      signal: options.signal,
    });
  }

  /** GET /v1/agents/files (newest first) */
  listFiles(query: FileListQuery = {}, o: Signal = {}): Promise<FilePage> {
    return this.#t.json({ method: 'GET', path: '/v1/agents/files', query, idempotent: true, ...o });
  }

  /** GET /v1/agents/files/{file_id} */
  getFile(fileId: string, o: Signal = {}): Promise<FileRecord> {
    return this.#t.json({ method: 'GET', path: `/v1/agents/files/${seg(fileId)}`, idempotent: true, ...o });
  }

  /** GET /v1/agents/files/{file_id}/content: the bytes, typed with the file's MIME type. */
  async downloadFile(fileId: string, o: Signal = {}): Promise<Blob> {
    const response = await this.#t.request({
      method: 'GET',
      path: `/v1/agents/files/${seg(fileId)}/content`,
      accept: '*/*',
      idempotent: true,
      ...o,
    });
    return response.blob();
  }

  /** DELETE /v1/agents/files/{file_id} */
  async deleteFile(fileId: string, o: Signal = {}): Promise<void> {
    await this.#noContent({ method: 'DELETE', path: `/v1/agents/files/${seg(fileId)}`, ...o });
  }

  // Sessions

  /** POST /v1/agents/{agent_id}/sessions */
  createSession(agentId: string, body: SessionCreate = {}, o: Signal = {}): Promise<Session> {
    return this.#t.json({
      method: 'POST',
      path: `/v1/agents/${seg(agentId)}/sessions`,
      json: body,
      idempotent: false,
      ...o,
    });
  }

  /** GET /v1/agents/sessions (newest first) */
  listSessions(query: SessionListQuery = {}, o: Signal = {}): Promise<SessionPage> {
    return this.#t.json({ method: 'GET', path: '/v1/agents/sessions', query, idempotent: true, ...o });
  }

  /** GET /v1/agents/sessions/{session_id} */
  getSession(sessionId: string, o: Signal = {}): Promise<Session> {
    return this.#t.json({
      method: 'GET',
      path: `/v1/agents/sessions/${seg(sessionId)}`,
      idempotent: true,
      ...o,
    });
  }

  /** POST /v1/agents/sessions/{session_id}/terminate (idempotent) */
  terminateSession(sessionId: string, reason?: string | null, o: Signal = {}): Promise<TerminateResult> {
    return this.#t.json({
      method: 'POST',
      path: `/v1/agents/sessions/${seg(sessionId)}/terminate`,
      json: reason === undefined ? {} : { reason },
      idempotent: true,
      ...o,
    });
  }

  /** POST /v1/agents/{agent_id}/run: a new session with 1 to 10 messages, and the agent's reply. */
  run(agentId: string, body: RunRequest, o: Signal = {}): Promise<RunResult> {
    return this.#t.json({
      method: 'POST',
      path: `/v1/agents/${seg(agentId)}/run`,
      json: body,
      idempotent: false,
      ...o,
    });
  }

  // Messages

  /** POST /v1/agents/sessions/{session_id}/messages, with an Idempotency-Key (given or new). */
  sendMessage(sessionId: string, input: SendInput, options: SendOptions = {}): Promise<AgentReply> {
    return sendForReply(this.#route(sessionId), input, options);
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
   * POST /v1/agents/sessions/{session_id}/chat: useChat's body in, the AI SDK UI message stream out, as the
   * raw Response (to pipe to your own front-end). The Idempotency-Key defaults to the newest user message's id.
   */
  chat(sessionId: string, body: ChatRequest, options: SendOptions = {}): Promise<Response> {
    return this.#t.request({
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
    return this.#t.json({
      method: 'GET',
      path: `/v1/agents/sessions/${seg(sessionId)}/messages`,
      query,
      idempotent: true,
      ...o,
    });
  }

  /** GET /v1/agents/sessions/{session_id}/messages/{message_id} */
  getMessage(sessionId: string, messageId: string, o: Signal = {}): Promise<Message> {
    return this.#t.json({
      method: 'GET',
      path: `/v1/agents/sessions/${seg(sessionId)}/messages/${seg(messageId)}`,
      idempotent: true,
      ...o,
    });
  }

  // Conversations (the public family's tokens)

  /** POST /v1/agents/{agent_id}/conversations: the conversation and its first session token. */
  createConversation(agentId: string, body: SessionCreate = {}, o: Signal = {}): Promise<ConversationStart> {
    return this.#t.json({
      method: 'POST',
      path: `/v1/agents/${seg(agentId)}/conversations`,
      json: body,
      idempotent: false,
      ...o,
    });
  }

  /** POST /v1/agents/conversations/{conversation_id}/token: a fresh session token. */
  refreshToken(conversationId: string, o: Signal = {}): Promise<SessionToken> {
    return this.#t.json({
      method: 'POST',
      path: `/v1/agents/conversations/${seg(conversationId)}/token`,
      idempotent: true,
      ...o,
    });
  }

  // Webhooks (a key for every agent)

  /** POST /v1/agents/webhooks: the endpoint with its signing secret, shown only in this answer. */
  createWebhook(body: WebhookCreate, o: Signal = {}): Promise<CreatedWebhook> {
    return this.#t.json({ method: 'POST', path: '/v1/agents/webhooks', json: body, idempotent: false, ...o });
  }

  /** GET /v1/agents/webhooks (oldest first) */
  async listWebhooks(o: Signal = {}): Promise<Webhook[]> {
    const page: { items: Webhook[] } = await this.#t.json({
      method: 'GET',
      path: '/v1/agents/webhooks',
      idempotent: true,
      ...o,
    });
    return page.items;
  }

  /** GET /v1/agents/webhooks/{webhook_id} */
  getWebhook(webhookId: string, o: Signal = {}): Promise<Webhook> {
    return this.#t.json({
      method: 'GET',
      path: `/v1/agents/webhooks/${seg(webhookId)}`,
      idempotent: true,
      ...o,
    });
  }

  /** DELETE /v1/agents/webhooks/{webhook_id} (its deliveries go with it) */
  async deleteWebhook(webhookId: string, o: Signal = {}): Promise<void> {
    await this.#noContent({ method: 'DELETE', path: `/v1/agents/webhooks/${seg(webhookId)}`, ...o });
  }

  /** GET /v1/agents/webhooks/{webhook_id}/deliveries (newest first) */
  listWebhookDeliveries(
    webhookId: string,
    query: PageQuery = {},
    o: Signal = {},
  ): Promise<WebhookDeliveryPage> {
    return this.#t.json({
      method: 'GET',
      path: `/v1/agents/webhooks/${seg(webhookId)}/deliveries`,
      query,
      idempotent: true,
      ...o,
    });
  }

  #route(sessionId: string): SendRoute {
    return {
      transport: this.#t,
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
    return this.#t.request({
      method: 'GET',
      path: `/v1/agents/sessions/${seg(sessionId)}/turns/${seg(turnId)}/events`,
      headers: after === undefined ? {} : { 'last-event-id': after },
      accept: 'text/event-stream',
      idempotent: true,
      noNetworkRetry: true,
      signal,
    });
  }

  async #noContent(spec: { method: 'DELETE'; path: string } & Signal): Promise<void> {
    const response = await this.#t.request({ ...spec, idempotent: true });
    await response.body?.cancel();
  }
}

// The session operations the HTTP families call: create, read, send, run, inactivity, terminate. It checks
// what a request refers to (agent, user, files), admits a turn by the memory it will hold (admission.ts),
// then hands the work to the session's actor through the host.
import type { Catalogue } from '../agents/catalogue.ts';
import { systemPrompt } from '../agents/prompt.ts';
import type { Coordinator } from '../cluster/coordinator.ts';
import { AppError, sessionNotFound, shardMoving, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { SessionStatus } from '../machines/session.ts';
import { initialPersistedSnapshot } from '../machines/session-snapshot.ts';
import { SHARD_COUNT, shardOf } from '../shards.ts';
import {
  type ContentBlock,
  type JsonObject,
  type MessageRecord,
  type SessionRecord,
  StaleEpochError,
  type Store,
  type StoredFile,
  type User,
} from '../store/store.ts';
import { traceReplay } from '../tracing/tracer.ts';
import type { Admission, Reservation } from './admission.ts';
import { fingerprintOf, lookUpKey } from './idempotency.ts';
import type { InactivityResult } from './inactivity.ts';
import type { TurnObserver } from './operation-context.ts';
import { closedAnswer, type TerminateResult } from './operations.ts';
import type { SessionEntry } from './resident-actors.ts';
import { type SessionHost, statusError } from './session-host.ts';
import { refuseUnfitting, replayOf, type TurnResult } from './turn.ts';
import { type KnownHistory, knownHistory, sendBytes, type TurnBounds } from './turn-estimate.ts';

export type BlockInput = { type?: 'text' | 'image' | 'file'; text?: string; file_id?: string };

export interface MessageInput {
  content: string | BlockInput[];
  role: 'user' | 'assistant';
  metadata?: JsonObject | null;
}

export interface SessionFields {
  user?: { id?: string; reference?: string } | null;
  context?: JsonObject | null;
  metadata?: JsonObject | null;
}

/** A turn's answer, with the session's status once it finished. */
export type SendResult = TurnResult & { session_status: SessionStatus };

/** Who may touch a session beyond its tenant (the API key's agent scope, the token's conversation). */
export type Authorize = (session: SessionRecord) => void;

/**
 * Throws unless the caller may touch the conversation `file` was uploaded in: a file is answered like its
 * session (docs/internals/decisions.md#files-and-scoped-keys). A pool file (no session) is the whole
 * tenant's.
 */
export async function authorizeFile(
  store: Store,
  tenantId: string,
  file: StoredFile,
  authorize: Authorize,
): Promise<void> {
  if (file.session_id === null) return;
  const session = await store.getSession(tenantId, file.session_id);
  if (session) authorize(session);
}

export interface SessionServiceOptions {
  store: Store;
  host: SessionHost;
  coordinator: Coordinator;
  catalogue: Catalogue;
  /** Turns reserve what they hold before they start (docs/internals/decisions.md#resident-memory). */
  admission: Admission;
  /** What one turn reads at most, for its estimate before it reads anything. */
  turnBounds: TurnBounds;
}

export class SessionService {
  readonly #o: SessionServiceOptions;

  constructor(options: SessionServiceOptions) {
    this.#o = options;
  }

  agent(agentId: string) {
    const agent = this.#o.catalogue.get(agentId);
    if (!agent) throw new AppError('agent_not_found', undefined, { context: { agent_id: agentId } });
    return agent;
  }

  /** Whether the end user sees the agent's tool calls; false for an agent no longer in the catalogue. */
  exposesTools(agentId: string): boolean {
    return this.#o.catalogue.get(agentId)?.expose_tools ?? false;
  }

  async createSession(tenantId: string, agentId: string, fields: SessionFields): Promise<SessionRecord> {
    const agent = this.agent(agentId);
    const user = fields.user ? await this.#lookupUser(tenantId, fields.user) : null;
    const id = this.#newSessionId();
    const shard = shardOf(id);
    const fence = this.#o.coordinator.fence(shard);
    if (!fence) throw shardMoving();
    const expiresAt = Date.now() + agent.session_ttl * 1000;
    try {
      return await this.#o.store.createSession(
        tenantId,
        {
          id,
          agent_id: agentId,
          user_id: user?.id ?? null,
          shard,
          context: fields.context ?? {},
          metadata: fields.metadata ?? {},
          expires_at: new Date(expiresAt).toISOString(),
          snapshot: initialPersistedSnapshot({ sessionId: id, expiresAt }),
        },
        fence,
      );
    } catch (err) {
      if (!(err instanceof StaleEpochError)) throw err;
      this.#o.coordinator.lost(shard);
      throw shardMoving(undefined, err);
    }
  }

  /**
   * A new session id in a shard this process serves, so that the session's actor lives where it was created
   * (with N processes, about N draws). A process serving no shard has requests forwarded before they get here.
   */
  #newSessionId(): string {
    for (let draw = 0; draw < 8 * SHARD_COUNT; draw++) {
      const id = newId('ses');
      if (this.#o.coordinator.serves(shardOf(id))) return id;
    }
    throw shardMoving();
  }

  /** The session as stored, after the lazy expiry check. */
  async getSession(tenantId: string, sessionId: string, authorize: Authorize): Promise<SessionRecord> {
    let session = await this.#o.store.getSession(tenantId, sessionId);
    if (!session) throw sessionNotFound(sessionId);
    authorize(session);
    if (
      session.status === 'active' &&
      session.expires_at !== null &&
      Date.parse(session.expires_at) <= Date.now()
    ) {
      await this.#o.host.expireIfDue(sessionId);
      session = (await this.#o.store.getSession(tenantId, sessionId)) ?? session;
    }
    return session;
  }

  async send(
    tenantId: string,
    sessionId: string,
    message: MessageInput,
    options: {
      authorize: Authorize;
      key?: string;
      operation: 'plain' | 'stream';
      /** Set on the public family: content blocks may only name files uploaded in this conversation. */
      ownFilesOnly?: boolean;
      /** Watches the turn as it runs (streamed sends). */
      observer?: TurnObserver;
      /** Where the body names the file of content block `i`, for a refusal (`body.content.<i>.file_id`). */
      fileAt?: (i: number) => (string | number)[];
    },
  ): Promise<SendResult> {
    const entry = await this.#entry(tenantId, sessionId, options.authorize);
    const { key } = options;
    const lookup =
      key === undefined
        ? undefined
        : await lookUpKey(this.#o.store, entry, {
            key,
            fingerprint: fingerprintOf(options.operation, message),
          });
    // A finished attempt is replayed whatever the session's status is now.
    if (lookup?.attempt.state === 'finished') {
      traceReplay(entry.session, lookup.attempt.turn_id);
      return { ...replayOf(lookup.attempt), session_status: this.#o.host.status(entry) };
    }
    const fileAt = options.fileAt ?? ((i: number) => ['body', 'content', i, 'file_id']);
    const content = await this.#content(tenantId, message.content, fileAt, options.authorize, {
      sessionId: options.ownFilesOnly ? sessionId : undefined,
    });
    // An authored assistant message calls no model: it only stores.
    const history = message.role === 'user' ? knownHistory(entry) : undefined;
    const result = await this.#admitted(tenantId, history, [content], (reservation) =>
      this.#o.host.submit(
        entry,
        {
          id: newId('turn'),
          kind: 'send',
          payload: {
            messages: [{ id: newId('msg'), role: message.role, content, metadata: message.metadata ?? null }],
            reply: message.role === 'user',
            replyId: newId('msg'),
          },
          ...(lookup ? { idempotency: lookup } : {}),
          ...(reservation ? { reservation } : {}),
        },
        options.observer,
      ),
    );
    return { ...result, session_status: this.#o.host.status(entry) };
  }

  /**
   * Runs `submit` with the memory its turn holds reserved, once there is room (which may mean waiting, or a
   * 503 server_busy before anything is stored), and gives it back when the turn is over. Without a history
   * (`undefined`) no model is called and nothing is reserved.
   */
  async #admitted<T>(
    tenantId: string,
    history: KnownHistory | undefined,
    added: ContentBlock[][],
    submit: (reservation: Reservation | undefined) => Promise<T>,
  ): Promise<T> {
    if (history === undefined) return submit(undefined);
    const bytes = await sendBytes(this.#o.store, this.#o.turnBounds, tenantId, history, added);
    const reservation = await this.#o.admission.admit(tenantId, bytes);
    try {
      return await submit(reservation);
    } finally {
      reservation.release();
    }
  }

  /** The first message a turn stored (what a streamed replay reports as the turn's start). */
  async turnStart(sessionId: string, turnId: string): Promise<MessageRecord | null> {
    return (await this.#o.store.turnMessages(sessionId, turnId))[0] ?? null;
  }

  /** Creates a session, stores `messages` in it and returns the agent's reply to them. */
  async run(
    tenantId: string,
    agentId: string,
    fields: SessionFields & { messages: MessageInput[] },
    /** The caller's check on the conversations of the files the messages name. */
    authorize: Authorize,
  ): Promise<TurnResult & { session_id: string }> {
    const agent = this.agent(agentId);
    const limit = agent.limits.messages_per_session;
    if (fields.messages.length + 1 > limit) {
      // Refused before the session exists, so a refused run leaves nothing behind.
      throw new AppError('session_message_limit_reached', undefined, {
        context: { limit, messages_count: fields.messages.length },
      });
    }
    const messages = await Promise.all(
      fields.messages.map(async (m, j) => ({
        id: newId('msg'),
        role: m.role,
        content: await this.#content(
          tenantId,
          m.content,
          (i) => ['body', 'messages', j, 'content', i, 'file_id'],
          authorize,
        ),
        metadata: m.metadata ?? null,
      })),
    );
    const contentAt = ['body', 'messages', messages.length - 1, 'content'];
    // A message too long for the agent is refused before the session exists, as the turn would refuse it.
    const user = fields.user ? await this.#lookupUser(tenantId, fields.user) : null;
    await refuseUnfitting(agent, systemPrompt(agent.instructions, fields.context ?? {}, user), {
      messages,
      contentAt,
    });
    // Admitted before the session exists, so that a refused run leaves nothing behind.
    const contents = messages.map((m) => m.content);
    return this.#admitted(tenantId, { chars: 0, contents: [] }, contents, async (reservation) => {
      const session = await this.createSession(tenantId, agentId, fields);
      const entry = await this.#entry(tenantId, session.id, () => {});
      const result = await this.#o.host.submit(entry, {
        id: newId('turn'),
        kind: 'send',
        payload: { messages, reply: true, replyId: newId('msg'), contentAt },
        ...(reservation ? { reservation } : {}),
      });
      return { ...result, session_id: session.id };
    });
  }

  /** The session when it still takes messages and files; 409 `session_closed` / `session_expired` otherwise. */
  async activeSession(tenantId: string, sessionId: string, authorize: Authorize): Promise<SessionRecord> {
    const entry = await this.#entry(tenantId, sessionId, authorize);
    await this.#o.host.expireIfDue(sessionId);
    const status = this.#o.host.status(entry);
    if (status !== 'active') throw statusError(status, sessionId);
    return entry.session;
  }

  /** Stores the agent's inactivity warning or final message (which may close the session). */
  async inactivity(
    tenantId: string,
    sessionId: string,
    step: 'warning' | 'final',
    authorize: Authorize,
  ): Promise<InactivityResult> {
    const entry = await this.#entry(tenantId, sessionId, authorize);
    return this.#o.host.submit(entry, {
      id: newId('turn'),
      kind: 'inactivity',
      payload: { step, messageId: newId('msg') },
    });
  }

  /** Closes the session; a second call answers with the first closing. */
  async terminate(
    tenantId: string,
    sessionId: string,
    reason: string | null,
    authorize: Authorize,
  ): Promise<TerminateResult> {
    const entry = await this.#entry(tenantId, sessionId, authorize);
    const closed = () => closedAnswer(sessionId, entry.actor.getSnapshot());
    const already = closed();
    if (already) return already;
    try {
      return await this.#o.host.submit(entry, { id: newId('turn'), kind: 'terminate', payload: { reason } });
    } catch (err) {
      // Two terminates raced: the one behind finds the session closed, which is the answer it wanted.
      const answer = err instanceof AppError && err.code === 'session_closed' ? closed() : null;
      if (answer) return answer;
      throw err;
    }
  }

  async #entry(tenantId: string, sessionId: string, authorize: Authorize): Promise<SessionEntry> {
    const entry = await this.#o.host.entry(sessionId);
    if (!entry || entry.session.tenant_id !== tenantId) throw sessionNotFound(sessionId);
    authorize(entry.session);
    return entry;
  }

  async #lookupUser(tenantId: string, lookup: { id?: string; reference?: string }): Promise<User> {
    const { store } = this.#o;
    const byId = lookup.id !== undefined ? await store.getUser(tenantId, lookup.id) : null;
    const byReference =
      lookup.reference !== undefined
        ? ((await store.listUsers(tenantId, { reference: lookup.reference }, { limit: 1, offset: 0 }))
            .items[0] ?? null)
        : null;
    const user = byId ?? byReference;
    if ((lookup.id !== undefined && !byId) || (lookup.reference !== undefined && !byReference) || !user) {
      throw new AppError('user_not_found', undefined, { context: { ...lookup } });
    }
    if (byId && byReference && byId.id !== byReference.id) {
      throw ValidationError.at(
        ['body', 'user'],
        'The user id and reference name different users',
        'value_error',
      );
    }
    return user;
  }

  /**
   * Normalised blocks; every file a block names must be the tenant's (or the one session's, when given),
   * one the caller may touch (see authorizeFile), and an image block an image.
   */
  async #content(
    tenantId: string,
    content: string | BlockInput[],
    /** Where the request names the file of block `i`. */
    fileAt: (i: number) => (string | number)[],
    authorize: Authorize,
    only: { sessionId?: string } = {},
  ): Promise<ContentBlock[]> {
    if (typeof content === 'string') return [{ type: 'text', text: content }];
    return Promise.all(
      content.map(async (block, i): Promise<ContentBlock> => {
        if (block.text !== undefined && block.type !== 'image' && block.type !== 'file') {
          return { type: 'text', text: block.text };
        }
        const fileId = block.file_id ?? '';
        const type = block.type === 'image' ? 'image' : 'file';
        const file = await this.#o.store.getFile(tenantId, fileId);
        if (!file || (only.sessionId !== undefined && file.session_id !== only.sessionId)) {
          throw new AppError('file_not_found', undefined, {
            context: { file_id: fileId, param: fileAt(i).join('.') },
          });
        }
        await authorizeFile(this.#o.store, tenantId, file, authorize);
        if (type === 'image' && !file.mime_type.startsWith('image/')) {
          throw ValidationError.at(
            fileAt(i),
            `File ${fileId} is ${file.mime_type}, not an image`,
            'value_error',
          );
        }
        return { type, file_id: fileId };
      }),
    );
  }
}

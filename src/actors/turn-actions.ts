// What the session service (session-service.ts) does to a turn besides sending: decide the tool calls it
// waits for, cancel it, and tell which calls wait (docs/internals/decisions.md#approvals); and who answers the
// session's turns, the agent or people (docs/guides/humans.md). A base class of the service, so that the
// routes call both alike.

import { AppError, sessionNotFound } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Approver, Handoff, SessionStatus } from '../machines/session.ts';
import type { ContentBlock, JsonObject, MessageRecord, SessionRecord, Store } from '../store/store.ts';
import type { Reservation } from './admission.ts';
import type { DecideResult, Decision } from './approvals.ts';
import { type CancelResult, storedTurnAnswer } from './cancel.ts';
import type { TurnObserver } from './operation-context.ts';
import type { SessionEntry } from './resident-actors.ts';
import type { SessionHost } from './session-host.ts';
import { type Authorize, type BlockInput, contentBlocks } from './session-inputs.ts';
import { type Approval, approvalOf, functionNames } from './step-approvals.ts';

export class TurnActions {
  protected readonly options: { store: Store; host: SessionHost };

  constructor(options: { store: Store; host: SessionHost }) {
    this.options = options;
  }

  /**
   * Decisions on the calls turn `turnId` waits for, by `by`'s family; answers like a send once they are
   * committed (docs/internals/decisions.md#approvals). A null `turnId` is the session's paused turn (an AI SDK
   * chat names only the calls): without one, no call waits.
   */
  async decide(
    tenantId: string,
    sessionId: string,
    turnId: string | null,
    decisions: Decision[],
    options: { authorize: Authorize; by: Approver; observer?: TurnObserver },
  ): Promise<DecideResult & { session_status: SessionStatus }> {
    const entry = await this.entryOf(tenantId, sessionId, options.authorize);
    const paused = turnId ?? entry.actor.getSnapshot().context.paused?.turnId;
    if (paused === undefined) {
      // Told by the actor's memory alone: only while this process still owns the session.
      await this.options.host.confirmOwner(sessionId);
      throw new AppError('approval_not_pending', undefined, {
        context: { turn_id: null, call_id: decisions[0]?.call_id ?? null, state: 'unknown' },
      });
    }
    const payload = { turnId: paused, by: options.by, decisions };
    // A decision may let the turn go on to the model: admitted by memory as a send is.
    const result = await this.admitTurn(tenantId, entry, (reservation) =>
      this.options.host.submit(
        entry,
        { id: newId('op'), kind: 'decide' as const, payload, ...(reservation ? { reservation } : {}) },
        options.observer,
      ),
    );
    return { ...result, session_status: this.options.host.status(entry) };
  }

  /**
   * Cancels turn `turnId` (docs/internals/decisions.md#cancel): a running one is aborted, a paused one ended;
   * answered once that is committed, with the turn as it is then.
   */
  async cancel(
    tenantId: string,
    sessionId: string,
    turnId: string,
    authorize: Authorize,
  ): Promise<CancelResult & { session_status: SessionStatus }> {
    const entry = await this.entryOf(tenantId, sessionId, authorize);
    this.options.host.cancelRunning(entry, turnId);
    const op = { id: newId('op'), kind: 'cancel' as const, payload: { turnId } };
    let result: CancelResult;
    try {
      result = await this.options.host.submit(entry, op);
    } catch (err) {
      // A closed or expired session runs nothing: its turns are as they are stored.
      if (!(err instanceof AppError && (err.code === 'session_closed' || err.code === 'session_expired')))
        throw err;
      result = await storedTurnAnswer(this.options.store, sessionId, turnId);
    }
    return { ...result, session_status: this.options.host.status(entry) };
  }

  /**
   * Hands the session to people (`handoff`: why, and who asks) or back to the agent (null), once that is
   * committed (docs/guides/humans.md); the session as stored then. A repeated handoff or handback changes
   * nothing; a closed or expired session answers 409 as a send does.
   */
  async handoff(
    tenantId: string,
    sessionId: string,
    handoff: Omit<Handoff, 'requested_at'> | null,
    authorize: Authorize,
  ): Promise<SessionRecord> {
    const entry = await this.entryOf(tenantId, sessionId, authorize);
    const payload = { handoff: handoff && { ...handoff, requested_at: new Date().toISOString() } };
    await this.options.host.submit(entry, { id: newId('op'), kind: 'handoff', payload });
    const session = await this.options.store.getSession(tenantId, sessionId);
    if (!session) throw sessionNotFound(sessionId);
    return session;
  }

  /** Replaces the session's metadata once that is committed; the session as stored then. */
  async updateMetadata(
    tenantId: string,
    sessionId: string,
    metadata: JsonObject,
    authorize: Authorize,
  ): Promise<SessionRecord> {
    const entry = await this.entryOf(tenantId, sessionId, authorize);
    await this.options.host.submit(entry, { id: newId('op'), kind: 'metadata', payload: { metadata } });
    const session = await this.options.store.getSession(tenantId, sessionId);
    if (!session) throw sessionNotFound(sessionId);
    return session;
  }

  /**
   * The content blocks of messages to add (addMessages), their files looked up: read before anything is
   * written, so that a refused file leaves nothing behind (not even a new conversation's session).
   */
  messageBlocks(
    tenantId: string,
    contents: { content: string | BlockInput[]; fileAt: (i: number) => (string | number)[] }[],
    authorize: Authorize,
  ): Promise<ContentBlock[][]> {
    return Promise.all(
      contents.map((c) => contentBlocks(this.options.store, tenantId, c.content, c.fileAt, authorize)),
    );
  }

  /**
   * Stores the user's messages in order, in one commit, without a turn: no model answers them (the next send's
   * turn sees them in its history). Bounded, refused and answered 409 as a send's message would be.
   */
  async addMessages(
    tenantId: string,
    sessionId: string,
    blocks: readonly ContentBlock[][],
    authorize: Authorize,
  ): Promise<MessageRecord[]> {
    const entry = await this.entryOf(tenantId, sessionId, authorize);
    const messages = blocks.map((content) => ({
      id: newId('msg'),
      role: 'user' as const,
      content,
      metadata: null,
    }));
    const payload = { messages, reply: false, replyId: newId('msg') };
    const result = await this.options.host.submit(entry, { id: newId('turn'), kind: 'send', payload });
    return this.options.store.turnMessages(sessionId, result.turn_id);
  }

  /** The names of the functions the client declared for the session's paused turn, if one is paused. */
  async pausedFunctions(sessionId: string): Promise<ReadonlySet<string>> {
    const entry = await this.options.host.entry(sessionId);
    return functionNames(entry?.actor.getSnapshot().context.paused?.extras);
  }

  /** The id of the session's paused turn, if it has one (its actor is activated to tell). */
  async pausedTurnId(sessionId: string): Promise<string | null> {
    const entry = await this.options.host.entry(sessionId);
    return entry?.actor.getSnapshot().context.paused?.turnId ?? null;
  }

  /** The calls waiting for decisions, by session (Session.pending_approvals). */
  async pendingApprovals(sessionIds: readonly string[]): Promise<Map<string, Approval[]>> {
    const waiting = new Map<string, Approval[]>();
    const expired = new Set<string>();
    const now = new Date().toISOString();
    for (const call of await this.options.store.awaitingApproval(sessionIds)) {
      const approval = approvalOf(call);
      if (!approval) continue;
      // Its time ran out: it counts as denied already, and reading it is a use that applies the denial.
      if (approval.expires_at <= now) expired.add(call.session_id);
      else waiting.set(call.session_id, [...(waiting.get(call.session_id) ?? []), approval]);
    }
    // Where this process owns the session; elsewhere its owner's sweep does it.
    for (const id of expired) void this.options.host.wake(id).catch(() => {});
    return waiting;
  }

  /** Runs `submit` with the memory a turn going on holds reserved; the service admits by memory. */
  protected admitTurn<T>(
    _tenantId: string,
    _entry: SessionEntry,
    submit: (reservation: Reservation | undefined) => Promise<T>,
  ): Promise<T> {
    return submit(undefined);
  }

  /** The session's entry, once the caller may touch it: another tenant's is not found. */
  protected async entryOf(tenantId: string, sessionId: string, authorize: Authorize): Promise<SessionEntry> {
    const entry = await this.options.host.entry(sessionId);
    if (!entry || entry.session.tenant_id !== tenantId) throw sessionNotFound(sessionId);
    authorize(entry.session);
    return entry;
  }
}

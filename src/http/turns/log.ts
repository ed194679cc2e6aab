// What a streamed turn has told so far, and the streamed turns this process runs. A turn's stream and every
// stream that resumes it (GET …/turns/{turn_id}/events) read one log, so all of them send the same events
// under the same ids. A finished turn is replayed from the store instead (replay.ts); one that failed is
// kept here a while, because its error is stored nowhere else. A turn that goes on after a pause (a decision)
// has its log filled from the store first, then followed live (docs/internals/decisions.md#approvals).
import type { TurnObserver } from '../../actors/operation-context.ts';
import type { SendResult } from '../../actors/session-service.ts';
import type { Approval } from '../../actors/step-approvals.ts';
import type { AppError } from '../../errors.ts';
import type { MessageRecord } from '../../store/store.ts';

export type ToolEventName = 'tool.started' | 'tool.completed' | 'tool.approval_requested';

/**
 * A piece of reply text as the model gave it, a tool event (an approval request says who may decide it), or
 * the pause of a step whose calls wait; a text item counts its length, any other item one. Pieces are kept
 * apart (a stream merges them as it sends): appending to one string and slicing it for each send would copy
 * the reply again at every delta.
 */
export type TurnItem =
  | { text: string }
  | { tool: ToolEventName; data: object; approver?: Approval['approver'] }
  | { pause: { step: number; approvals: Approval[] } };

/** How a turn's part ends: a reply, a failure, or a pause (the turn waits for decisions). */
export type TurnEnd = { ok: SendResult } | { error: AppError } | { paused: true };

/**
 * How much of a turn its stream told: characters of reply text, tool events, approval requests by approver,
 * and pauses; which of them a stream sends depends on its caller (visibleUnits).
 */
export interface Told {
  text: number;
  tools: number;
  userApprovals: number;
  operatorApprovals: number;
  pauses: number;
}

/** What a caller is sent of a turn: tool events, and every approval or only the user's own. */
export interface Visibility {
  showTools: boolean;
  /** The API-key family sees every approval; the public family only those its end user may decide. */
  allApprovals: boolean;
}

/** The units of `told` a caller that sees `v` was sent. */
export const visibleUnits = (told: Told, v: Visibility) =>
  told.text +
  (v.showTools ? told.tools : 0) +
  told.userApprovals +
  (v.allApprovals ? told.operatorApprovals : 0) +
  told.pauses;

/** Whether a caller that sees `v` is sent `item` (text and pauses always). */
export function visible(item: TurnItem, v: Visibility): boolean {
  if (!('tool' in item)) return true;
  if (item.tool !== 'tool.approval_requested') return v.showTools;
  return v.allApprovals || item.approver === 'user';
}

/** A failed turn as this process remembers it: the error, and how much its stream told before it. */
export interface Failure {
  error: AppError;
  told: Told;
}

export class TurnLog implements TurnObserver {
  turnId = '';
  /** The turn's first message (the user's), once stored; null for a replay that lacks it. */
  message: MessageRecord | null = null;
  /** The id the reply will have, for the deltas. */
  replyId: string | null = null;
  hasStarted = false;
  readonly items: TurnItem[] = [];
  /** Whether any reply text was told (a failure then leaves the client text to discard). */
  hasText = false;
  /** How much was told, counted as it was. */
  readonly told: Told = { text: 0, tools: 0, userApprovals: 0, operatorApprovals: 0, pauses: 0 };
  /** For a failed turn rebuilt from the store: how much its stream had told, which places its end. */
  toldBeforeFailure: Told | undefined;
  /**
   * Rebuilt from the store: its text is what was stored, so a client may hold more of a turn that did not
   * finish (what its process streamed before it stopped or failed).
   */
  rebuilt = false;
  end: TurnEnd | undefined;
  readonly #listeners = new Set<() => void>();
  readonly #onStart: ((log: TurnLog) => void) | undefined;
  readonly #load: ((turnId: string) => Promise<TurnLog | null>) | undefined;

  /** `load` reads a stored turn, for a turn that goes on after what its earlier parts told. */
  constructor(onStart?: (log: TurnLog) => void, load?: (turnId: string) => Promise<TurnLog | null>) {
    this.#onStart = onStart;
    this.#load = load;
  }

  /** Calls `listener` after each change; returns what stops it. */
  follow(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  started(turnId: string, message: MessageRecord | null, replyId: string | null): void {
    this.turnId = turnId;
    this.message = message;
    this.replyId = replyId;
    this.hasStarted = true;
    this.#onStart?.(this);
    this.#changed();
  }

  delta(text: string): void {
    if (text === '') return;
    this.hasText = true;
    this.told.text += text.length;
    this.items.push({ text });
    this.#changed();
  }

  toolStarted(call: { call_id: string; name: string; input: unknown }): void {
    this.tool('tool.started', call);
  }

  toolCompleted(call: { call_id: string; name: string; status: 'ok' | 'error'; output: unknown }): void {
    this.tool('tool.completed', call);
  }

  approvalRequested(approval: Approval): void {
    const { call_id, tool, input, approver, expires_at } = approval;
    this.push({
      tool: 'tool.approval_requested',
      data: { call_id, tool, input, approver, expires_at },
      approver,
    });
  }

  paused(step: number, approvals: Approval[]): void {
    this.push({ pause: { step, approvals } });
  }

  /**
   * The stored turn goes on: what its earlier parts told is read from the store into this log, which then
   * starts (and follows what is told from now on); `replyId` is the id the reply will have.
   */
  async continued(turnId: string, replyId: string): Promise<void> {
    const stored = await this.#load?.(turnId);
    for (const item of stored?.items ?? []) this.push(item, false);
    this.started(turnId, stored?.message ?? null, replyId);
  }

  tool(name: ToolEventName, data: object): void {
    this.push({ tool: name, data });
  }

  /** Adds an item other than text, counting it; listeners are told unless `tell` is false. */
  push(item: TurnItem, tell = true): void {
    if ('text' in item) {
      this.hasText = true;
      this.told.text += item.text.length;
    } else if ('pause' in item) this.told.pauses++;
    else if (item.tool !== 'tool.approval_requested') this.told.tools++;
    else if (item.approver === 'user') this.told.userApprovals++;
    else this.told.operatorApprovals++;
    this.items.push(item);
    if (tell) this.#changed();
  }

  finish(end: TurnEnd): void {
    if (this.end) return;
    this.end = end;
    this.#changed();
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }
}

/** How long a failed turn's error is kept for resumes, and how many such errors at most. */
const FAILED_KEPT_MS = 5 * 60_000;
const FAILED_KEPT_MAX = 1_000;

/**
 * The logs of this process's streamed turns, by turn id, while they run; then, for a failed one, only its
 * error for a while (its stored part is read again from the store), so that what is kept stays small.
 */
export class LiveTurns {
  readonly #logs = new Map<string, { sessionId: string; log: TurnLog }>();
  readonly #failed = new Map<string, Failure & { sessionId: string; timer: NodeJS.Timeout }>();

  /**
   * A log for a new streamed turn of `sessionId`, listed here from its start until it ends; `load` reads a
   * stored turn of the session, for a turn that goes on.
   */
  open(sessionId: string, load?: (turnId: string) => Promise<TurnLog | null>): TurnLog {
    return new TurnLog((log) => {
      // A retry of the same turn (same Idempotency-Key) replaces the failed attempt.
      this.#forgetFailed(log.turnId);
      this.#logs.set(log.turnId, { sessionId, log });
    }, load);
  }

  /** Ends `log`: a reply is in the store from now on; a failure's error is kept a while. */
  finish(log: TurnLog, end: TurnEnd): void {
    log.finish(end);
    if (!log.hasStarted || this.#logs.get(log.turnId)?.log !== log) return;
    const { sessionId } = this.#logs.get(log.turnId) ?? { sessionId: '' };
    this.#logs.delete(log.turnId);
    if (!('error' in end)) return;
    if (this.#failed.size >= FAILED_KEPT_MAX) {
      const [oldest] = this.#failed.keys();
      if (oldest !== undefined) this.#forgetFailed(oldest);
    }
    const timer = setTimeout(() => this.#forgetFailed(log.turnId), FAILED_KEPT_MS);
    timer.unref();
    this.#failed.set(log.turnId, { sessionId, error: end.error, told: { ...log.told }, timer });
  }

  /** The log of running turn `turnId` of session `sessionId`, if this process runs it. */
  get(sessionId: string, turnId: string): TurnLog | undefined {
    const found = this.#logs.get(turnId);
    return found?.sessionId === sessionId ? found.log : undefined;
  }

  /** Why turn `turnId` of session `sessionId` failed, if it failed here lately. */
  failure(sessionId: string, turnId: string): Failure | undefined {
    const found = this.#failed.get(turnId);
    return found?.sessionId === sessionId ? { error: found.error, told: found.told } : undefined;
  }

  #forgetFailed(turnId: string): void {
    const found = this.#failed.get(turnId);
    if (found === undefined) return;
    clearTimeout(found.timer);
    this.#failed.delete(turnId);
  }
}

// A turn's log as Server-Sent Events (docs/internals/decisions.md#streaming), from any point of it. Event ids
// are `<turn_id>:<seq>`: turn.started is 0; a delta's seq is 1 + the units told up to its end, where a unit
// is a character of reply text, a tool event or an approval request (where the caller sees them), or a pause
// (turn.awaiting_approval); message.completed and turn.completed (or turn.cancelled, or turn.failed) follow at
// +2 and +3. So an id names a place in the turn whatever the deltas' sizes were, and a stream resumed after it
// (Last-Event-ID) sends exactly what follows, from a live turn or a replayed one alike; a turn that paused
// ends its stream at the pause, and the stream of the decision that lets it go on starts after it.

import { type MessageView, publicMessage } from '../../actors/public-message.ts';
import type { Approval } from '../../actors/step-approvals.ts';
import { AppError } from '../../errors.ts';
import { type TurnLog, type Visibility, visible, visibleUnits } from './log.ts';
import type { SseStream } from './sse.ts';

export interface TurnEventsOptions extends Visibility {
  sessionId: string;
  /** How the family shows the turn's messages (the public family without their metadata). */
  view: MessageView;
  /** The seq of the last event the client has; null sends the turn from its start. */
  after: number | null;
}

/** The approvals a caller that sees `v` is shown. */
const shownApprovals = (approvals: readonly Approval[], v: Visibility) =>
  v.allApprovals ? approvals : approvals.filter((a) => a.approver === 'user');

/**
 * The seq of the pause of step `step` in `log` as a caller that sees `v` counts it (the last pause without a
 * step); null when the log holds none.
 */
export function pauseSeq(log: TurnLog, v: Visibility, step?: number): number | null {
  let units = 0;
  let found: number | null = null;
  for (const item of log.items) {
    if ('text' in item) units += item.text.length;
    else if (visible(item, v)) units++;
    if ('pause' in item && (step === undefined || item.pause.step === step)) found = units + 1;
  }
  return found;
}

/** Writes a log's events to a stream as they become available; `pump` after every change of the log. */
export class TurnEventWriter {
  readonly #log: TurnLog;
  readonly #sse: SseStream;
  readonly #o: TurnEventsOptions;
  /** Units told or skipped so far, and where that is in the log. */
  #units = 0;
  #item = 0;
  #startSent: boolean;
  #done = false;

  constructor(log: TurnLog, sse: SseStream, options: TurnEventsOptions) {
    this.#log = log;
    this.#sse = sse;
    this.#o = options;
    this.#startSent = options.after !== null;
  }

  /** Sends what the log holds beyond what was sent; merges text while the reader is behind. */
  pump(): void {
    const log = this.#log;
    if (this.#done || !log.hasStarted) return;
    const turnId = log.turnId;
    if (!this.#startSent) {
      this.#startSent = true;
      this.#sse.send('turn.started', `${turnId}:0`, {
        turn_id: turnId,
        session_id: this.#o.sessionId,
        user_message: log.message ? this.#o.view(publicMessage(log.message)) : null,
      });
    }
    if (this.#sse.backedUp) return;
    // What the client has: the units before its last event's seq.
    const skip = this.#o.after === null ? 0 : Math.max(this.#o.after - 1, 0);
    let text = '';
    const flush = () => {
      if (text === '') return;
      this.#sse.send('message.delta', `${turnId}:${this.#units + 1}`, {
        turn_id: turnId,
        message_id: log.replyId,
        index: 0,
        delta: { type: 'text', text },
      });
      text = '';
    };
    while (this.#item < log.items.length) {
      const item = log.items[this.#item] as (typeof log.items)[number];
      if (!('text' in item)) {
        this.#item++;
        if (!visible(item, this.#o)) continue;
        flush();
        this.#units++;
        if (this.#units > skip) this.#sendItem(turnId, item);
        if (this.#sse.backedUp) return;
        continue;
      }
      this.#item++;
      let piece = item.text;
      if (this.#units < skip) {
        const skipped = Math.min(skip - this.#units, piece.length);
        this.#units += skipped;
        piece = piece.slice(skipped);
      }
      text += piece;
      this.#units += piece.length;
    }
    flush();
    if (log.end && this.#item >= log.items.length) this.#finish();
  }

  /** A tool event, an approval request or a pause, at the units told up to it. */
  #sendItem(turnId: string, item: Exclude<TurnLog['items'][number], { text: string }>): void {
    const id = `${turnId}:${this.#units + 1}`;
    if ('tool' in item) this.#sse.send(item.tool, id, { turn_id: turnId, ...item.data });
    else
      this.#sse.send('turn.awaiting_approval', id, {
        turn_id: turnId,
        approvals: shownApprovals(item.pause.approvals, this.#o),
      });
  }

  #finish(): void {
    const log = this.#log;
    const { after } = this.#o;
    const turnId = log.turnId;
    const end = log.end;
    if (!end) return;
    this.#done = true;
    const at = (offset: number) => this.#units + offset;
    const due = (seq: number) => after === null || seq > after;
    if ('paused' in end) {
      // The pause was the last event told: the stream of this part of the turn ends there.
    } else if ('ok' in end) {
      const result = end.ok;
      const message = result.agent_message;
      if (message && due(at(2)))
        this.#sse.send('message.completed', `${turnId}:${at(2)}`, {
          turn_id: turnId,
          message: this.#o.view(message),
        });
      const cancelled = message?.stop_reason === 'cancelled';
      if (due(at(3)))
        this.#sse.send(cancelled ? 'turn.cancelled' : 'turn.completed', `${turnId}:${at(3)}`, {
          turn_id: turnId,
          session_id: this.#o.sessionId,
          conversation_status: result.session_status,
          ...(cancelled ? {} : { usage: result.usage }),
        });
    } else {
      // A rebuilt turn holds what was stored, and its stream may have told more (the text of its last step).
      // A failure remembered here ends where its stream ended; an interrupted turn, after what the client holds.
      const told = log.toldBeforeFailure;
      const seq = told
        ? visibleUnits(told, this.#o) + 2
        : log.rebuilt
          ? Math.max(at(2), (after ?? 0) + 1)
          : at(2);
      if (due(seq))
        this.#sse.send('turn.failed', `${turnId}:${seq}`, {
          turn_id: turnId,
          error: streamedError(end.error),
          // Text was told (now or before the client resumed) that will not be stored: the client discards it.
          partial: told ? told.text > 0 : log.hasText || (after ?? 0) > 0,
        });
    }
    this.#sse.close();
  }
}

/** A turn's failure as a stream tells it: what a plain send's envelope carries, so a client can act alike. */
export const streamedError = (error: AppError) => ({
  code: error.code,
  name: error.errorName,
  message: error.message,
  ...(error.context ? { context: error.context } : {}),
  ...(error.headers?.['retry-after'] ? { retry_after_seconds: Number(error.headers['retry-after']) } : {}),
});

/** Any failure as the AppError a stream reports. */
export const asAppError = (err: unknown): AppError =>
  err instanceof AppError ? err : new AppError('internal_error', undefined, { cause: err });

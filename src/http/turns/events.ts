// A turn's log as Server-Sent Events (docs/internals/decisions.md#streaming), from any point of it. Event ids
// are `<turn_id>:<seq>`: turn.started is 0; a delta's seq is 1 + the units told up to its end, where a unit
// is a character of reply text or (where the caller sees them) a tool event; message.completed and
// turn.completed (or turn.failed) follow at +2 and +3. So an id names a place in the turn whatever the
// deltas' sizes were, and a stream resumed after it (Last-Event-ID) sends exactly what follows, from a live
// turn or a replayed one alike.
import { type MessageView, publicMessage } from '../../actors/public-message.ts';
import { AppError } from '../../errors.ts';
import type { TurnLog } from './log.ts';
import type { SseStream } from './sse.ts';

export interface TurnEventsOptions {
  sessionId: string;
  /** How the family shows the turn's messages (the public family without their metadata). */
  view: MessageView;
  /** Whether tool events are sent and counted (the API-key family; the public one where the agent exposes tools). */
  showTools: boolean;
  /** The seq of the last event the client has; null sends the turn from its start. */
  after: number | null;
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
      if ('tool' in item) {
        this.#item++;
        if (!this.#o.showTools) continue;
        flush();
        this.#units++;
        if (this.#units > skip)
          this.#sse.send(item.tool, `${turnId}:${this.#units + 1}`, { turn_id: turnId, ...item.data });
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

  #finish(): void {
    const log = this.#log;
    const { after } = this.#o;
    const turnId = log.turnId;
    const end = log.end;
    if (!end) return;
    this.#done = true;
    const at = (offset: number) => this.#units + offset;
    const due = (seq: number) => after === null || seq > after;
    if ('ok' in end) {
      const result = end.ok;
      if (due(at(2)))
        this.#sse.send('message.completed', `${turnId}:${at(2)}`, {
          turn_id: turnId,
          message: this.#o.view(result.agent_message),
        });
      if (due(at(3)))
        this.#sse.send('turn.completed', `${turnId}:${at(3)}`, {
          turn_id: turnId,
          session_id: this.#o.sessionId,
          conversation_status: result.session_status,
          usage: result.usage,
        });
    } else {
      // A rebuilt turn holds what was stored, and its stream may have told more (the text of its last step).
      // A failure remembered here ends where its stream ended; an interrupted turn, after what the client holds.
      const told = log.toldBeforeFailure;
      const seq = told
        ? told.text + (this.#o.showTools ? told.tools : 0) + 2
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

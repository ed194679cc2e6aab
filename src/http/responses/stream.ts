// A turn as the Open Responses event stream: response.created and response.in_progress once the user's
// message is stored, output items as the agent calls tools and writes (output_item.added, content_part.added,
// output_text.delta, output_text.done, content_part.done, output_item.done), then response.completed (or
// .incomplete, .failed). The events are drawn from the turn's log (turns/log.ts), the one a streamed send
// keeps, so that a dropped client resumes from any process: followed live on the session's owner, rebuilt
// from the store once the turn is finished. Their sequence_numbers count the turn's units as Parley's own
// event ids do: one per event, and one per character of a text delta (a delta's number is its last
// character's), so that a live stream and its replay number every event alike, however the text was cut.
// A turn that pauses for the client's functions ends with response.completed (an approval: .incomplete); the
// stream of the request that answers it starts after that pause, numbered from 0 (answers.ts).
import type { FastifyReply } from 'fastify';
import type { ResponseObject, ResponseOutputItem, ResponseStreamEvent } from '#schemas';
import { countOpenStream } from '../server/metrics.ts';
import type { TurnLog } from '../turns/log.ts';
import { SSE_HEADERS, SseStream } from '../turns/sse.ts';
import { waitsForFunctions } from './answers.ts';
import { messageItem, type ResponseFacts, responseObject, toolItems } from './mapping.ts';

type Facts = Omit<ResponseFacts, 'turnId'>;
type Unnumbered = ResponseStreamEvent extends infer E
  ? E extends unknown
    ? Omit<E, 'sequence_number'>
    : never
  : never;

/** Writes the events of one log after `after`, as the log grows. */
class ResponseLogWriter {
  readonly #log: TurnLog;
  readonly #sse: SseStream;
  readonly #facts: Facts;
  readonly #after: number;
  readonly #output: ResponseOutputItem[] = [];
  /** The next unit's number, and how many of the log's items were written. */
  #pos = 0;
  #items = 0;
  #begun = false;
  #done = false;
  /** The message item being written, if any: its index in output and its text so far. */
  #open: { index: number; id: string; text: string } | null = null;
  #messages = 0;
  /** The calls shown (or passed over) so far, by call id. */
  readonly #shown = new Set<string>();
  /** The client's functions: the outputs it sent for them are its own, not told back. */
  readonly #functions: ReadonlySet<string>;
  /** The step whose pause this stream starts after (the answer to it); null: the whole turn. */
  readonly #fromStep: number | null;
  /** The index of the log's first item this stream tells; null until the log has started. */
  #from: number | null = null;

  constructor(
    log: TurnLog,
    sse: SseStream,
    facts: Facts,
    after: number | null,
    from: { step: number; functions: ReadonlySet<string> } | null,
  ) {
    this.#log = log;
    this.#sse = sse;
    this.#facts = facts;
    this.#after = after ?? -1;
    this.#fromStep = from?.step ?? null;
    this.#functions = from?.functions ?? new Set();
  }

  /** Where the stream starts in the log: after the answered pause (the log holds it once started), else 0. */
  #startOf(log: TurnLog): number {
    if (this.#fromStep === null) return 0;
    const at = log.items.findIndex((item) => 'pause' in item && item.pause.step === this.#fromStep);
    return at + 1;
  }

  pump(): void {
    const log = this.#log;
    if (this.#done || !log.hasStarted) return;
    if (!this.#begun) {
      this.#begun = true;
      const response = this.#response(null);
      this.#emit({ type: 'response.created', response });
      this.#emit({ type: 'response.in_progress', response });
    }
    if (this.#from === null) this.#from = this.#startOf(log);
    for (; this.#items < log.items.length; this.#items++) {
      const item = log.items[this.#items];
      if (!item || 'pause' in item) continue;
      if ('text' in item) {
        // An answer's stream starts with the text after the pause, without the break between steps' texts.
        const first = this.#fromStep !== null && this.#output.length === 0 && !this.#open;
        if (this.#items >= this.#from) this.#text(first ? item.text.replace(/^\n+/, '') : item.text);
        continue;
      }
      const data = item.data as {
        call_id: string;
        name?: string;
        tool?: string;
        input?: unknown;
        output?: unknown;
      };
      const call = { ...data, name: data.name ?? data.tool ?? '' };
      const done = item.tool === 'tool.completed';
      // A call is shown once: asked for approval (or for the client's output), it is not shown again as started;
      // nor is the result the client sent for its function.
      if (!done && this.#shown.has(call.call_id)) continue;
      this.#shown.add(call.call_id);
      if (this.#items < this.#from || (done && this.#functions.has(call.name))) continue;
      const items = toolItems({ ...call, done });
      const whole = done ? items.output : items.call;
      if (whole) this.#item(whole);
    }
    if (log.end) this.#finish();
  }

  #emit(event: Unnumbered, units = 1): void {
    const seq = this.#pos + units - 1;
    this.#pos += units;
    if (seq > this.#after)
      this.#sse.send(event.type, `${this.#log.turnId}:${seq}`, { ...event, sequence_number: seq });
  }

  #text(text: string): void {
    if (text === '') return;
    if (!this.#open) {
      this.#messages += 1;
      const replyId = this.#log.replyId ?? `msg_${this.#log.turnId}`;
      // The reply's id names its first message item; text after tool calls opens another.
      const id = this.#messages === 1 ? replyId : `${replyId}_${this.#messages}`;
      this.#open = { index: this.#output.length, id, text: '' };
      const item = { ...messageItem(id, '', 'in_progress'), content: [] };
      this.#output.push(item);
      this.#emit({ type: 'response.output_item.added', output_index: this.#open.index, item });
      this.#emit({
        type: 'response.content_part.added',
        ...this.#at(this.#open),
        part: { type: 'output_text', text: '', annotations: [] },
      });
    }
    this.#open.text += text;
    // A resumed stream gets the part of the delta it lacks, numbered as the whole delta.
    const lacking = Math.min(text.length, this.#pos + text.length - 1 - this.#after);
    const delta = text.slice(text.length - Math.max(lacking, 0));
    this.#emit(
      { type: 'response.output_text.delta', ...this.#at(this.#open), delta, logprobs: [] },
      text.length,
    );
  }

  #at(open: { index: number; id: string }) {
    return { item_id: open.id, output_index: open.index, content_index: 0 };
  }

  /** Ends the message item being written, if any. */
  #endText(status: 'completed' | 'incomplete' = 'completed'): void {
    const open = this.#open;
    if (!open) return;
    this.#open = null;
    const part = { type: 'output_text' as const, text: open.text, annotations: [] };
    this.#emit({ type: 'response.output_text.done', ...this.#at(open), text: open.text, logprobs: [] });
    this.#emit({ type: 'response.content_part.done', ...this.#at(open), part });
    const item = messageItem(open.id, open.text, status);
    this.#output[open.index] = item;
    this.#emit({ type: 'response.output_item.done', output_index: open.index, item });
  }

  /** An item told whole: added, then done. */
  #item(item: ResponseOutputItem): void {
    this.#endText();
    const index = this.#output.length;
    this.#output.push(item);
    this.#emit({
      type: 'response.output_item.added',
      output_index: index,
      item: { ...item, status: 'in_progress' },
    });
    this.#emit({ type: 'response.output_item.done', output_index: index, item });
  }

  #response(result: Parameters<typeof responseObject>[1]): ResponseObject {
    return responseObject({ ...this.#facts, turnId: this.#log.turnId }, result, [...this.#output]);
  }

  /**
   * An answer that left calls of the step waiting (an output or a decision not sent yet): they are told again,
   * so that the response ends with every call it still waits for.
   */
  #stillWaiting(): void {
    const last = this.#log.items.findLast((item) => 'pause' in item);
    if (!last || !('pause' in last)) return;
    const told = new Set(this.#output.flatMap((item) => ('call_id' in item ? [item.call_id] : [])));
    for (const a of last.pause.approvals) {
      if (told.has(a.call_id)) continue;
      this.#item(toolItems({ call_id: a.call_id, name: a.tool, input: a.input, done: false }).call);
    }
  }

  /** Whether the turn's last pause waits only for calls to the client's functions. */
  #waitsForFunctions(): boolean {
    const last = this.#log.items.findLast((item) => 'pause' in item);
    const declared = new Set((this.#facts.tools ?? []).map((t) => t.name));
    return last !== undefined && 'pause' in last && waitsForFunctions(last.pause.approvals, declared);
  }

  #finish(): void {
    this.#done = true;
    const end = this.#log.end;
    if (end && 'paused' in end && this.#fromStep !== null) this.#stillWaiting();
    let response: ResponseObject;
    if (end && 'ok' in end) response = this.#response(end.ok);
    else if (end && 'error' in end) {
      response = {
        ...this.#response(null),
        status: 'failed',
        error: { code: end.error.code, message: end.error.message },
      };
    } else if (this.#waitsForFunctions()) {
      // The turn waits for the client's functions: this response is complete, its calls the client's to run.
      response = {
        ...this.#response(null),
        status: 'completed',
        completed_at: Math.floor(Date.now() / 1000),
      };
    } else {
      // The turn waits for decisions on its tool calls: this response stops here, incomplete.
      response = {
        ...this.#response(null),
        status: 'incomplete',
        incomplete_details: { reason: 'awaiting_approval' },
      };
    }
    this.#endText(response.status === 'incomplete' ? 'incomplete' : 'completed');
    const final = { ...response, output: this.#output };
    if (final.status === 'completed') this.#emit({ type: 'response.completed', response: final });
    // A cancelled response is cut short, not failed: the text it wrote is stored as its reply.
    else if (final.status === 'failed') this.#emit({ type: 'response.failed', response: final });
    else this.#emit({ type: 'response.incomplete', response: final });
    this.#sse.close();
  }
}

/** Answers with `log`'s events after `after` (null: from the start), following the log while it changes. */
export function answerWithResponses(
  reply: FastifyReply,
  log: TurnLog,
  options: {
    facts: Facts;
    after: number | null;
    pingMs: number;
    replayed?: boolean;
    /** An answer's stream: after the pause of `step`, without the outputs the client sent for `functions`. */
    from?: { step: number; functions: ReadonlySet<string> };
  },
): FastifyReply {
  const sse = new SseStream(options.pingMs);
  const writer = new ResponseLogWriter(log, sse, options.facts, options.after, options.from ?? null);
  const pump = () => writer.pump();
  const unfollow = log.follow(pump);
  sse.once('close', unfollow);
  if (options.after !== null) sse.comment('resumed');
  pump();
  reply.code(200).headers(SSE_HEADERS);
  countOpenStream(reply, 'sse');
  if (options.replayed) reply.header('idempotent-replayed', 'true');
  return reply.send(sse);
}

// A turn as the Open Responses event stream: response.created and response.in_progress once the user's
// message is stored, output items as the agent calls tools and writes (output_item.added, content_part.added,
// output_text.delta, output_text.done, content_part.done, output_item.done), then response.completed (or
// .incomplete, .failed). The events are drawn from the turn's log (turns/log.ts), the one a streamed send
// keeps, so that a dropped client resumes from any process: followed live on the session's owner, rebuilt
// from the store once the turn is finished. Their sequence_numbers count the turn's units as Parley's own
// event ids do: one per event, and one per character of a text delta (a delta's number is its last
// character's), so that a live stream and its replay number every event alike, however the text was cut.
import type { FastifyReply } from 'fastify';
import type { ResponseObject, ResponseOutputItem, ResponseStreamEvent } from '#schemas';
import { countOpenStream } from '../server/metrics.ts';
import type { TurnLog } from '../turns/log.ts';
import { SSE_HEADERS, SseStream } from '../turns/sse.ts';
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

  constructor(log: TurnLog, sse: SseStream, facts: Facts, after: number | null) {
    this.#log = log;
    this.#sse = sse;
    this.#facts = facts;
    this.#after = after ?? -1;
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
    for (; this.#items < log.items.length; this.#items++) {
      const item = log.items[this.#items];
      if (!item) continue;
      if ('text' in item) this.#text(item.text);
      else if ('tool' in item && item.tool !== 'tool.approval_requested') {
        const call = item.data as { call_id: string; name: string; input?: unknown; output?: unknown };
        const done = item.tool === 'tool.completed';
        const items = toolItems({ ...call, done });
        const whole = done ? items.output : items.call;
        if (whole) this.#item(whole);
      }
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

  #finish(): void {
    this.#done = true;
    const end = this.#log.end;
    let response: ResponseObject;
    if (end && 'ok' in end) response = this.#response(end.ok);
    else if (end && 'error' in end) {
      response = {
        ...this.#response(null),
        status: 'failed',
        error: { code: end.error.code, message: end.error.message },
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
  options: { facts: Facts; after: number | null; pingMs: number; replayed?: boolean },
): FastifyReply {
  const sse = new SseStream(options.pingMs);
  const writer = new ResponseLogWriter(log, sse, options.facts, options.after);
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

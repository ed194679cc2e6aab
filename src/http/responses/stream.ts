// A turn as the Open Responses event stream: response.created and response.in_progress once the user's
// message is stored, output items as the agent calls tools and writes (output_item.added, content_part.added,
// output_text.delta, output_text.done, content_part.done, output_item.done), then response.completed (or
// .incomplete, .failed). Every event carries its sequence_number, from 0. The turn does not depend on the
// client: if it goes away, the reply is still completed and stored.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { ResponseObject, ResponseOutputItem, ResponseStreamEvent } from '#schemas';
import type { TurnObserver } from '../../actors/operation-context.ts';
import type { SendResult } from '../../actors/session-service.ts';
import { countOpenStream } from '../server/metrics.ts';
import { asAppError } from '../turns/events.ts';
import { SSE_HEADERS, SseStream } from '../turns/sse.ts';
import { messageItem, type ResponseFacts, responseObject, textOf, toolItems } from './mapping.ts';

type Facts = Omit<ResponseFacts, 'turnId'>;

/** Writes one response's events, numbering them and keeping the output items told so far. */
class ResponseEvents {
  readonly sse: SseStream;
  readonly output: ResponseOutputItem[] = [];
  #seq = 0;
  #id = '';
  /** The message item being written, if any: its index in output and its text so far. */
  #open: { index: number; id: string; text: string } | null = null;
  #replyId: string | null = null;
  #messages = 0;

  constructor(pingMs: number) {
    this.sse = new SseStream(pingMs);
  }

  #emit(
    event: ResponseStreamEvent extends infer E
      ? E extends unknown
        ? Omit<E, 'sequence_number'>
        : never
      : never,
  ) {
    const data = { ...event, sequence_number: this.#seq };
    this.sse.send(event.type, `${this.#id}:${this.#seq}`, data);
    this.#seq += 1;
  }

  start(response: ResponseObject, replyId: string | null): void {
    this.#id = response.id;
    this.#replyId = replyId;
    this.#emit({ type: 'response.created', response });
    this.#emit({ type: 'response.in_progress', response });
  }

  text(delta: string): void {
    if (delta === '') return;
    if (!this.#open) {
      this.#messages += 1;
      // The reply's id names its first message item; text after tool calls opens another.
      const id =
        this.#messages === 1 && this.#replyId ? this.#replyId : `${this.#replyId ?? 'msg'}_${this.#messages}`;
      const item = messageItem(id, '', 'in_progress');
      item.content = [];
      this.#open = { index: this.output.length, id, text: '' };
      this.output.push(item);
      this.#emit({ type: 'response.output_item.added', output_index: this.#open.index, item });
      this.#emit({
        type: 'response.content_part.added',
        item_id: id,
        output_index: this.#open.index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
    }
    this.#open.text += delta;
    const at = { item_id: this.#open.id, output_index: this.#open.index, content_index: 0 };
    this.#emit({ type: 'response.output_text.delta', ...at, delta, logprobs: [] });
  }

  /** Ends the message item being written, if any. */
  endText(status: 'completed' | 'incomplete' = 'completed'): void {
    const open = this.#open;
    if (!open) return;
    this.#open = null;
    const at = { item_id: open.id, output_index: open.index, content_index: 0 };
    const part = { type: 'output_text' as const, text: open.text, annotations: [] };
    this.#emit({ type: 'response.output_text.done', ...at, text: open.text, logprobs: [] });
    this.#emit({ type: 'response.content_part.done', ...at, part });
    const item = messageItem(open.id, open.text, status);
    this.output[open.index] = item;
    this.#emit({ type: 'response.output_item.done', output_index: open.index, item });
  }

  /** An item told whole: added, then done. */
  item(item: ResponseOutputItem): void {
    this.endText();
    const index = this.output.length;
    this.output.push(item);
    this.#emit({
      type: 'response.output_item.added',
      output_index: index,
      item: { ...item, status: 'in_progress' },
    });
    this.#emit({ type: 'response.output_item.done', output_index: index, item });
  }

  finish(response: ResponseObject): void {
    this.endText(response.status === 'incomplete' ? 'incomplete' : 'completed');
    const final = { ...response, output: this.output };
    if (final.status === 'completed') this.#emit({ type: 'response.completed', response: final });
    // A cancelled response is cut short, not failed: the text it wrote is stored as its reply.
    else if (final.status === 'incomplete' || final.status === 'cancelled')
      this.#emit({ type: 'response.incomplete', response: final });
    else this.#emit({ type: 'response.failed', response: final });
    this.sse.close();
  }
}

export interface ResponseStreamOptions {
  facts: Facts;
  run(observer: TurnObserver): Promise<SendResult>;
  log: FastifyBaseLogger;
  pingMs: number;
}

/**
 * Starts the turn and answers once it has started (or, replayed, ended). Errors before that reject (the route
 * answers them as JSON); errors after it end the stream with response.failed.
 */
export function streamResponse(reply: FastifyReply, options: ResponseStreamOptions): Promise<FastifyReply> {
  const events = new ResponseEvents(options.pingMs);
  let turnId: string | null = null;
  const facts = () => ({ ...options.facts, turnId: turnId ?? '' });

  return new Promise<FastifyReply>((resolve, reject) => {
    const begin = (replayed: boolean) => {
      reply.code(200).headers(SSE_HEADERS);
      if (replayed) reply.header('idempotent-replayed', 'true');
      countOpenStream(reply, 'sse');
      resolve(reply.send(events.sse));
    };
    const observer: TurnObserver = {
      started: (id, _message, replyId) => {
        turnId = id;
        events.start(responseObject(facts(), null, []), replyId);
        begin(false);
      },
      delta: (text) => events.text(text),
      toolStarted: (call) => events.item(toolItems({ ...call, done: false }).call),
      toolCompleted: (call) => {
        const { output } = toolItems({ ...call, done: true });
        if (output) events.item(output);
      },
    };

    options.run(observer).then(
      (result) => {
        if (turnId === null) {
          // Nothing ran now (a replay, or a join of the same request still running): tell the whole turn.
          turnId = result.turn_id;
          const message = result.agent_message;
          events.start(responseObject(facts(), null, []), message?.id ?? null);
          for (const call of message?.tool_calls ?? []) {
            const items = toolItems({ ...call, call_id: call.id, done: true });
            events.item(items.call);
            if (items.output) events.item(items.output);
          }
          if (message) events.text(textOf(message));
          begin(result.replayed);
        }
        events.finish(responseObject(facts(), result));
      },
      (err: unknown) => {
        if (turnId === null) return reject(err);
        const error = asAppError(err);
        if (error.statusCode >= 500) options.log.error({ err: error }, 'streamed response failed');
        const failed = responseObject(facts(), null, []);
        events.finish({ ...failed, status: 'failed', error: { code: error.code, message: error.message } });
      },
    );
  });
}

// Reads Server-Sent Events as a browser would: blocks ended by a blank line, `event`/`id`/`data` fields, `:`
// lines as comments. Written here, not imported from src/, so that the tests check the wire on their own.
import type { Dispatcher } from 'undici';
import type { Message } from './sessions.ts';

export interface EventData {
  turn_id: string;
  session_id?: string;
  user_message?: Message | null;
  message_id?: string | null;
  index?: number;
  delta?: { type: string; text: string };
  message?: Message;
  conversation_status?: string;
  usage?: { input_tokens: number; output_tokens: number } | null;
  error?: {
    code: string;
    name: string;
    message: string;
    context?: Record<string, unknown>;
    retry_after_seconds?: number;
  };
  /** turn.failed: whether deltas were sent before the failure. */
  partial?: boolean;
  /** Conversation events: a handoff, why a session ended, an approval asked, the approvals a turn waits for. */
  handoff?: { requested_at: string; reason: string | null; by: string };
  reason?: string | null;
  tool?: string;
  approvals?: { tool: string; approver: string }[];
}

export interface SseEvent {
  event: string;
  id: string | undefined;
  data: EventData;
}

/** Parses the complete events of `raw` (blocks ended by a blank line); `:` lines are comments. */
export function parseSse(raw: string): { events: SseEvent[]; comments: string[] } {
  const blocks = raw.replace(/\r\n?/g, '\n').split('\n\n');
  blocks.pop(); // what follows the last blank line is not a complete event yet
  const events: SseEvent[] = [];
  const comments: string[] = [];
  for (const block of blocks) {
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '') continue;
      if (line.startsWith(':')) {
        comments.push(line.slice(1).trim());
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length > 0) events.push({ event, id, data: JSON.parse(data.join('\n')) as EventData });
  }
  return { events, comments };
}

export /** A response read piece by piece, keeping the raw text it has seen. */
class StreamReader {
  raw = '';
  readonly #chunks: AsyncIterator<Buffer>;
  readonly #decoder = new TextDecoder();

  readonly status: number;
  readonly headers: Dispatcher.ResponseData['headers'];
  readonly body: Dispatcher.ResponseData['body'];

  constructor(
    status: number,
    headers: Dispatcher.ResponseData['headers'],
    body: Dispatcher.ResponseData['body'],
  ) {
    this.status = status;
    this.headers = headers;
    this.body = body;
    this.#chunks = body[Symbol.asyncIterator]();
  }

  get events(): SseEvent[] {
    return parseSse(this.raw).events;
  }

  async #next(): Promise<boolean> {
    const next = await this.#chunks.next();
    if (next.done) return false;
    this.raw += this.#decoder.decode(next.value, { stream: true });
    return true;
  }

  /** Reads until `done(events)` holds or the body ends. */
  async until(done: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
    while (!done(this.events) && (await this.#next()));
    return this.events;
  }

  /** Reads to the end of the body. */
  async all(): Promise<SseEvent[]> {
    while (await this.#next());
    return this.events;
  }
}

/**
 * A stream's events as what they tell, place by place (event ids:
 * docs/guides/streaming.md#event-ids-disconnects-and-replays; a unit is a character of reply text or a tool
 * event, and an event's seq is 1 + the units up to its end): a delta with id `t:n` and text of length k holds
 * places n-k … n-1, every other event the place seq - 1. Two streams of one turn tell the same iff these are
 * equal, however their text was cut into deltas.
 */
export function placesOf(events: readonly SseEvent[]): Map<number, string> {
  const places = new Map<number, string>();
  for (const e of events) {
    const seq = Number(e.id?.split(':').at(-1));
    if (e.event === 'message.delta') {
      const text = e.data.delta?.text ?? '';
      for (let i = 0; i < text.length; i++) places.set(seq - text.length + i, `char:${text[i]}`);
    } else places.set(seq - 1, `${e.event}:${JSON.stringify(e.data)}`);
  }
  return places;
}

/** The seq of an event (the part of its id after the turn id). */
export const seqOf = (e: SseEvent) => Number(e.id?.split(':').at(-1));

// The conversation event stream (docs/guides/humans.md#the-conversation-event-stream), both families:
// `GET <session>/events` sends every event of the session's log after `Last-Event-ID` (or `?after=`), then
// each event as it is committed, whoever caused it, until the session ends or the client goes. The log is
// committed with the changes it tells (actors/session-events.ts), ids are its per-session seq, so a stream
// resumed on any process, after any ownership move, sends exactly what follows its last id. Routed to the
// session's owner like every session route (a commit there wakes the stream at once); a stream left on a
// process that is no longer the owner reads the log every `pollMs` (docs/internals/decisions.md#the-conversation-event-stream).
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authErrors, conversationEventsResponse, errorEnvelope } from '#schemas';
import { type MessageView, type PublicMessage, publicMessage } from '../../actors/public-message.ts';
import { ValidationError } from '../../errors.ts';
import type { SessionEventRecord, Store } from '../../store/store.ts';
import { countOpenStream } from '../server/metrics.ts';
import type { EventStreams } from './event-streams.ts';
import type { SendFamily, SendOptions } from './send.ts';
import { SSE_HEADERS, SseStream } from './sse.ts';

type RouteScope = Parameters<FastifyPluginAsyncZod>[0];

/** Events read from the log at once: a stream far behind catches up in pages. */
const PAGE = 100;
/** A reader whose buffer stays full this long is dropped: it resumes from its last id when it can. */
const SLOW_MS = 10_000;

const eventId = z.string().max(20);

export function registerEventsRoute(
  app: RouteScope,
  sessionPath: string,
  family: SendFamily,
  { store, sessions, pingMs, streams }: SendOptions & { streams: EventStreams },
): void {
  app.addHook('preClose', (done) => {
    streams.closeAll();
    done();
  });
  app.get(
    `${sessionPath}/events`,
    {
      config: { session: family.param },
      schema: {
        tags: family.tags,
        summary:
          'Follow everything that happens in the session as Server-Sent Events, from after Last-Event-ID',
        params: z.object({ [family.param]: z.string() }),
        headers: z.object({ 'last-event-id': eventId.optional() }),
        querystring: z.object({ after: eventId.optional() }),
        response: { 200: conversationEventsResponse, 503: errorEnvelope, ...authErrors },
      },
    },
    async (request, reply) => {
      const target = family.target(request, request.params[family.param] ?? '');
      await sessions.getSession(target.tenantId, target.sessionId, target.authorize);
      const header = request.headers['last-event-id'];
      const after =
        header !== undefined
          ? seqOf(header, ['header', 'last-event-id'])
          : request.query.after !== undefined
            ? seqOf(request.query.after, ['query', 'after'])
            : 0;
      const view = family.view(request);
      const sse = new SseStream(pingMs);
      const follow = new LogFollower(store, target.sessionId, after, sse, {
        message: view.message,
        tools: view.tools,
        allApprovals: family.by === 'operator',
      });
      const release = streams.open(target.sessionId, { wake: () => follow.pull(), close: () => sse.close() });
      const poll = setInterval(() => follow.pull(), streams.bounds.pollMs);
      poll.unref();
      sse.once('close', () => {
        clearInterval(poll);
        follow.stop();
        release();
      });
      sse.onDemand = () => follow.drained();
      // Answered at once: the client knows it is following even before anything happens.
      sse.comment('following');
      follow.pull();
      return answer(reply, sse);
    },
  );
}

function answer(reply: FastifyReply, sse: SseStream): FastifyReply {
  reply.code(200).headers(SSE_HEADERS);
  countOpenStream(reply, 'sse');
  return reply.send(sse);
}

/** What a caller is shown of the log: its family's view of messages, tool events, and approvals. */
interface EventView {
  message: MessageView;
  tools: boolean;
  allApprovals: boolean;
}

/** Sends a session's log from after `after`, one page at a time, whenever it is asked to look again. */
class LogFollower {
  readonly #store: Store;
  readonly #sessionId: string;
  readonly #sse: SseStream;
  readonly #view: EventView;
  #last: number;
  #reading = false;
  #again = false;
  #stopped = false;
  #slow: NodeJS.Timeout | undefined;

  constructor(store: Store, sessionId: string, after: number, sse: SseStream, view: EventView) {
    this.#store = store;
    this.#sessionId = sessionId;
    this.#last = after;
    this.#sse = sse;
    this.#view = view;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#slow);
  }

  /** The reader took what was held back: it keeps its place, and what waits is read now. */
  drained(): void {
    clearTimeout(this.#slow);
    this.#slow = undefined;
    this.pull();
  }

  /** Reads and sends what the log holds after the last event sent; one read at a time. */
  pull(): void {
    if (this.#stopped) return;
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = true;
    this.#read()
      .catch(() => this.#sse.close())
      .finally(() => {
        this.#reading = false;
      });
  }

  async #read(): Promise<void> {
    do {
      this.#again = false;
      if (this.#sse.backedUp) return this.#waitForReader();
      const events = await this.#store.sessionEvents(this.#sessionId, this.#last, PAGE);
      const messages = await this.#messagesOf(events);
      for (const event of events) {
        if (this.#stopped) return;
        const data = shown(event, this.#view, messages);
        if (data) this.#sse.send(event.type, String(event.seq), data);
        this.#last = event.seq;
        if (event.type === 'session.closed' || event.type === 'session.expired') {
          // Nothing follows the session's end.
          this.stop();
          this.#sse.close();
          return;
        }
      }
      if (events.length === PAGE) this.#again = true;
    } while (this.#again && !this.#stopped);
  }

  /** The messages the events name (by id: the log does not hold them twice), as the API shows them. */
  async #messagesOf(events: readonly SessionEventRecord[]): Promise<Map<string, PublicMessage>> {
    const ids = events.flatMap((e) => {
      const { message_id, user_message_id } = e.data as { message_id?: string; user_message_id?: string };
      return [message_id, user_message_id].filter((id) => typeof id === 'string');
    });
    if (ids.length === 0) return new Map();
    const stored = await this.#store.messagesById(this.#sessionId, ids);
    return new Map(stored.map((m) => [m.id, publicMessage(m)]));
  }

  /**
   * The reader is behind: it gets until SLOW_MS from when it fell behind to take what was sent (then
   * `drained`), else it goes; the wakes and polls meanwhile read nothing and leave the clock running.
   */
  #waitForReader(): void {
    if (this.#slow) return;
    this.#slow = setTimeout(() => this.#sse.destroy(), SLOW_MS);
    this.#slow.unref();
  }
}

/**
 * The event's data as the caller is shown it, with the messages it names in `messages`; null when the caller
 * is not shown the event at all.
 */
function shown(
  event: SessionEventRecord,
  v: EventView,
  messages: ReadonlyMap<string, PublicMessage>,
): object | null {
  const { message_id, user_message_id, ...data } = event.data as Record<string, unknown>;
  const message = (id: unknown) => {
    const found = messages.get(String(id));
    return found ? v.message(found) : null;
  };
  switch (event.type) {
    case 'tool.started':
    case 'tool.completed':
      return v.tools ? data : null;
    case 'tool.approval_requested':
      return v.allApprovals || data.approver === 'user' ? data : null;
    case 'turn.awaiting_approval': {
      const approvals = (data.approvals as { approver: string }[]).filter(
        (a) => v.allApprovals || a.approver === 'user',
      );
      return { ...data, approvals };
    }
    case 'message.created':
    case 'message.completed':
      return { ...data, message: message(message_id) };
    case 'turn.started':
      return { ...data, user_message: message(user_message_id) };
    default:
      return data;
  }
}

/** A Last-Event-ID of this stream: the seq of an event, 0 for the start; anything else is a 422 at `loc`. */
function seqOf(id: string, loc: string[]): number {
  if (!/^\d{1,15}$/.test(id)) {
    throw ValidationError.at(loc, 'Expected an event id of this stream: a whole number.', 'value_error');
  }
  return Number(id);
}

// The events of a session's conversation event stream (GET …/events, both families): the turn events of
// turn-events.ts but message.delta, plus message.created, the handoff's two and the session's end, each with
// the event's place in the session (1, 2, …) as its id. Described for the OpenAPI document and typed for
// @parley/client, whose ConversationEvent comes from here.
import { z } from 'zod';
import { conversationMessageSchema, messageSchema, usageSchema } from './messages.ts';
import { handoffSchema } from './sessions.ts';
import { turnEventSchema } from './turn-events.ts';

/** The names of the stream's events; a client ignores any other name (new events may be added). */
export const CONVERSATION_EVENT_NAMES = [
  'message.created',
  'turn.started',
  'tool.started',
  'tool.completed',
  'tool.approval_requested',
  'turn.awaiting_approval',
  'message.completed',
  'turn.completed',
  'turn.cancelled',
  'turn.failed',
  'session.handoff_requested',
  'session.handed_back',
  'session.closed',
  'session.expired',
] as const;

const placeId = z.string().meta({
  description: "The event's place in the session, a whole number; send it as Last-Event-ID to resume",
});

function event<N extends (typeof CONVERSATION_EVENT_NAMES)[number], D extends z.ZodType>(
  name: N,
  data: D,
  description: string,
) {
  return z.object({ event: z.literal(name), id: placeId, data }).meta({ description });
}

/** Every event of the stream, discriminated by `event`, showing messages as `message` does. */
export function conversationEventSchema<M extends z.ZodType>(message: M) {
  type TurnEvent = ReturnType<typeof turnEventSchema<M, typeof usageSchema>>['options'][number];
  // message.created is told here with a turn_id that is null for a message of no turn (an operator's).
  type Told = Exclude<TurnEvent, { shape: { event: z.ZodLiteral<'message.delta' | 'message.created'> } }>;
  const turnEvents = turnEventSchema(message, usageSchema)
    .options.filter(
      (o): o is Told => o.shape.event.value !== 'message.delta' && o.shape.event.value !== 'message.created',
    )
    .map((o) => o.extend({ id: placeId }));
  const sessionEnd = z.object({ session_id: z.string(), reason: z.string().nullable() });
  return z.union([
    event(
      'message.created',
      z.object({ turn_id: z.string().nullable(), message: message.nullable() }),
      "A message is stored: the user's, the agent's, an operator's (with its author) or an inactivity message",
    ),
    ...turnEvents,
    event(
      'session.handoff_requested',
      z.object({ session_id: z.string(), handoff: handoffSchema }),
      'People handle the session from now on',
    ),
    event('session.handed_back', z.object({ session_id: z.string() }), 'The agent answers again'),
    event('session.closed', sessionEnd, 'The session ended; the last event of the stream'),
    event('session.expired', sessionEnd, 'The session expired; the last event of the stream'),
  ]);
}

/** An event of the stream read with an API key (messages with their metadata, tool events). */
export type SessionEvent = z.output<ReturnType<typeof conversationEventSchema<typeof messageSchema>>>;

/** An event of the stream read with a session token (messages without metadata). */
export type ConversationEvent = z.output<
  ReturnType<typeof conversationEventSchema<typeof conversationMessageSchema>>
>;

/** The 200 answer of GET …/events, for the OpenAPI document. */
export const conversationEventsResponse = {
  description:
    'Server-Sent Events: every message and turn event of the session as it is committed, whoever caused it, from after Last-Event-ID; ends after session.closed or session.expired',
  content: {
    'text/event-stream': {
      schema: conversationEventSchema(z.union([messageSchema, conversationMessageSchema])).meta({
        id: 'ConversationEvent',
        description:
          'One event of the stream, framed as `event: <event>`, `id: <id>`, `data: <data as JSON>`; `: ping` comments between them. Ignore events of other names.',
      }),
    },
  },
};

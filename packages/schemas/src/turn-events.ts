// The events of a streamed turn as zod schemas: what the server writes, described for the OpenAPI document
// (sseResponse) and typed for @parley/client, whose TurnEvent comes from here. Built for a message schema,
// because the families show messages differently (the public one without metadata).
import { z } from 'zod';
import { approvalSchema, approverSchema } from './approvals.ts';
import { errorEnvelope, timestamp } from './common.ts';
import { conversationMessageSchema, messageSchema, usageSchema } from './messages.ts';
import { sessionStatus } from './sessions.ts';

/** The names of a turn's events; a client ignores any other name (new events may be added). */
export const TURN_EVENT_NAMES = [
  'turn.started',
  'message.delta',
  'tool.started',
  'tool.completed',
  'tool.approval_requested',
  'message.completed',
  'turn.completed',
  'turn.awaiting_approval',
  'turn.cancelled',
  'turn.failed',
  'message.created',
] as const;

const turnId = z.string().meta({ description: 'The turn, `turn_…`' });

/** One event: its name, its id `<turn_id>:<seq>` (seq grows through the turn) and its data. */
function event<N extends (typeof TURN_EVENT_NAMES)[number], D extends z.ZodType>(
  name: N,
  data: D,
  description: string,
) {
  return z
    .object({
      event: z.literal(name),
      id: z
        .string()
        .meta({ description: 'The event id, `<turn_id>:<seq>`; send it as Last-Event-ID to resume' }),
      data,
    })
    .meta({ description });
}

/**
 * Every event of a turn, a union discriminated by `event`, showing messages as `message` does and usage as
 * `usage` (a factory: each family shows messages its own way).
 */
export function turnEventSchema<M extends z.ZodType, U extends z.ZodType>(message: M, usage: U) {
  return z.discriminatedUnion('event', [
    event(
      'turn.started',
      z.object({ turn_id: turnId, session_id: z.string(), user_message: message.nullable() }),
      "The user's message is stored. Sent again for the same turn_id when an interrupted turn is sent again: then drop the text held for it",
    ),
    event(
      'message.delta',
      z.object({
        turn_id: turnId,
        message_id: z.string().nullable().meta({ description: "The reply's id" }),
        index: z.number().int().meta({ description: 'The content block (0)' }),
        delta: z.object({ type: z.literal('text'), text: z.string() }),
      }),
      'A piece of the reply text',
    ),
    event(
      'tool.started',
      z.object({ turn_id: turnId, call_id: z.string(), name: z.string(), input: z.unknown() }),
      "The model's tool call is stored and about to run (where the caller sees tool calls)",
    ),
    event(
      'tool.completed',
      z.object({
        turn_id: turnId,
        call_id: z.string(),
        name: z.string(),
        status: z.enum(['ok', 'error']),
        output: z.unknown(),
      }),
      "The tool call's result is stored",
    ),
    event(
      'tool.approval_requested',
      z.object({
        turn_id: turnId,
        call_id: z.string(),
        tool: z.string(),
        input: z.unknown(),
        approver: approverSchema,
        expires_at: timestamp,
      }),
      'The tool call is stored and waits for a decision: it runs only once approved (the conversation family is told only of calls its end user may decide)',
    ),
    event(
      'turn.awaiting_approval',
      z.object({
        turn_id: turnId,
        approvals: z.array(approvalSchema).meta({
          description: 'The calls still waiting when the event is sent (those the caller may decide)',
        }),
      }),
      "The turn's step waits for decisions; the last event of this part of the turn (a decision goes on with it)",
    ),
    event(
      'message.completed',
      z.object({ turn_id: turnId, message }),
      'The reply is stored: the same message a plain send answers',
    ),
    event(
      'turn.completed',
      z.object({
        turn_id: turnId,
        session_id: z.string(),
        conversation_status: sessionStatus,
        usage: usage.nullable().meta({ description: 'Null when no model was called now' }),
      }),
      'The last event of a turn that ended with a reply',
    ),
    event(
      'turn.cancelled',
      z.object({ turn_id: turnId, session_id: z.string(), conversation_status: sessionStatus }),
      'The last event of a cancelled turn: its reply (message.completed, stop_reason cancelled) holds what was written until then',
    ),
    event(
      'turn.failed',
      z.object({
        turn_id: turnId,
        error: z.object({
          code: z.string(),
          name: z.string(),
          message: z.string(),
          context: z.record(z.string(), z.unknown()).optional(),
          retry_after_seconds: z.number().optional(),
        }),
        partial: z
          .boolean()
          .meta({ description: 'Text was sent that is not stored: the client discards it' }),
      }),
      'The last event of a turn that ended without a reply; the user message stays stored',
    ),
    event(
      'message.created',
      z.object({ turn_id: turnId, session_id: z.string(), message }),
      "Only while people handle the session: the user's message is stored and no model answers; the stream's only event",
    ),
  ]);
}

/** An event of a turn streamed with an API key (messages with their metadata, tool events). */
export type SessionTurnEvent = z.output<
  ReturnType<typeof turnEventSchema<typeof messageSchema, typeof usageSchema>>
>;

/** An event of a turn streamed with a session token (messages without metadata). */
export type ConversationTurnEvent = z.output<
  ReturnType<typeof turnEventSchema<typeof conversationMessageSchema, typeof usageSchema>>
>;

/** The 200 answer of a streamed send, for the OpenAPI document. */
export const sseResponse = {
  description:
    'Server-Sent Events (while people handle the session, only message.created): turn.started, message.delta… (with tool.started and tool.completed between the steps of an agent that calls tools, where the caller sees tool calls), message.completed, turn.completed (or turn.failed, or turn.cancelled); a turn whose calls wait for decisions tells tool.approval_requested and ends with turn.awaiting_approval',
  content: {
    'text/event-stream': {
      // Each event of the stream is one of these (the message is the family's: with metadata for an API key).
      schema: turnEventSchema(z.union([messageSchema, conversationMessageSchema]), usageSchema).meta({
        id: 'TurnEvent',
        description:
          'One event of the stream, framed as `event: <event>`, `id: <id>`, `data: <data as JSON>`; `: ping` comments between them. Ignore events of other names.',
      }),
    },
  },
};

/** Errors a turn may end in, besides those of every authenticated route. */
export const turnErrors = {
  409: errorEnvelope,
  502: errorEnvelope,
  503: errorEnvelope,
  504: errorEnvelope,
} as const;

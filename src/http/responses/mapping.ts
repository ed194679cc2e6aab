// How a Parley turn reads as an Open Responses response object (docs/guides/openai-sdks.md): the response id
// names the session and the turn, `model` is the agent, the reply's tool calls are `function_call` and
// `function_call_output` items before its text, a `message` item, and `usage` is the reply's.

import {
  type FunctionToolParam,
  type ResponseAnswerItem,
  type ResponseCreate,
  type ResponseInputMessage,
  type ResponseObject,
  type ResponseOutputItem,
  responseSettings,
} from '#schemas';
import type { PublicMessage } from '../../actors/public-message.ts';
import type { BlockInput } from '../../actors/session-inputs.ts';
import type { SendResult } from '../../actors/session-service.ts';
import { ValidationError } from '../../errors.ts';
import type { StopReason } from '../../store/store.ts';

/**
 * A response id: `resp_`, then the session's id and the turn's joined by a dot, so that any node can tell the
 * session a response belongs to (and read it, or forward to its owner) without a lookup.
 */
export const responseIdOf = (sessionId: string, turnId: string) => `resp_${sessionId}.${turnId}`;

/** The session and turn a response id names; null when it is not one of Parley's. */
export function parseResponseId(id: string): { sessionId: string; turnId: string } | null {
  const match = /^resp_([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)$/.exec(id);
  return match?.[1] && match[2] ? { sessionId: match[1], turnId: match[2] } : null;
}

/** The session a request continues (`conversation` or `previous_response_id`); null for a new one. */
export function continuedSession(body: ResponseCreate): string | null {
  if (body.conversation && body.previous_response_id) {
    throw ValidationError.at(
      ['body', 'previous_response_id'],
      'Send either conversation or previous_response_id, not both',
      'value_error',
    );
  }
  if (body.conversation)
    return typeof body.conversation === 'string' ? body.conversation : body.conversation.id;
  if (!body.previous_response_id) return null;
  const parsed = parseResponseId(body.previous_response_id);
  if (!parsed) {
    throw ValidationError.at(
      ['body', 'previous_response_id'],
      'Not a response id of this service',
      'value_error',
    );
  }
  return parsed.sessionId;
}

/** The session a raw (unvalidated) body continues, for routing it to the session's owner; null if none. */
export function continuedSessionOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null) return null;
  const { conversation, previous_response_id: previous } = body as Record<string, unknown>;
  if (typeof conversation === 'string') return conversation;
  if (typeof conversation === 'object' && conversation !== null) {
    const { id } = conversation as Record<string, unknown>;
    if (typeof id === 'string') return id;
  }
  return typeof previous === 'string' ? (parseResponseId(previous)?.sessionId ?? null) : null;
}

/**
 * What the request's input is: a user message (its content, and where each block's file is named), or the
 * answers a paused response waits for (the schema allows nothing else).
 */
export function requestInput(
  input: ResponseCreate['input'],
):
  | { content: string | BlockInput[]; fileAt: (i: number) => (string | number)[] }
  | { answers: ResponseAnswerItem[] } {
  const fileAt = (i: number) => ['body', 'input', 0, 'content', i, 'file_id'];
  if (typeof input === 'string') return { content: input, fileAt };
  const first = input[0];
  if (!('role' in first))
    return { answers: input.flatMap((item): ResponseAnswerItem[] => ('role' in item ? [] : [item])) };
  return { content: userContent(first.content), fileAt };
}

/** A user message item's content as the content of a Parley message. */
export function userContent(content: ResponseInputMessage['content']): string | BlockInput[] {
  if (typeof content === 'string') return content;
  return content.map(
    (part): BlockInput =>
      part.type === 'input_text'
        ? { type: 'text', text: part.text }
        : { type: part.type === 'input_image' ? 'image' : 'file', file_id: part.file_id },
  );
}

/** A response's status for a reply's stop_reason, with why an incomplete one stopped. */
export function statusOf(stop: StopReason | null): {
  status: ResponseObject['status'];
  incomplete: string | null;
} {
  switch (stop) {
    case 'max_tokens':
      return { status: 'incomplete', incomplete: 'max_output_tokens' };
    case 'content_filter':
      return { status: 'incomplete', incomplete: 'content_filter' };
    case 'max_steps':
      return { status: 'incomplete', incomplete: 'max_tool_calls' };
    case 'cancelled':
      return { status: 'cancelled', incomplete: null };
    case 'error':
      return { status: 'failed', incomplete: null };
    default:
      return { status: 'completed', incomplete: null };
  }
}

const json = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value ?? null));

/** A tool call of the agent as the two items a client sees: the call and its result. */
export function toolItems(call: {
  call_id: string;
  name: string;
  input?: unknown;
  output?: unknown;
  done: boolean;
}): { call: ResponseOutputItem; output: ResponseOutputItem | null } {
  return {
    call: {
      type: 'function_call',
      id: `fc_${call.call_id}`,
      call_id: call.call_id,
      name: call.name,
      arguments: json(call.input),
      status: 'completed',
    },
    output: call.done
      ? {
          type: 'function_call_output',
          id: `fco_${call.call_id}`,
          call_id: call.call_id,
          output: json(call.output),
          status: 'completed',
        }
      : null,
  };
}

export const textOf = (message: PublicMessage) =>
  message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');

/** A message item with the reply's text in one `output_text` part. */
export const messageItem = (
  id: string,
  text: string,
  status: 'in_progress' | 'completed' | 'incomplete',
) => ({
  type: 'message' as const,
  id,
  role: 'assistant' as const,
  status,
  content: [{ type: 'output_text' as const, text, annotations: [] }],
});

/** The output of a finished turn: its tool calls' items, then the reply's message. */
export function outputOf(message: PublicMessage | null): ResponseOutputItem[] {
  if (!message) return [];
  const items: ResponseOutputItem[] = [];
  for (const call of message.tool_calls ?? []) {
    const { call: c, output } = toolItems({ ...call, call_id: call.id, done: true });
    items.push(c);
    if (output) items.push(output);
  }
  const status = statusOf(message.stop_reason).status === 'incomplete' ? 'incomplete' : 'completed';
  items.push(messageItem(message.id, textOf(message), status));
  return items;
}

export interface ResponseFacts {
  sessionId: string;
  turnId: string;
  agentId: string;
  createdAt: number;
  previousResponseId: string | null;
  metadata: Record<string, string> | null;
  /** The functions and instructions the request added (echoed as the specification asks); none when read. */
  tools?: FunctionToolParam[] | null | undefined;
  instructions?: string | null | undefined;
}

/** The functions a request declared, as the response's `tools` shows them (every field present). */
export const toolsOf = (tools: FunctionToolParam[] | null | undefined) =>
  (tools ?? []).map((t) => ({
    type: 'function' as const,
    name: t.name,
    description: t.description ?? null,
    parameters: t.parameters ?? null,
    strict: t.strict ?? null,
  }));

/** The functions a request declared, as the turn gives them to the model. */
export const functionsOf = (tools: FunctionToolParam[] | null | undefined) =>
  (tools ?? []).map((t) => ({
    name: t.name,
    description: t.description ?? '',
    input_schema: t.parameters ?? { type: 'object', properties: {} },
  }));

/** The response object of a turn: in progress (no result yet) or as `result` ended it. */
export function responseObject(
  facts: ResponseFacts,
  result: Pick<SendResult, 'agent_message'> | null,
  output: ResponseOutputItem[] = outputOf(result?.agent_message ?? null),
): ResponseObject {
  const message = result?.agent_message ?? null;
  const { status, incomplete } = result
    ? message
      ? statusOf(message.stop_reason)
      : { status: 'in_progress' as const, incomplete: null }
    : { status: 'in_progress' as const, incomplete: null };
  const usage = message?.usage ?? null;
  return {
    id: responseIdOf(facts.sessionId, facts.turnId),
    object: 'response',
    created_at: facts.createdAt,
    completed_at: message ? Math.floor(Date.parse(message.created_at) / 1000) : null,
    status,
    incomplete_details: incomplete ? { reason: incomplete } : null,
    model: facts.agentId,
    previous_response_id: facts.previousResponseId,
    instructions: facts.instructions || null,
    output,
    error: status === 'failed' ? { code: 'server_error', message: 'The model call failed.' } : null,
    ...responseSettings,
    tools: toolsOf(facts.tools),
    usage: usage
      ? {
          input_tokens: usage.input_tokens,
          output_tokens: usage.output_tokens,
          total_tokens: usage.input_tokens + usage.output_tokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens_details: { reasoning_tokens: 0 },
        }
      : null,
    metadata: facts.metadata ?? {},
    conversation: { id: facts.sessionId },
  };
}

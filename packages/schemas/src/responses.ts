// The Open Responses wire (docs/guides/openai-sdks.md): the response object, its stream events and OpenAI's
// error envelope; the request body is in response-inputs.ts.
import { z } from 'zod';
import { messageExample } from './messages.ts';
import { sessionExample } from './sessions.ts';

export * from './response-inputs.ts';

const outputText = z.object({
  type: z.literal('output_text'),
  text: z.string(),
  annotations: z.array(z.unknown()),
  logprobs: z.array(z.unknown()).optional(),
});

export const responseOutputItem = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('message'),
    id: z.string(),
    role: z.literal('assistant'),
    status: z.enum(['in_progress', 'completed', 'incomplete']),
    content: z.array(outputText),
  }),
  z.object({
    type: z.literal('function_call'),
    id: z.string(),
    call_id: z.string(),
    name: z.string(),
    arguments: z.string(),
    status: z.enum(['in_progress', 'completed', 'incomplete']),
  }),
  z.object({
    type: z.literal('function_call_output'),
    id: z.string(),
    call_id: z.string(),
    output: z.string(),
    status: z.enum(['in_progress', 'completed', 'incomplete']),
  }),
]);

export const responseUsage = z.object({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
  input_tokens_details: z.object({ cached_tokens: z.number().int() }),
  output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
});

export const RESPONSE_STATUSES = ['in_progress', 'completed', 'failed', 'incomplete', 'cancelled'] as const;

/**
 * The settings a response reports: fixed, since the agent's configuration decides the model's settings and a
 * request's own are ignored or refused.
 */
export const responseSettings = {
  tools: [] as unknown[],
  tool_choice: 'auto',
  truncation: 'disabled',
  parallel_tool_calls: true,
  text: { format: { type: 'text' as const } },
  top_p: 1,
  presence_penalty: 0,
  frequency_penalty: 0,
  top_logprobs: 0,
  temperature: 1,
  reasoning: null,
  max_output_tokens: null,
  max_tool_calls: null,
  store: true,
  background: false,
  service_tier: 'default',
  safety_identifier: null,
  prompt_cache_key: null,
};

/** The reply of the messages' example as an output item. */
export const replyItemExample = {
  type: 'message',
  id: messageExample.id,
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text: 'We are open 9:00 to 18:00, Monday to Friday.', annotations: [] }],
};

const responseExample = {
  id: `resp_${sessionExample.id}.turn_lA2hQ0bN7cV4xZ9sD1fGy`,
  object: 'response',
  created_at: 1_795_855_000,
  completed_at: 1_795_855_001,
  status: 'completed',
  incomplete_details: null,
  model: 'support',
  previous_response_id: null,
  instructions: null,
  output: [replyItemExample],
  error: null,
  ...responseSettings,
  usage: {
    input_tokens: 412,
    output_tokens: 14,
    total_tokens: 426,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens_details: { reasoning_tokens: 0 },
  },
  metadata: {},
  conversation: { id: sessionExample.id },
};

/** The response object: a turn of a session, as the Open Responses specification shapes it. */
export const responseObject = z
  .object({
    id: z.string(),
    object: z.literal('response'),
    created_at: z.number().int(),
    completed_at: z.number().int().nullable(),
    status: z.enum(RESPONSE_STATUSES),
    incomplete_details: z.object({ reason: z.string() }).nullable(),
    model: z.string(),
    previous_response_id: z.string().nullable(),
    instructions: z.string().nullable(),
    output: z.array(responseOutputItem),
    output_text: z.string().optional(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    tools: z.array(z.unknown()),
    tool_choice: z.string(),
    truncation: z.string(),
    parallel_tool_calls: z.boolean(),
    text: z.object({ format: z.object({ type: z.literal('text') }) }),
    top_p: z.number(),
    presence_penalty: z.number(),
    frequency_penalty: z.number(),
    top_logprobs: z.number().int(),
    temperature: z.number(),
    reasoning: z.null(),
    usage: responseUsage.nullable(),
    max_output_tokens: z.number().int().nullable(),
    max_tool_calls: z.number().int().nullable(),
    store: z.boolean(),
    background: z.boolean(),
    service_tier: z.string(),
    metadata: z.record(z.string(), z.string()),
    safety_identifier: z.string().nullable(),
    prompt_cache_key: z.string().nullable(),
    conversation: z.object({ id: z.string() }).nullable(),
  })
  .meta({ id: 'Response', examples: [responseExample] });

export type ResponseObject = z.infer<typeof responseObject>;
export type ResponseOutputItem = z.infer<typeof responseOutputItem>;

const seq = { sequence_number: z.number().int().min(0) };
const textPart = { item_id: z.string(), output_index: z.number().int(), content_index: z.number().int() };

/** Every event of a streamed response, in the order the specification gives them. */
export const responseStreamEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('response.created'), response: responseObject, ...seq }),
  z.object({ type: z.literal('response.in_progress'), response: responseObject, ...seq }),
  z.object({
    type: z.literal('response.output_item.added'),
    output_index: z.number().int(),
    item: responseOutputItem,
    ...seq,
  }),
  z.object({ type: z.literal('response.content_part.added'), ...textPart, part: outputText, ...seq }),
  z.object({
    type: z.literal('response.output_text.delta'),
    ...textPart,
    delta: z.string(),
    logprobs: z.array(z.unknown()),
    ...seq,
  }),
  z.object({
    type: z.literal('response.output_text.done'),
    ...textPart,
    text: z.string(),
    logprobs: z.array(z.unknown()),
    ...seq,
  }),
  z.object({ type: z.literal('response.content_part.done'), ...textPart, part: outputText, ...seq }),
  z.object({
    type: z.literal('response.output_item.done'),
    output_index: z.number().int(),
    item: responseOutputItem,
    ...seq,
  }),
  z.object({ type: z.literal('response.completed'), response: responseObject, ...seq }),
  z.object({ type: z.literal('response.incomplete'), response: responseObject, ...seq }),
  z.object({ type: z.literal('response.failed'), response: responseObject, ...seq }),
  z.object({
    type: z.literal('error'),
    error: z.object({
      type: z.string(),
      code: z.string().nullable(),
      message: z.string(),
      param: z.string().nullable(),
    }),
    ...seq,
  }),
]);

export type ResponseStreamEvent = z.infer<typeof responseStreamEvent>;

/** OpenAI's error envelope, which these routes answer errors with (and 422s too). */
export const openAiError = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string(),
      code: z.string().nullable(),
      param: z.string().nullable(),
    }),
  })
  .meta({ id: 'OpenAIError' });

export const openAiErrors = {
  401: openAiError,
  403: openAiError,
  404: openAiError,
  409: openAiError,
  422: openAiError,
  429: openAiError,
  503: openAiError,
} as const;

/** The 200 of `POST /v1/responses`: the response object, or with `stream: true` its events. */
export const responseCreated = {
  description:
    'The response object; with `stream: true`, Server-Sent Events: response.created, response.in_progress, then per output item response.output_item.added (for text: response.content_part.added, response.output_text.delta…, response.output_text.done, response.content_part.done) and response.output_item.done, then response.completed (or response.incomplete, response.failed); each event carries its `sequence_number`',
  content: {
    'application/json': { schema: responseObject },
    'text/event-stream': { schema: responseStreamEvent.meta({ id: 'ResponseStreamEvent' }) },
  },
};

/** The 200 of `GET /v1/responses/{id}`: the response object, or with `stream=true` its events again. */
export const responseResumed = {
  description:
    'The response object; with `stream=true`, its event stream after `starting_after` (live while it runs, replayed once finished)',
  content: {
    'application/json': { schema: responseObject },
    'text/event-stream': { schema: responseStreamEvent },
  },
};

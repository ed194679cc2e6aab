// The body of `POST /v1/responses` (docs/guides/openai-sdks.md) as the OpenAI SDKs and Open Responses clients
// send it: a user message, or the answers a paused response waits for (`function_call_output` for a function
// the client declared, `mcp_approval_response` for a call that must be approved); the client's functions
// (`tools`) and instructions for the turn. Fields Parley cannot honour without changing their meaning are
// refused here with a 422 naming them.
import { z } from 'zod';
import { text } from './common.ts';
import { conversationFileExample } from './files.ts';
import { MAX_BLOCKS, MAX_TEXT } from './messages.ts';
import { sessionExample } from './sessions.ts';

const fileId = z.string().min(1).max(200);

/** Refuses a field whose value would change what the request means if Parley ignored it. */
const refused = (why: string) =>
  z
    .unknown()
    .superRefine((value, ctx) => {
      if (value !== undefined && value !== null) ctx.addIssue({ code: 'custom', message: why });
    })
    .optional();

export const responseInputPart = z.discriminatedUnion('type', [
  z.object({ type: z.literal('input_text'), text: text().min(1).max(MAX_TEXT) }),
  z.object({
    type: z.literal('input_image'),
    file_id: fileId.meta({ description: 'The id of a file uploaded to Parley' }),
    detail: z.enum(['low', 'high', 'auto']).optional(),
  }),
  z.object({
    type: z.literal('input_file'),
    file_id: fileId.meta({ description: 'The id of a file uploaded to Parley' }),
    filename: z.string().max(255).optional(),
  }),
]);

export const responseInputMessage = z.object({
  type: z.literal('message').optional(),
  role: z.literal('user', {
    error: 'Only user messages are taken: the conversation keeps the history and the agent its instructions',
  }),
  content: z.union([text().min(1).max(MAX_TEXT), z.array(responseInputPart).min(1).max(MAX_BLOCKS)]),
});

/** The output of a call to a function the client declared, which the paused response waits for. */
export const functionCallOutputInput = z.object({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1).max(200),
  output: z
    .union([
      z.string().max(MAX_TEXT),
      z.array(z.object({ type: z.literal('input_text'), text: z.string().max(MAX_TEXT) })).max(MAX_BLOCKS),
    ])
    .meta({ description: 'What the function gave: a string (JSON or text), or input_text parts' }),
  id: z.string().max(200).nullable().optional(),
  status: z.string().nullable().optional(),
});

/** A decision on a call of the agent's that must be approved (its `call_id` as `approval_request_id`). */
export const approvalResponseInput = z.object({
  type: z.literal('mcp_approval_response'),
  approval_request_id: z.string().min(1).max(200),
  approve: z.boolean(),
  reason: z.string().max(2000).nullable().optional(),
  id: z.string().max(200).nullable().optional(),
});

/** What answers a paused response: a function's output, or a decision. */
export const responseAnswerItem = z.discriminatedUnion('type', [
  functionCallOutputInput,
  approvalResponseInput,
]);

const inputItem = z.union([responseInputMessage, responseAnswerItem]);

const conversationRef = z.union([z.string().min(1).max(200), z.object({ id: z.string().min(1).max(200) })]);

/** The most functions one request declares. */
export const MAX_FUNCTIONS = 64;

/** A function the client declares and runs itself: a call to it ends the response, waiting for its output. */
export const functionToolParam = z.object(
  {
    type: z.literal('function', {
      error: "Only function tools are taken (the client's own functions): the agent brings its other tools",
    }),
    name: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[a-zA-Z0-9_-]+$/, 'A function name is letters, digits, _ and -'),
    description: z.string().max(MAX_TEXT).nullable().optional(),
    parameters: z.record(z.string(), z.unknown()).nullable().optional(),
    strict: z.boolean().nullable().optional(),
  },
  { error: 'Only function tools are taken: the agent uses its own tools for the rest' },
);

export type FunctionToolParam = z.infer<typeof functionToolParam>;

export const responseCreate = z
  .object({
    model: z.string().min(1).max(200).meta({ description: 'The id of the agent that answers' }),
    input: z.union([text().min(1).max(MAX_TEXT), z.array(inputItem).min(1).max(MAX_FUNCTIONS)]).meta({
      description:
        'The user message (a string, or one user message item), or the function_call_output and mcp_approval_response items a paused response waits for',
    }),
    conversation: conversationRef
      .nullable()
      .optional()
      .meta({ description: 'The session to continue (its id, or `{ id }`)' }),
    previous_response_id: z
      .string()
      .min(1)
      .max(200)
      .nullable()
      .optional()
      .meta({ description: 'Continue the session of this response' }),
    stream: z.boolean().nullable().optional(),
    metadata: z.record(z.string(), z.string().max(512)).nullable().optional(),
    store: z
      .boolean()
      .nullable()
      .optional()
      .refine((v) => v !== false, 'Parley stores every turn: `store: false` cannot be honoured'),
    background: z
      .boolean()
      .nullable()
      .optional()
      .refine((v) => v !== true, 'Background responses are not supported; stream or wait for the answer'),
    instructions: z.string().max(MAX_TEXT).nullable().optional().meta({
      description: "Instructions for this turn, added after the agent's own (which always apply)",
    }),
    tools: z.array(functionToolParam).max(MAX_FUNCTIONS).nullable().optional().meta({
      description: 'Functions the client runs: a call to one ends the response, waiting for its output',
    }),
    tool_choice: z.unknown().optional(),
    // Sampling settings: the agent's configuration decides them.
    temperature: z.number().nullable().optional(),
    top_p: z.number().nullable().optional(),
    presence_penalty: z.number().nullable().optional(),
    frequency_penalty: z.number().nullable().optional(),
    max_output_tokens: z.number().int().nullable().optional(),
    parallel_tool_calls: z.boolean().nullable().optional(),
    truncation: z.unknown().optional(),
    reasoning: z.unknown().optional(),
    user: z.string().optional(),
    safety_identifier: z.string().optional(),
    prompt_cache_key: z.string().optional(),
    service_tier: z.string().nullable().optional(),
    stream_options: z.unknown().optional(),
    include: z.array(z.string()).nullable().optional(),
    text: z
      .object(
        { format: z.object({ type: z.enum(['text']) }).optional() },
        { error: 'Only text output is supported' },
      )
      .nullable()
      .optional(),
    prompt: refused('Stored prompts are not supported'),
    max_tool_calls: z.number().int().nullable().optional(),
    top_logprobs: z.number().int().nullable().optional(),
  })
  .superRefine((body, ctx) => {
    if (typeof body.input === 'string') return;
    const messages = body.input.filter((item) => 'role' in item).length;
    if (messages === 0) return;
    if (messages > 1 || body.input.length > 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['input'],
        message:
          'Send one user message, or only the function_call_output and mcp_approval_response items a paused response waits for: the conversation keeps the history',
      });
    }
  })
  .meta({
    id: 'ResponseCreate',
    examples: [
      { model: 'support', input: 'What are your opening hours?' },
      {
        model: 'support',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'Is this the right part?' },
              { type: 'input_image', file_id: conversationFileExample.id },
            ],
          },
        ],
        previous_response_id: `resp_${sessionExample.id}.turn_lA2hQ0bN7cV4xZ9sD1fGy`,
        stream: true,
      },
      {
        model: 'support',
        input: [
          { type: 'function_call_output', call_id: 'call_Xq3vN8bT2mK9wR4sL7hYd', output: '{"open":true}' },
        ],
        previous_response_id: `resp_${sessionExample.id}.turn_lA2hQ0bN7cV4xZ9sD1fGy`,
      },
    ],
  });

export type ResponseCreate = z.infer<typeof responseCreate>;
export type ResponseAnswerItem = z.infer<typeof responseAnswerItem>;
export type ResponseInputMessage = z.infer<typeof responseInputMessage>;

// The OpenAPI descriptions of the Open Responses surface (docs/guides/openai-sdks.md): its errors answer in
// OpenAI's envelope `{ error: { message, type, code, param } }`, `code` being the catalogue's.
import { agent, type OperationDoc, session, turn } from './operation-parts.ts';

export const responseOperationDocs: Record<string, OperationDoc> = {
  'POST /v1/responses': {
    id: 'createResponse',
    description:
      "Open Responses: sends `input` (a string, or one user message of `input_text`, `input_image` and `input_file` parts naming uploaded Parley files) to the agent named by `model`, in the session named by `conversation` or `previous_response_id`, or in a new one. Answers the response object (its `id` names the session and the turn), or with `stream: true` the Open Responses event stream, each event with its `sequence_number`. `tools` declares functions the client runs: a call to one ends the response (completed, its last item the `function_call`), and a request with `previous_response_id` and `function_call_output` items (or `mcp_approval_response` items, for a call that must be approved) makes the same turn go on; an output or a decision is taken once (409 `approval_not_pending` after). `instructions` are added after the agent's own, for this turn. Takes the API key as `Authorization: Bearer` too, so that the OpenAI SDKs work unchanged; `store: false`, `background: true`, tools other than functions and non-text output formats are refused with a 422 naming the field.",
    ok: 'The response object, or its event stream',
    errors: [...agent, ...session, ...turn, 'approval_not_pending'],
    replays: true,
  },
  'GET /v1/responses/{response_id}': {
    id: 'getResponse',
    description:
      'Reads a response as it is stored: the turn its id names, with its tool calls as `function_call` and `function_call_output` items and its reply as a `message` item. With `stream=true`, its event stream again after `starting_after` (the `sequence_number` of the last event received): followed live while the turn runs, replayed from the store once it is finished, numbered alike.',
    ok: 'The response object',
    errors: [...session, 'response_not_found'],
  },
  'POST /v1/responses/{response_id}/cancel': {
    id: 'cancelResponse',
    description:
      'Stops a running or paused response, as `cancelTurn` does: what the agent wrote so far is stored as its reply and the response reads `cancelled`; its stream ends with `response.incomplete`. Cancelling a finished response changes nothing and answers it as it is.',
    ok: 'The response as it is once cancelled',
    errors: [...session, 'response_not_found'],
  },
  'GET /v1/responses/{response_id}/input_items': {
    id: 'listResponseInputItems',
    description:
      'The input items of a response: the user message its turn answered, as a `message` item with `input_text`, `input_image` and `input_file` parts. Paged like the SDKs expect (`limit`, `order`, `after`; `first_id`, `last_id`, `has_more`).',
    ok: 'A page of items',
    errors: [...session, 'response_not_found'],
  },
  'POST /v1/conversations': {
    id: 'createOpenConversation',
    description:
      'Conversations API: creates a session of the agent named in `metadata.agent` (the other metadata keys are kept as the session metadata). Its `items`, if any, are user messages stored without a turn, as `createOpenConversationItems` stores them; send a message to answer with `createResponse` and `conversation`.',
    ok: 'The conversation',
    errors: [...agent, 'file_not_found', 'session_message_limit_reached'],
  },
  'GET /v1/conversations/{conversation_id}': {
    id: 'getOpenConversation',
    description: 'Reads a conversation: its session id, creation time and metadata (with `agent`).',
    ok: 'The conversation',
    errors: [...session],
  },
  'POST /v1/conversations/{conversation_id}': {
    id: 'updateOpenConversation',
    description:
      "Replaces the conversation's metadata whole (`agent`, if given, must name the conversation's own agent: a session keeps its agent).",
    ok: 'The conversation',
    errors: [...session, 'session_closed', 'session_expired', 'session_busy'],
  },
  'POST /v1/conversations/{conversation_id}/items': {
    id: 'createOpenConversationItems',
    description:
      'Adds up to 20 user messages to the conversation, stored in order in one commit without a turn: no model answers them, and the next response has them in its history. Refused (409) while a turn waits for a decision or a function output, and bounded by the session message limit.',
    ok: 'The added items',
    errors: [...session, ...turn],
  },
  'DELETE /v1/conversations/{conversation_id}': {
    id: 'deleteOpenConversation',
    description:
      "Closes the conversation: its session is terminated and takes no more responses (409 `session_closed`). Its messages stay stored and readable, as a terminated session's do; deleting again answers the same.",
    ok: 'The conversation, deleted',
    errors: [...session],
  },
  'GET /v1/conversations/{conversation_id}/items': {
    id: 'listOpenConversationItems',
    description:
      "A page of the conversation's items, its messages: the user's as `input_text`, `input_image` and `input_file` parts, the agent's as `output_text`. Newest first unless `order=asc`; `after` an item id; `limit` up to 100.",
    ok: 'A page of items',
    errors: [...session],
  },
};

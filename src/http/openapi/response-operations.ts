// The OpenAPI descriptions of the Open Responses surface (docs/guides/openai-sdks.md): its errors answer in
// OpenAI's envelope `{ error: { message, type, code, param } }`, `code` being the catalogue's.
import { agent, type OperationDoc, session, turn } from './operation-parts.ts';

export const responseOperationDocs: Record<string, OperationDoc> = {
  'POST /v1/responses': {
    id: 'createResponse',
    description:
      'Open Responses: sends `input` (a string, or one user message of `input_text`, `input_image` and `input_file` parts naming uploaded Parley files) to the agent named by `model`, in the session named by `conversation` or `previous_response_id`, or in a new one. Answers the response object (its `id` names the session and the turn), or with `stream: true` the Open Responses event stream, each event with its `sequence_number`. Takes the API key as `Authorization: Bearer` too, so that the OpenAI SDKs work unchanged; `store: false`, `background: true`, `instructions`, client tools and non-text output formats are refused with a 422 naming the field.',
    ok: 'The response object, or its event stream',
    errors: [...agent, ...session, ...turn],
    replays: true,
  },
  'GET /v1/responses/{response_id}': {
    id: 'getResponse',
    description:
      'Reads a response as it is stored: the turn its id names, with its tool calls as `function_call` and `function_call_output` items and its reply as a `message` item.',
    ok: 'The response object',
    errors: [...session, 'response_not_found'],
  },
};

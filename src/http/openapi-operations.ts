// What the OpenAPI document says of each operation beyond its zod schemas: a stable operationId for
// generated clients, what its success answer is, and which error codes of the catalogue (src/errors.ts)
// it can answer with, so that each status's description lists codes that exist and cannot drift.
import { type ErrorCode, errorCatalogue } from '../errors.ts';

export interface OperationDoc {
  /** camelCase, stable: a generated client's method name. */
  id: string;
  /** Description of the success answer. */
  ok: string;
  /** The catalogue codes the operation can answer with (a 422 body is declared by the route's schema). */
  errors: readonly ErrorCode[];
  /** A send honouring Idempotency-Key: a replayed answer carries Idempotent-Replayed. */
  replays?: boolean;
  /** Served unauthenticated (`security: []`). */
  open?: boolean;
}

/** What any operation may answer, from the framework, the process or the cluster rather than the operation. */
export const genericErrors: readonly ErrorCode[] = [
  'bad_request',
  'request_timeout',
  'payload_too_large',
  'unsupported_media_type',
  'shard_not_owned',
  'headers_too_large',
  'internal_error',
  'service_unavailable',
];

const apiKey: ErrorCode[] = ['unauthorized', 'invalid_api_key', 'rate_limited'];
const agent: ErrorCode[] = [...apiKey, 'agent_forbidden', 'agent_not_found'];
const session: ErrorCode[] = [...apiKey, 'agent_forbidden', 'session_not_found', 'shard_moving'];
const token: ErrorCode[] = [
  'unauthorized',
  'session_token_invalid',
  'session_token_expired',
  'forbidden',
  'conversation_not_found',
  'rate_limited',
  'shard_moving',
];
/** What a turn may end in, besides its family's errors. */
const turn: ErrorCode[] = [
  'file_not_found',
  'session_closed',
  'session_expired',
  'session_busy',
  'session_message_limit_reached',
  'idempotency_key_reused',
  'agent_unavailable',
  'agent_rejected',
  'agent_misconfigured',
  'agent_rate_limited',
  'agent_timeout',
  'turn_interrupted',
];
const upload: ErrorCode[] = ['file_too_large', 'tenant_file_quota', 'unsupported_media_type'];
/** A file of a conversation is the key's only where the key may use the conversation's agent. */
const fileErrors: ErrorCode[] = [...apiKey, 'agent_forbidden', 'file_not_found'];
const ending: ErrorCode[] = ['session_closed', 'session_expired'];
/** Webhook endpoints are managed with a key for every agent. */
const webhooks: ErrorCode[] = [...apiKey, 'forbidden'];

const A = '/v1/agents';
const P = '/v1/public/agents/conversations/{conversation_id}';

/** Every documented operation, by `METHOD /path` as the document writes it. */
export const operationDocs: Record<string, OperationDoc> = {
  'GET /healthz': { id: 'getHealth', ok: 'The process is alive', errors: [], open: true },
  'GET /readyz': { id: 'getReadiness', ok: 'Ready to serve', errors: ['service_unavailable'], open: true },
  'GET /metrics': { id: 'getMetrics', ok: 'Prometheus text format', errors: [], open: true },

  [`POST ${A}/users`]: { id: 'createUser', ok: 'The user', errors: [...apiKey, 'user_reference_conflict'] },
  [`GET ${A}/users`]: { id: 'listUsers', ok: 'A page of users', errors: apiKey },
  [`GET ${A}/users/{user_id}`]: { id: 'getUser', ok: 'The user', errors: [...apiKey, 'user_not_found'] },
  [`PATCH ${A}/users/{user_id}`]: {
    id: 'updateUser',
    ok: 'The updated user',
    errors: [...apiKey, 'user_not_found', 'user_reference_conflict'],
  },
  [`DELETE ${A}/users/{user_id}`]: { id: 'deleteUser', ok: 'Deleted', errors: [...apiKey, 'user_not_found'] },

  [`POST ${A}/files`]: { id: 'uploadFile', ok: 'The stored file', errors: [...apiKey, ...upload] },
  [`GET ${A}/files`]: { id: 'listFiles', ok: 'A page of files', errors: apiKey },
  [`GET ${A}/files/{file_id}`]: { id: 'getFile', ok: 'The file', errors: fileErrors },
  [`DELETE ${A}/files/{file_id}`]: { id: 'deleteFile', ok: 'Deleted', errors: fileErrors },
  [`GET ${A}/files/{file_id}/content`]: {
    id: 'getFileContent',
    ok: "The file's bytes, served with its own media type (its `mime_type`) as an attachment",
    errors: fileErrors,
  },

  [`POST ${A}/{agent_id}/sessions`]: {
    id: 'createSession',
    ok: 'The session',
    errors: [...agent, 'user_not_found', 'service_unavailable'],
  },
  [`GET ${A}/sessions`]: { id: 'listSessions', ok: 'A page of sessions', errors: apiKey },
  [`GET ${A}/sessions/{session_id}`]: { id: 'getSession', ok: 'The session', errors: session },
  [`POST ${A}/sessions/{session_id}/terminate`]: {
    id: 'terminateSession',
    ok: 'The session is closed',
    errors: [...session, ...ending],
  },
  [`POST ${A}/sessions/{session_id}/messages`]: {
    id: 'sendMessage',
    ok: "The agent's reply",
    errors: [...session, ...turn],
    replays: true,
  },
  [`GET ${A}/sessions/{session_id}/messages`]: {
    id: 'listMessages',
    ok: 'A page of messages',
    errors: session,
  },
  [`POST ${A}/sessions/{session_id}/messages/stream`]: {
    id: 'streamMessage',
    ok: "The agent's reply as Server-Sent Events",
    errors: [...session, ...turn],
    replays: true,
  },
  [`POST ${A}/sessions/{session_id}/chat`]: {
    id: 'chat',
    ok: 'The reply as a UI message stream',
    errors: [...session, ...turn],
    replays: true,
  },
  [`GET ${A}/sessions/{session_id}/turns/{turn_id}/events`]: {
    id: 'resumeTurn',
    ok: "The turn's events after Last-Event-ID, then the rest as they come",
    errors: [...session, 'turn_not_found'],
  },
  [`GET ${A}/sessions/{session_id}/messages/{message_id}`]: {
    id: 'getMessage',
    ok: 'The message',
    errors: [...session, 'message_not_found'],
  },
  [`POST ${A}/{agent_id}/run`]: {
    id: 'runAgent',
    ok: "The agent's reply in a session that is closed after it",
    errors: [...agent, 'user_not_found', ...turn],
    replays: true,
  },
  [`POST ${A}/{agent_id}/conversations`]: {
    id: 'startConversation',
    ok: 'The conversation and its session token',
    errors: [...agent, 'user_not_found', 'service_unavailable'],
  },
  [`POST ${A}/conversations/{conversation_id}/token`]: {
    id: 'refreshConversationToken',
    ok: 'A new session token',
    errors: [...apiKey, 'agent_forbidden', 'conversation_not_found', 'shard_moving'],
  },

  [`POST ${A}/webhooks`]: {
    id: 'createWebhook',
    ok: 'The endpoint, with its signing secret (shown only here)',
    errors: [...webhooks, 'webhook_limit_reached'],
  },
  [`GET ${A}/webhooks`]: { id: 'listWebhooks', ok: "The tenant's endpoints", errors: webhooks },
  [`GET ${A}/webhooks/{webhook_id}`]: {
    id: 'getWebhook',
    ok: 'The endpoint',
    errors: [...webhooks, 'webhook_not_found'],
  },
  [`DELETE ${A}/webhooks/{webhook_id}`]: {
    id: 'deleteWebhook',
    ok: 'Deleted',
    errors: [...webhooks, 'webhook_not_found'],
  },
  [`GET ${A}/webhooks/{webhook_id}/deliveries`]: {
    id: 'listWebhookDeliveries',
    ok: "A page of the endpoint's deliveries",
    errors: [...webhooks, 'webhook_not_found'],
  },

  [`GET ${P}`]: { id: 'getConversation', ok: 'The conversation', errors: token },
  [`GET ${P}/messages`]: { id: 'listConversationMessages', ok: 'A page of messages', errors: token },
  [`POST ${P}/messages`]: {
    id: 'sendConversationMessage',
    ok: "The agent's reply",
    errors: [...token, 'role_not_allowed', ...turn],
    replays: true,
  },
  [`POST ${P}/messages/stream`]: {
    id: 'streamConversationMessage',
    ok: "The agent's reply as Server-Sent Events",
    errors: [...token, 'role_not_allowed', ...turn],
    replays: true,
  },
  [`POST ${P}/chat`]: {
    id: 'chatConversation',
    ok: 'The reply as a UI message stream',
    errors: [...token, ...turn],
    replays: true,
  },
  [`GET ${P}/turns/{turn_id}/events`]: {
    id: 'resumeConversationTurn',
    ok: "The turn's events after Last-Event-ID, then the rest as they come",
    errors: [...token, 'turn_not_found'],
  },
  [`POST ${P}/feedback`]: { id: 'sendFeedback', ok: 'The feedback', errors: [...token, 'message_not_found'] },
  [`POST ${P}/inactivity`]: {
    id: 'reportInactivity',
    ok: 'What the inactivity did',
    errors: [...token, ...ending, 'session_message_limit_reached'],
  },
  [`POST ${P}/terminate`]: {
    id: 'terminateConversation',
    ok: 'The conversation is closed',
    errors: [...token, ...ending],
  },
  [`POST ${P}/files`]: {
    id: 'uploadConversationFile',
    ok: 'The stored file',
    errors: [...token, ...upload, 'conversation_file_quota', ...ending],
  },
  [`GET ${P}/files`]: { id: 'listConversationFiles', ok: "The conversation's files", errors: token },
};

/** The catalogue's codes of `status` among `codes`, each with its message, for a response's description. */
export function describeStatus(status: number, codes: readonly ErrorCode[]): string {
  const lines = [...new Set(codes)]
    .filter((code) => errorCatalogue[code].status === status)
    .map((code) => `- \`${code}\`: ${errorCatalogue[code].message}`);
  return lines.join('\n');
}

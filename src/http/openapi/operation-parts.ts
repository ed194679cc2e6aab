// What the OpenAPI operations' descriptions share (operations.ts, turn-operations.ts): the shape of one, the
// errors any operation may answer, the groups of catalogue codes a family or a turn answers with, and the
// families' path prefixes.
import type { ErrorCode } from '../../errors.ts';

export interface OperationDoc {
  /** camelCase, stable: a generated client's method name. */
  id: string;
  /** What the operation does and what a client must know of it (Markdown, a few sentences). */
  description: string;
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
  'host_not_allowed',
  'headers_too_large',
  'internal_error',
  'service_unavailable',
];

export const apiKey: ErrorCode[] = ['unauthorized', 'invalid_api_key', 'rate_limited'];
export const agent: ErrorCode[] = [...apiKey, 'agent_forbidden', 'agent_not_found'];
export const session: ErrorCode[] = [...apiKey, 'agent_forbidden', 'session_not_found', 'shard_moving'];
export const token: ErrorCode[] = [
  'unauthorized',
  'session_token_invalid',
  'session_token_expired',
  'forbidden',
  'conversation_not_found',
  'rate_limited',
  'shard_moving',
];
/** What a turn may end in, besides its family's errors. */
export const turn: ErrorCode[] = [
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
  'approval_pending',
  'server_busy',
  'budget_exceeded',
];
/** What a decision on a paused turn may answer, besides its family's errors and those of the turn going on. */
export const deciding: ErrorCode[] = [
  'approval_not_pending',
  'approval_forbidden',
  ...turn.filter((code) => code !== 'idempotency_key_reused' && code !== 'file_not_found'),
];
export const upload: ErrorCode[] = ['file_too_large', 'tenant_file_quota', 'unsupported_media_type'];
/** A file of a conversation is the key's only where the key may use the conversation's agent. */
export const fileErrors: ErrorCode[] = [...apiKey, 'agent_forbidden', 'file_not_found'];
export const ending: ErrorCode[] = ['session_closed', 'session_expired'];
/** Webhook endpoints are managed with a key for every agent. */
export const webhooks: ErrorCode[] = [...apiKey, 'forbidden'];

export const A = '/v1/agents';
export const P = '/v1/public/agents/conversations/{conversation_id}';

/** Every documented operation, by `METHOD /path` as the document writes it. */

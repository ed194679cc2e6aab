// What the OpenAPI document says of each operation beyond its zod schemas: a stable operationId for
// generated clients, what its success answer is, and which error codes of the catalogue (src/errors.ts)
// it can answer with, so that each status's description lists codes that exist and cannot drift.
import { type ErrorCode, errorCatalogue } from '../../errors.ts';
import { humanOperationDocs } from './human-operations.ts';
import {
  A,
  agent,
  apiKey,
  ending,
  fileErrors,
  type OperationDoc,
  P,
  session,
  token,
  turn,
  upload,
  webhooks,
} from './operation-parts.ts';
import { responseOperationDocs } from './response-operations.ts';
import { turnOperationDocs } from './turn-operations.ts';
import { usageOperationDocs } from './usage-operations.ts';

export { genericErrors, type OperationDoc } from './operation-parts.ts';

export const operationDocs: Record<string, OperationDoc> = {
  ...turnOperationDocs,
  ...humanOperationDocs,
  ...responseOperationDocs,
  ...usageOperationDocs,
  'GET /healthz': {
    id: 'getHealth',
    description:
      'Liveness: answers `{ "status": "ok" }` while the process runs. It reads neither the store nor Redis: use `/readyz` to decide where to send traffic.',
    ok: 'The process is alive',
    errors: [],
    open: true,
  },
  'GET /readyz': {
    id: 'getReadiness',
    description:
      "Readiness, for a load balancer's health check: 200 while the process can serve. It answers 503 `service_unavailable` with `Retry-After` when the store does not answer and, in a cluster, from the moment the process is asked to stop (it keeps serving for `PARLEY_DRAIN_DELAY_MS`) and while it has not reached Redis for a whole lease TTL.",
    ok: 'Ready to serve',
    errors: ['service_unavailable'],
    open: true,
  },
  'GET /metrics': {
    id: 'getMetrics',
    description:
      "The process's metrics in the Prometheus text format: requests and their latency, resident sessions, turns, tokens, model and tool calls, open streams, shard ownership and webhook deliveries. Each process reports its own; scrape every one.",
    ok: 'Prometheus text format',
    errors: [],
    open: true,
  },

  [`POST ${A}/users`]: {
    id: 'createUser',
    description:
      "Creates an end-user of the key's tenant; every field is optional. `reference` is your own label for the user, unique among the tenant's live users (409 `user_reference_conflict` when taken). `info` and the user's `name`, `email` and `phone` are shown to the agent in a `<user_info>` block of every session the user is in; `metadata` is yours and never reaches the agent. Sessions name a user by `id` or `reference`; they never create one.",
    ok: 'The user',
    errors: [...apiKey, 'user_reference_conflict'],
  },
  [`GET ${A}/users`]: {
    id: 'listUsers',
    description:
      "A page of the tenant's live users, newest first. `reference` matches exactly and `email` ignoring case; pass `next_offset` as `offset` for the next page (null: no more).",
    ok: 'A page of users',
    errors: apiKey,
  },
  [`GET ${A}/users/{user_id}`]: {
    id: 'getUser',
    description: 'One user of the tenant. A deleted user, or one of another tenant, is 404 `user_not_found`.',
    ok: 'The user',
    errors: [...apiKey, 'user_not_found'],
  },
  [`PATCH ${A}/users/{user_id}`]: {
    id: 'updateUser',
    description:
      'A partial update: each field given replaces the stored value, and fields left out are kept. `null` clears `reference`, `name`, `email` or `phone`, and resets `metadata` or `info` to `{}`. A new `reference` must be free among the live users (409 `user_reference_conflict`); an empty body changes nothing and answers the user.',
    ok: 'The updated user',
    errors: [...apiKey, 'user_not_found', 'user_reference_conflict'],
  },
  [`DELETE ${A}/users/{user_id}`]: {
    id: 'deleteUser',
    description:
      'Deletes the user softly: it is no longer read, listed or found by sessions, and its `reference` is free for a new user. A `user.deleted` webhook event is queued with the deletion.',
    ok: 'Deleted',
    errors: [...apiKey, 'user_not_found'],
  },

  [`POST ${A}/files`]: {
    id: 'uploadFile',
    description:
      "Uploads one file to the tenant pool as `multipart/form-data`: a `file` part and an optional `metadata` part (a JSON object, kept with the file and answered). The type is decided by the bytes: PNG, JPEG, GIF, WebP and PDF by their signature, UTF-8 text as plain text, Markdown, CSV or JSON; anything else is 415. A file over `PARLEY_MAX_UPLOAD_BYTES` (20 MiB by default) is 413 `file_too_large`, one that would pass the tenant's bytes 413 `tenant_file_quota`. Name the answer's `id` in the `file_id` of an image or file block.",
    ok: 'The stored file',
    errors: [...apiKey, ...upload],
  },
  [`GET ${A}/files`]: {
    id: 'listFiles',
    description:
      "A page of the tenant's files, newest first: the pool and the files uploaded in conversations (`session_id` set). `name` is a case-insensitive prefix, `created_after` and `created_before` exclusive bounds, `session_id` one conversation's files. A key scoped to some agents sees the pool and its own agents' conversations' files only.",
    ok: 'A page of files',
    errors: apiKey,
  },
  [`GET ${A}/files/{file_id}`]: {
    id: 'getFile',
    description:
      "A file's record, with its `metadata`. A file uploaded in a conversation of an agent outside the key's scope is 403 `agent_forbidden`, as that conversation would be.",
    ok: 'The file',
    errors: fileErrors,
  },
  [`DELETE ${A}/files/{file_id}`]: {
    id: 'deleteFile',
    description:
      "Deletes the file and its bytes, freeing their room in the conversation's and the tenant's quotas. Messages that named it keep their blocks; a later turn shows the model a placeholder line instead of the file.",
    ok: 'Deleted',
    errors: fileErrors,
  },
  [`GET ${A}/files/{file_id}/content`]: {
    id: 'getFileContent',
    description:
      "The file's bytes as uploaded, with its `mime_type` as `Content-Type` and `Content-Disposition: attachment` carrying its name. The same scope rule as reading the record applies.",
    ok: "The file's bytes, served with its own media type (its `mime_type`) as an attachment",
    errors: fileErrors,
  },

  [`POST ${A}/{agent_id}/sessions`]: {
    id: 'createSession',
    description:
      "Creates an active session bound to the agent; the body may be left out. `user` looks up an existing user by `id`, `reference` or both (404 `user_not_found`; users are created with `POST /v1/agents/users`). `context` is shown to the agent in a `<session_context>` block of every turn; `metadata` is yours and never reaches it. The session expires after the agent's `session_ttl` without a message.",
    ok: 'The session',
    errors: [...agent, 'user_not_found', 'service_unavailable', 'shard_moving'],
  },
  [`GET ${A}/sessions`]: {
    id: 'listSessions',
    description:
      "A page of the tenant's sessions, newest first, each with its `usage` and `feedback`, filtered by `status`, `agent_id`, `user_id`, `user_reference`, `handled_by`, `pending_approval` (a call waiting for a decision) or `updated_after`; a key scoped to some agents lists only theirs. Page with `cursor` (the previous page's `next_cursor`, opaque: sessions created meanwhile neither repeat nor shift a page) or `offset`, not both (422). The status is the stored one: an untouched session past its lifetime may be listed `active` until the next sweep.",
    ok: 'A page of sessions',
    errors: apiKey,
  },
  [`GET ${A}/sessions/{session_id}`]: {
    id: 'getSession',
    description:
      "One session, with its `user`, `context`, `metadata`, message count, `usage` and the end user's `feedback` (null without). A session past its lifetime is expired as it is read, so it shows `expired`. Another agent's session is 403 `agent_forbidden` for a key scoped to other agents.",
    ok: 'The session',
    errors: session,
  },
  [`POST ${A}/sessions/{session_id}/terminate`]: {
    id: 'terminateSession',
    description:
      'Closes the session with an optional `reason` (at most 500 characters), kept as its `close_reason`. Idempotent: a second call answers with the first closing. A reply being produced is stored first, as the terminate waits its turn; an expired session is 409 `session_expired`. A `session.closed` webhook event is queued with the closing.',
    ok: 'The session is closed',
    errors: [...session, ...ending],
  },
  [`POST ${A}/sessions/{session_id}/messages`]: {
    id: 'sendMessage',
    description:
      'Stores the message and answers the agent\'s reply, once it is stored too. One operation runs at a time per session, in arrival order; up to 8 more wait, and the next is 409 `session_busy`. With an `Idempotency-Key` (kept 24 h per session) a retry of the same body replays the stored reply with `Idempotent-Replayed: true`, and finishes a turn whose reply was lost; a different body under the key is 409 `idempotency_key_reused`. `role: "assistant"` stores your own message without calling the model. A failed model call keeps the user\'s message, and the session stays active. When a tool call must be approved first, the turn pauses and the answer is 202 with the calls it waits for (`decideApprovals` goes on with it); while it waits, a new send is 409 `approval_pending`. While people handle the session (`handOffSession`) the message is stored and no model is called: 201 `{ agent_message: null, handled_by: "humans" }`; an operator answers with `role: "assistant"` and an optional `author: { id, name }`.',
    ok: "The agent's reply (201; none while people handle the session), or the approvals the paused turn waits for (202)",
    errors: [...session, ...turn],
    replays: true,
  },
  [`GET ${A}/sessions/{session_id}/messages`]: {
    id: 'listMessages',
    description:
      "A page of the session's messages, both sides, oldest first, with their `metadata`, `stop_reason`, `usage` and `tool_calls`. Pass `next_offset` as `offset` for the next page.",
    ok: 'A page of messages',
    errors: session,
  },
  [`POST ${A}/sessions/{session_id}/messages/stream`]: {
    id: 'streamMessage',
    description:
      'The send of `sendMessage`, same body and `Idempotency-Key`, answered as Server-Sent Events: `turn.started`, `message.delta`…, `message.completed`, `turn.completed`, with tool events between steps. A refusal before the turn starts is an ordinary JSON error; after, a failure is a `turn.failed` event, whose `partial: true` says the text streamed is not stored. A client that disconnects does not cancel the turn: resume it from the last event id with `resumeTurn`. Ignore events of names you do not know.',
    ok: "The agent's reply as Server-Sent Events",
    errors: [...session, ...turn],
    replays: true,
  },
  [`POST ${A}/sessions/{session_id}/chat`]: {
    id: 'chat',
    description:
      "Takes the body the AI SDK's `useChat` sends and answers its UI message stream. Only the newest user message is read and sent as the session's next message (the session holds the history); a file part must name an uploaded Parley file (`file_…`) in its `url`. The Idempotency-Key is the header, else the user message's id, so the SDK's retries and *regenerate* replay the stored reply. Refusals before the stream starts are JSON errors, as on `streamMessage`.",
    ok: 'The reply as a UI message stream',
    errors: [...session, ...turn],
    replays: true,
  },
  [`GET ${A}/sessions/{session_id}/turns/{turn_id}/events`]: {
    id: 'resumeTurn',
    description:
      'The events of a turn after the one named by `Last-Event-ID` or `?after=` (a full `<turn_id>:<seq>`; the header wins), or the whole turn from `turn.started`. A running turn is followed live, a finished one replayed from the store, with the same ids either way; the answer opens with a `: resumed` comment. A turn whose process died ends in `turn.failed` `turn_interrupted`: send the same message again with the same `Idempotency-Key` to finish it.',
    ok: "The turn's events after Last-Event-ID, then the rest as they come",
    errors: [...session, 'turn_not_found'],
  },
  [`GET ${A}/sessions/{session_id}/messages/{message_id}`]: {
    id: 'getMessage',
    description:
      'One message of the session, user or assistant, as the page of messages shows it. A message of another session is 404 `message_not_found`.',
    ok: 'The message',
    errors: [...session, 'message_not_found'],
  },
  [`POST ${A}/{agent_id}/run`]: {
    id: 'runAgent',
    description:
      "Runs the agent once: creates a session holding the 1 to 10 `messages` given, in order, and answers the agent's reply to them with the session's id. The session is stored and stays active, so later sends may go on with it; `persist: false` is accepted and, in v1, still stores it. `user`, `context` and `metadata` are those of session creation. A run refused (too many messages for the agent's limit, a last message too long for its context window) leaves no session behind.",
    ok: "The agent's reply and the id of the session that holds the run",
    // Run takes no Idempotency-Key.
    errors: [...agent, 'user_not_found', ...turn.filter((code) => code !== 'idempotency_key_reused')],
  },
  [`POST ${A}/{agent_id}/conversations`]: {
    id: 'startConversation',
    description:
      "Starts a conversation (a session, with the body of session creation) and mints its first session token, for your server to hand to the front-end with the conversation's `id`. The front-end then calls the public family with `Authorization: Bearer <session_token>`; it never sees `context`, `metadata` or the user's `info`. The token expires after `PARLEY_TOKEN_TTL` (15 minutes by default) and dies with the API key that minted it.",
    ok: 'The conversation and its session token',
    errors: [...agent, 'user_not_found', 'service_unavailable', 'shard_moving'],
  },
  [`POST ${A}/conversations/{conversation_id}/token`]: {
    id: 'refreshConversationToken',
    description:
      'Mints a fresh session token for the conversation, before `expires_at` or on a 401 `session_token_expired` from the public family. Earlier tokens stay valid until their own expiry. Closed and expired conversations get tokens too, so that their front-end can still read them and leave feedback.',
    ok: 'A new session token',
    errors: [...apiKey, 'agent_forbidden', 'conversation_not_found', 'shard_moving'],
  },

  [`POST ${A}/webhooks`]: {
    id: 'createWebhook',
    description:
      "Registers an endpoint to which the tenant's events of the types named are POSTed as `{ type, timestamp, data }`, signed with the Standard Webhooks headers (`webhook-id`, the same on every attempt: dedupe on it). Events are delivered at least once, in order per session, and retried for 24 h. The `secret` (`whsec_…`, generated unless given) is shown only in this answer. Needs a key for every agent (`*`); at most 20 endpoints a tenant, and an address on a private or loopback network is 422 `url_private` unless the server allows it.",
    ok: 'The endpoint, with its signing secret (shown only here)',
    errors: [...webhooks, 'webhook_limit_reached'],
  },
  [`GET ${A}/webhooks`]: {
    id: 'listWebhooks',
    description:
      "The tenant's endpoints, oldest first, without their secrets; at most 20, so not paged. Needs a key for every agent (`*`).",
    ok: "The tenant's endpoints",
    errors: webhooks,
  },
  [`GET ${A}/webhooks/{webhook_id}`]: {
    id: 'getWebhook',
    description: 'One endpoint, without its secret. Needs a key for every agent (`*`).',
    ok: 'The endpoint',
    errors: [...webhooks, 'webhook_not_found'],
  },
  [`DELETE ${A}/webhooks/{webhook_id}`]: {
    id: 'deleteWebhook',
    description:
      'Deletes the endpoint and its deliveries: those still pending are never sent. Needs a key for every agent (`*`).',
    ok: 'Deleted',
    errors: [...webhooks, 'webhook_not_found'],
  },
  [`GET ${A}/webhooks/{webhook_id}/deliveries`]: {
    id: 'listWebhookDeliveries',
    description:
      "A page of the endpoint's deliveries, newest first: each one's `status` (`pending`, `delivered`, `failed`), `attempts`, `last_status_code`, `error` (why it is not delivered) and when the next attempt is due. A delivery that gets no 2xx within 10 s is retried after about 1 s, 5 s, 30 s, 2 min, 10 min, 1 h, then hourly until 24 h have passed (`PARLEY_WEBHOOK_RETRY_SCHEDULE`), and is then `failed`; an endpoint that keeps failing is backed off as a whole, its deliveries waiting together for one probe. A delivery queued while the tenant's outbox is past its cap is stored `failed` at once with the `error` `outbox_full`, never sent. Delivered and failed ones are kept 7 days.",
    ok: "A page of the endpoint's deliveries",
    errors: [...webhooks, 'webhook_not_found'],
  },

  [`GET ${P}`]: {
    id: 'getConversation',
    description:
      "The conversation as its front-end sees it: status, times and message count, never the session's `context`, `metadata` or user. A token opens its own conversation only (403 `forbidden` for another).",
    ok: 'The conversation',
    errors: token,
  },
  [`GET ${P}/messages`]: {
    id: 'listConversationMessages',
    description:
      "A page of the conversation's messages, oldest first, without their `metadata`; `tool_calls` only where the agent exposes its tools (`expose_tools`). Pass `next_offset` as `offset` for the next page.",
    ok: 'A page of messages',
    errors: token,
  },
  [`POST ${P}/messages`]: {
    id: 'sendConversationMessage',
    description:
      'Sends the end user\'s message and answers the agent\'s reply, as `sendMessage` does: one turn at a time, and an `Idempotency-Key` replays the stored reply. Only `role: "user"` may be sent (403 `role_not_allowed`), and blocks may name only files uploaded in this conversation (404 `file_not_found` for any other). `metadata` is stored on the message for your server to read and is never shown back here.',
    ok: "The agent's reply",
    errors: [...token, 'role_not_allowed', ...turn],
    replays: true,
  },
  [`POST ${P}/messages/stream`]: {
    id: 'streamConversationMessage',
    description:
      'The send of `sendConversationMessage` answered as Server-Sent Events, as `streamMessage` does: JSON errors before the turn starts, `turn.failed` after. Tool events are sent only where the agent exposes its tools. A dropped stream is resumed with `resumeConversationTurn`; ignore events of names you do not know.',
    ok: "The agent's reply as Server-Sent Events",
    errors: [...token, 'role_not_allowed', ...turn],
    replays: true,
  },
  [`POST ${P}/chat`]: {
    id: 'chatConversation',
    description:
      "The AI SDK chat route of `chat`, with the session token: point `useChat`'s `DefaultChatTransport` here. Only the newest user message is sent, its file parts naming files uploaded in this conversation; its id is the Idempotency-Key unless the header gives one.",
    ok: 'The reply as a UI message stream',
    errors: [...token, ...turn],
    replays: true,
  },
  [`GET ${P}/turns/{turn_id}/events`]: {
    id: 'resumeConversationTurn',
    description:
      'The events of a turn after `Last-Event-ID` or `?after=`, live or replayed, as `resumeTurn` does, with the session token. A front-end on another origin may send either; `@parley/client` resumes a dropped stream by itself.',
    ok: "The turn's events after Last-Event-ID, then the rest as they come",
    errors: [...token, 'turn_not_found'],
  },
  [`POST ${P}/feedback`]: {
    id: 'sendFeedback',
    description:
      'Stores NPS-style feedback (`score` 0 to 10, an optional `comment` of up to 2,000 characters). One per conversation: a second submission replaces score, comment and metadata, keeps the `id` and moves `submitted_at`. Accepted after the conversation closed or expired too; each submission queues a `feedback.submitted` webhook event.',
    ok: 'The feedback',
    errors: [...token, 'message_not_found'],
  },
  [`POST ${P}/inactivity`]: {
    id: 'reportInactivity',
    description:
      "Stores the agent's inactivity message as an assistant message, for a front-end whose user has gone quiet: `warning` its `warning_message`; `final` its `final_message`, which also closes the conversation (`close_reason: \"inactivity\"`) unless the agent's `close_on_final` is false. It waits behind a running turn. Inactivity messages count as messages but do not extend the conversation's lifetime.",
    ok: 'What the inactivity did',
    errors: [...token, ...ending, 'session_message_limit_reached'],
  },
  [`POST ${P}/terminate`]: {
    id: 'terminateConversation',
    description:
      'Closes the conversation with an optional `reason` (at most 500 characters), as `terminateSession` does. Idempotent: a second call answers with the first closing; an expired conversation is 409 `session_expired`. The token still reads the closed conversation and may leave feedback.',
    ok: 'The conversation is closed',
    errors: [...token, ...ending],
  },
  [`POST ${P}/files`]: {
    id: 'uploadConversationFile',
    description:
      "Uploads one file (`multipart/form-data`, a single `file` part) to use in the `image` and `file` blocks of this conversation's messages; types and size as `uploadFile`. A conversation keeps at most `PARLEY_CONVERSATION_MAX_FILES` files and `PARLEY_CONVERSATION_MAX_FILE_BYTES` bytes (413 `conversation_file_quota`), and a closed or expired one takes none (409). The file joins the tenant pool with its `session_id` set.",
    ok: 'The stored file',
    errors: [...token, ...upload, 'conversation_file_quota', ...ending],
  },
  [`GET ${P}/files`]: {
    id: 'listConversationFiles',
    description:
      'A page of the files uploaded in this conversation, newest first, without `metadata`. The public family serves no file contents.',
    ok: "The conversation's files",
    errors: token,
  },
};

/** The catalogue's codes of `status` among `codes`, each with its message, for a response's description. */
export function describeStatus(status: number, codes: readonly ErrorCode[]): string {
  const lines = [...new Set(codes)]
    .filter((code) => errorCatalogue[code].status === status)
    .map((code) => `- \`${code}\`: ${errorCatalogue[code].message}`);
  return lines.join('\n');
}

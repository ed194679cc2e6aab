// The client's request and answer types, derived from the wire schemas the server validates with
// (@parley/schemas; type-only imports, so nothing of them is bundled): z.input for what a request sends,
// z.output for what an answer holds. A schema change changes these types, and the typecheck then names every
// use that breaks.
import type {
  agentSchema,
  approvalSchema,
  ConversationEvent as ConversationStreamEvent,
  ConversationTurnEvent,
  cancelResult,
  chatRequest,
  conversationCancelResult,
  conversationFile,
  conversationMessageSchema,
  conversationReply,
  conversationSchema,
  conversationStart,
  createdWebhookSchema,
  decisionSchema,
  errorEnvelope,
  feedbackRequest,
  feedbackSchema,
  fileListQuery,
  fileSchema,
  inactivityRequest,
  inactivityResult,
  SessionEvent as KeySessionEvent,
  SessionTurnEvent as KeyTurnEvent,
  agentReply as keyReply,
  messageRequest,
  messageSchema,
  pageOf,
  pageQuery,
  runRequest,
  runResult,
  sessionCreate,
  sessionListQuery,
  sessionPage,
  sessionSchema,
  sessionStatus,
  sessionTokenSchema,
  terminateRequest,
  terminateResult,
  turnStateSchema,
  userFields,
  userListQuery,
  userSchema,
  validationErrorBody,
  webhookCreate,
  webhookDeliverySchema,
  webhookSchema,
} from '@parley/schemas';
import type { z } from 'zod';

type PageOf<S extends z.ZodType> = z.output<ReturnType<typeof pageOf<S>>>;
/**
 * A list route's query as the client passes it: every field optional, each as the route reads it (the
 * server coerces the query's text, so `limit` is a number here).
 */
type ListQuery<S extends z.ZodType> = Partial<z.output<S>>;

// Both families
/** The body of a send: `{ content, role?, metadata? }` (the public family takes `role: "user"` only). */
export type MessageCreate = z.input<typeof messageRequest>;
/** A send's input: a plain string is sent as `{ content: string }`. */
export type SendInput = string | MessageCreate;
export type TerminateRequest = z.input<typeof terminateRequest>;
export type TerminateResult = z.output<typeof terminateResult>;
export type SessionStatus = z.output<typeof sessionStatus>;
/** `limit` (1–100, default 20) and `offset` (default 0) of every paged list. */
export type PageQuery = Partial<z.output<z.ZodObject<typeof pageQuery>>>;
/** The error envelope of every non-2xx answer but 422. */
export type ErrorBody = z.output<typeof errorEnvelope>;
/** One entry of a 422's `detail`: `{ loc, msg, type }`. */
export type ValidationIssue = z.output<typeof validationErrorBody>['detail'][number];

// Approvals and cancel (both families)
/** A tool call waiting for a decision: `{ call_id, tool, input, approver, requested_at, expires_at }`. */
export type Approval = z.output<typeof approvalSchema>;
/** `{ call_id, approved, reason? }`: one decision on a call a paused turn waits for. */
export type Decision = z.input<typeof decisionSchema>;
/** A turn's state: `{ id, status, approvals }` (the approvals the caller may decide while it waits). */
export type TurnState = z.output<typeof turnStateSchema>;
/**
 * The 202 of a send or a decision whose turn waits for decisions: no reply yet, the turn and what it waits
 * for. `status` is the client's own mark (not on the wire), telling it apart from a reply.
 */
export interface PausedTurn {
  status: 'awaiting_approval';
  agent_message: null;
  turn: TurnState;
}
/**
 * The 201 of a send while people handle the session (after a handoff): the message is stored and no model
 * answered. `status` is the client's own mark, as on PausedTurn.
 */
export interface HandledByHumans {
  status: 'handled_by_humans';
  agent_message: null;
  handled_by: 'humans';
}
/**
 * A send's (or a decision's) answer, marked by the client: `replied` (201 with the reply),
 * `handled_by_humans` (201, stored, no reply: people answer), or `awaiting_approval` (202).
 */
export type TurnResult<Reply> = (Reply & { status: 'replied' }) | HandledByHumans | PausedTurn;

// Public family (session token)
export type Conversation = z.output<typeof conversationSchema>;
/** A message as the end user sees it: no metadata; tool calls only where the agent exposes them. */
export type ConversationMessage = z.output<typeof conversationMessageSchema>;
export type ConversationReply = z.output<typeof conversationReply>;
export type ConversationMessagePage = PageOf<typeof conversationMessageSchema>;
export type ConversationFile = z.output<typeof conversationFile>;
export type ConversationFilePage = PageOf<typeof conversationFile>;
export type FeedbackCreate = z.input<typeof feedbackRequest>;
export type Feedback = z.output<typeof feedbackSchema>;
export type InactivityStep = z.input<typeof inactivityRequest>['step'];
export type InactivityResult = z.output<typeof inactivityResult>;
/** What a send or a decision answers with a session token: the reply, or the turn waiting for decisions. */
export type ConversationTurnResult = TurnResult<ConversationReply>;
/** What a cancel answers with a session token: the turn (`status: 'cancelled'`, or as it ended) and its reply. */
export type ConversationCancelResult = z.output<typeof conversationCancelResult>;
/**
 * An event of a turn streamed with a session token: `{ event, id, data }`, typed by `event`.
 *
 * - `turn.started` — the user's message is stored (`data.user_message`).
 * - `message.delta` — a piece of the reply text (`data.delta.text`); append it.
 * - `tool.started`, `tool.completed` — only where the agent exposes tool calls.
 * - `message.completed` — the stored reply (`data.message`), the same a plain send answers.
 * - `turn.completed` — the last event; `data.conversation_status` says whether the conversation is still open.
 * - `turn.failed` — the last event of a turn without a reply; with `data.partial`, drop the text shown.
 * - `tool.approval_requested` — a tool call waits for a decision (`data.tool`, `data.input`, `data.approver`).
 * - `turn.awaiting_approval` — the last event while the turn waits: `data.approvals` lists what it waits for;
 *   decide them (approve, deny or decide) to go on.
 * - `turn.cancelled` — the last event of a cancelled turn, after the message.completed of what was written
 *   until then (`stop_reason: "cancelled"`).
 *
 * A second `turn.started` with the same `turn_id` means the turn was interrupted on the server and sent
 * again (same Idempotency-Key): drop the reply text held so far, the turn's text starts over.
 */
export type TurnEvent = ConversationTurnEvent;
/** An event of a conversation's event stream read with its session token (conversation.events()). */
export type ConversationEvent = ConversationStreamEvent;

// Server-side family (API key)
/** An agent as GET /v1/agents shows it: provider, tools and who approves them, handoff. */
export type Agent = z.output<typeof agentSchema>;
export type User = z.output<typeof userSchema>;
/** The fields of a user to create or update; each given field replaces the stored value. */
export type UserFields = z.input<typeof userFields>;
export type UserPage = PageOf<typeof userSchema>;
/** `reference` (exactly), `email` (exactly, case-insensitive), `limit`, `offset`. */
export type UserListQuery = ListQuery<typeof userListQuery>;
/** A webhook endpoint as listed (its secret is shown only when created). */
export type Webhook = z.output<typeof webhookSchema>;
/** `{ url, events, secret? }`: a webhook endpoint's registration. */
export type WebhookCreate = z.input<typeof webhookCreate>;
/** The registered endpoint, with its signing secret: the only answer that shows it. */
export type CreatedWebhook = z.output<typeof createdWebhookSchema>;
export type WebhookDelivery = z.output<typeof webhookDeliverySchema>;
export type WebhookDeliveryPage = PageOf<typeof webhookDeliverySchema>;
export type Session = z.output<typeof sessionSchema>;
/** `{ user?, context?, metadata? }`: a session's (or a conversation's) creation. */
export type SessionCreate = z.input<typeof sessionCreate>;
/** A page of sessions: pass `next_cursor` as `cursor` for the next (or `next_offset` as `offset`). */
export type SessionPage = z.output<typeof sessionPage>;
/**
 * `status`, `agent_id`, `user_id`, `user_reference`, `handled_by` (`agent` or `humans`), `pending_approval`,
 * `updated_after` (ISO 8601, exclusive); `limit`, and `cursor` (a `next_cursor`) or `offset`.
 */
export type SessionListQuery = ListQuery<typeof sessionListQuery>;
/** A message with its metadata and tool calls, as the API key sees it. */
export type Message = z.output<typeof messageSchema>;
export type MessagePage = PageOf<typeof messageSchema>;
export type AgentReply = z.output<typeof keyReply>;
/** What a send or a decision answers with an API key: the reply, or the turn waiting for decisions. */
export type SessionTurnResult = TurnResult<AgentReply>;
/** What a cancel answers with an API key: the turn (`status: 'cancelled'`, or as it ended) and its reply. */
export type CancelResult = z.output<typeof cancelResult>;
/** An event of a turn streamed with an API key: as TurnEvent, with messages as Message and tool events. */
export type SessionTurnEvent = KeyTurnEvent;
/** An event of a session's event stream read with an API key (client.sessionEvents()). */
export type SessionEvent = KeySessionEvent;
/** `run`: 1 to 10 messages for a new session, with the session creation's fields (`persist` is accepted; v1 always persists). */
export type RunRequest = z.input<typeof runRequest>;
export type RunResult = z.output<typeof runResult>;
export type FileRecord = z.output<typeof fileSchema>;
export type FilePage = PageOf<typeof fileSchema>;
/**
 * `name` (case-insensitive prefix), `mime_type`, `created_after` and `created_before` (ISO 8601, exclusive),
 * `session_id` (only the files uploaded in this conversation), `limit`, `offset`.
 */
export type FileListQuery = ListQuery<typeof fileListQuery>;
export type ConversationStart = z.output<typeof conversationStart>;
export type SessionToken = z.output<typeof sessionTokenSchema>;
/** The body `useChat` sends (DefaultChatTransport). */
export type ChatRequest = z.input<typeof chatRequest>;

// A stored message as the API shows it: what a turn answers, what a replay repeats and what the message
// routes list; the public family shows it without its metadata. What the model did (`stop_reason`, `usage`)
// is shown to both families: it is about the reply, not the integrator's own data.
import {
  type ContentBlock,
  fullUsage,
  type JsonObject,
  type MessageAuthor,
  type MessageRecord,
  type MessageUsage,
  type NewMessage,
  type StopReason,
  type ToolCallSummary,
} from '../store/store.ts';

export interface PublicMessage {
  id: string;
  role: 'user' | 'assistant';
  content: ContentBlock[];
  created_at: string;
  metadata: JsonObject | null;
  /** Null on messages no model produced: the user's, authored and inactivity messages. */
  stop_reason: StopReason | null;
  usage: MessageUsage | null;
  /**
   * The turn's tool calls (docs/internals/decisions.md#tool-calls-on-messages); null on messages no model
   * produced.
   */
  tool_calls: ToolCallSummary[] | null;
  /** The operator who wrote the message (docs/guides/humans.md); null on every other message. */
  author: MessageAuthor | null;
}

export const publicMessage = (m: MessageRecord): PublicMessage => ({
  id: m.id,
  role: m.role,
  content: m.content,
  created_at: m.created_at,
  metadata: m.metadata,
  stop_reason: m.stop_reason,
  usage: m.usage,
  tool_calls: m.tool_calls,
  author: m.author,
});

/** A message a commit stores, as the API will show it once stored at `at`. */
export const newMessageView = (m: NewMessage, at: string): PublicMessage => ({
  id: m.id,
  role: m.role,
  content: m.content,
  created_at: at,
  metadata: m.metadata,
  stop_reason: m.stop_reason ?? null,
  usage: m.usage ? fullUsage(m.usage) : null,
  tool_calls: m.tool_calls ?? null,
  author: m.author ?? null,
});

/**
 * A message as the public family shows it: without metadata, which is the integrator's
 * (docs/internals/decisions.md#message-metadata-is-the-integrators), and without its tool calls unless the
 * agent exposes them (`expose_tools`).
 */
export type ConversationMessage = Omit<PublicMessage, 'metadata' | 'tool_calls'> &
  Partial<Pick<PublicMessage, 'tool_calls'>>;

export const conversationMessage = (
  { metadata: _metadata, tool_calls, ...shown }: PublicMessage,
  showTools = false,
): ConversationMessage => (showTools ? { ...shown, tool_calls } : shown);

/** How a family shows the messages it answers with. */
export type MessageView = (m: PublicMessage) => PublicMessage | ConversationMessage;

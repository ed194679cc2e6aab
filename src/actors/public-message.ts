// A stored message as the API shows it: what a turn answers, what a replay repeats and what the message
// routes list; the public family shows it without its metadata. What the model did (`stop_reason`, `usage`)
// is shown to both families: it is about the reply, not the integrator's own data.
import type { ContentBlock, JsonObject, MessageRecord, MessageUsage, StopReason } from '../store/store.ts';

export interface PublicMessage {
  id: string;
  role: 'user' | 'assistant';
  content: ContentBlock[];
  created_at: string;
  metadata: JsonObject | null;
  /** Null on messages no model produced: the user's, authored and inactivity messages. */
  stop_reason: StopReason | null;
  usage: MessageUsage | null;
}

export const publicMessage = (m: MessageRecord): PublicMessage => ({
  id: m.id,
  role: m.role,
  content: m.content,
  created_at: m.created_at,
  metadata: m.metadata,
  stop_reason: m.stop_reason,
  usage: m.usage,
});

/** A message as the public family shows it: without metadata, which is the integrator's (DESIGN.md §3). */
export type ConversationMessage = Omit<PublicMessage, 'metadata'>;

export const conversationMessage = ({
  id,
  role,
  content,
  created_at,
  stop_reason,
  usage,
}: PublicMessage): ConversationMessage => ({
  id,
  role,
  content,
  created_at,
  stop_reason,
  usage,
});

/** How a family shows the messages it answers with. */
export type MessageView = (m: PublicMessage) => PublicMessage | ConversationMessage;

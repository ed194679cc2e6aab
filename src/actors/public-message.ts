// A stored message as the API shows it: what a turn answers, what a replay repeats and what the message
// routes list; the public family shows it without its metadata.
import type { ContentBlock, JsonObject, MessageRecord } from '../store/store.ts';

export interface PublicMessage {
  id: string;
  role: 'user' | 'assistant';
  content: ContentBlock[];
  created_at: string;
  metadata: JsonObject | null;
}

export const publicMessage = (m: MessageRecord): PublicMessage => ({
  id: m.id,
  role: m.role,
  content: m.content,
  created_at: m.created_at,
  metadata: m.metadata,
});

/** A message as the public family shows it: without metadata, which is the integrator's (DESIGN.md §3). */
export type ConversationMessage = Omit<PublicMessage, 'metadata'>;

export const conversationMessage = ({
  id,
  role,
  content,
  created_at,
}: PublicMessage): ConversationMessage => ({
  id,
  role,
  content,
  created_at,
});

/** How a family shows the messages it answers with. */
export type MessageView = (m: PublicMessage) => PublicMessage | ConversationMessage;

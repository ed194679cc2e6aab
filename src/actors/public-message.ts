// A stored message as the API shows it: what a turn answers, what a replay repeats and what the message
// routes list.
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

// Stored records as the API shows them: the Session resource without the routing fields the store keeps, and
// the public family's narrower views of a session (the Conversation) and of a file. Shared by the routes and
// by the webhook events that carry a Session.

import type { z } from 'zod';
import type { approvalSchema, conversationSchema } from '#schemas';
import type { Feedback, SessionRecord, StoredFile } from './store.ts';

/** A tool call waiting for a decision, as the records list it. */
type Approval = z.output<typeof approvalSchema>;

/**
 * The Session resource, with the calls its paused turn waits for (none by default); the store's record also
 * carries routing fields that stay inside.
 */
export const toSession = (
  { tenant_id: _t, shard: _s, expires_at: _e, ...session }: SessionRecord,
  pending_approvals: Approval[] = [],
) => ({ ...session, pending_approvals });

/** The conversation record: no metadata, context or user; only the approvals its end user may decide. */
export const toConversation = (
  s: SessionRecord,
  pending: readonly Approval[] = [],
): z.output<typeof conversationSchema> => ({
  id: s.id,
  agent_id: s.agent_id,
  status: s.status,
  created_at: s.created_at,
  updated_at: s.updated_at,
  closed_at: s.closed_at,
  close_reason: s.close_reason,
  messages_count: s.messages_count,
  last_message_at: s.last_message_at,
  pending_approvals: pending.filter((a) => a.approver === 'user'),
  handled_by: s.handled_by,
  handoff: s.handoff,
});

/** A file as a front-end sees its conversation's files: no metadata, no session. */
export const toConversationFile = ({ metadata: _m, session_id: _s, ...file }: StoredFile) => file;

/** The conversation's feedback as both families show it (what the public feedback route answers). */
export const feedbackView = ({ id, score, submitted_at, comment }: Feedback) => ({
  id,
  score,
  submitted_at,
  comment,
});

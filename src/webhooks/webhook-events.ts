// The events Parley reports to webhooks (docs/internals/decisions.md#webhooks), each built where the change
// it reports is committed and queued in that change's transaction. The payload is written once, when queued,
// as every attempt sends it.

import { newId } from '../ids.ts';
import { shardOf } from '../shards.ts';
import type {
  Feedback,
  SessionRecord,
  SessionStatus,
  WebhookEvent,
  WebhookEventType,
} from '../store/store.ts';
import { toSession } from '../store/views.ts';

/** What the session events say about the session; the rest of the turn and feedback events name it. */
type SessionFacts = Pick<SessionRecord, 'id' | 'tenant_id' | 'agent_id' | 'user' | 'shard'>;

function event(
  tenantId: string,
  type: WebhookEventType,
  orderingKey: string,
  shard: number,
  data: unknown,
  at: string,
): WebhookEvent {
  let payload: string | undefined;
  return {
    id: newId('evt'),
    tenant_id: tenantId,
    type,
    ordering_key: orderingKey,
    shard,
    // Written only when an endpoint subscribes: most turns of most tenants report to none.
    get payload() {
      payload ??= JSON.stringify({ type, timestamp: at, data });
      return payload;
    },
    created_at: at,
  };
}

/** The reason a session event gives for an expiry, which has no close reason of its own. */
export const EXPIRED_REASON = 'ttl';

/**
 * session.closed or session.expired: the Session record as it is after the change, plus `reason` (the
 * close reason; `ttl` for an expiry).
 */
export function sessionEndedEvent(
  session: SessionRecord,
  status: Extract<SessionStatus, 'closed' | 'expired'>,
  after: Pick<
    SessionRecord,
    'updated_at' | 'messages_count' | 'last_message_at' | 'closed_at' | 'close_reason'
  >,
): WebhookEvent {
  const record = toSession({ ...session, ...after, status });
  const reason = status === 'closed' ? after.close_reason : EXPIRED_REASON;
  return event(
    session.tenant_id,
    status === 'closed' ? 'session.closed' : 'session.expired',
    session.id,
    session.shard,
    { ...record, reason },
    after.updated_at,
  );
}

const about = (session: SessionFacts) => ({
  session_id: session.id,
  agent_id: session.agent_id,
  user: session.user,
});

/** turn.completed: the agent's reply was stored. */
export function turnCompletedEvent(
  session: SessionFacts,
  turnId: string,
  message: { usage: unknown },
  at: string,
): WebhookEvent {
  // The turn's usage also at the top, for a billing consumer that reads no messages.
  return event(
    session.tenant_id,
    'turn.completed',
    session.id,
    session.shard,
    { ...about(session), turn_id: turnId, usage: message.usage, message },
    at,
  );
}

/** turn.failed: the turn's messages were stored but no reply came; `error` is what its caller was told. */
export function turnFailedEvent(
  session: SessionFacts,
  turnId: string,
  error: { code: string; message: string },
  at: string,
): WebhookEvent {
  return event(
    session.tenant_id,
    'turn.failed',
    session.id,
    session.shard,
    { ...about(session), turn_id: turnId, error },
    at,
  );
}

/**
 * turn.awaiting_approval: the turn's calls `approvals` wait for decisions
 * (docs/internals/decisions.md#approvals); queued in the write that commits them waiting.
 */
export function turnAwaitingEvent(
  session: SessionFacts,
  turnId: string,
  approvals: readonly unknown[],
  at: string,
): WebhookEvent {
  return event(
    session.tenant_id,
    'turn.awaiting_approval',
    session.id,
    session.shard,
    { ...about(session), turn_id: turnId, approvals },
    at,
  );
}

/**
 * session.handoff_requested or session.handed_back: the Session record as it is after the change, plus
 * `reason` (the handoff's; null for a handback).
 */
export function handoffEvent(session: SessionRecord, at: string): WebhookEvent {
  const record = toSession({ ...session, updated_at: at });
  const type = session.handoff ? 'session.handoff_requested' : 'session.handed_back';
  return event(
    session.tenant_id,
    type,
    session.id,
    session.shard,
    { ...record, reason: session.handoff?.reason ?? null },
    at,
  );
}

/** message.created: a message was stored (what a help-desk bridge follows), as the API key's family shows it. */
export function messageCreatedEvent(session: SessionFacts, message: unknown, at: string): WebhookEvent {
  return event(
    session.tenant_id,
    'message.created',
    session.id,
    session.shard,
    { ...about(session), message },
    at,
  );
}

/** feedback.submitted, built from the feedback as stored (a later one keeps the first id). */
export const feedbackEvent =
  (session: SessionFacts) =>
  (feedback: Feedback): WebhookEvent =>
    event(
      session.tenant_id,
      'feedback.submitted',
      session.id,
      session.shard,
      {
        ...about(session),
        feedback: {
          id: feedback.id,
          score: feedback.score,
          comment: feedback.comment,
          metadata: feedback.metadata,
          submitted_at: feedback.submitted_at,
        },
      },
      feedback.submitted_at,
    );

/** user.deleted, delivered by the owner of the user id's shard, in order with that user's other events. */
export function userDeletedEvent(tenantId: string, userId: string, at: string): WebhookEvent {
  return event(tenantId, 'user.deleted', userId, shardOf(userId), { id: userId, deleted_at: at }, at);
}

// The fenced commit: a session's lasting change is written with its shard's fencing epoch and with the
// snapshot its actor will have after the change's event; only then do the entry and the actor follow. A
// refused epoch means another process owns the shard now: the shard is given up and the caller gets
// shard_moving. An answer given without a write is fenced by a read of the epoch instead (confirmFence).
import { shardMoving } from '../errors.ts';
import { persistedSnapshot } from '../machines/session-snapshot.ts';
import { shardOf } from '../shards.ts';
import {
  type Fence,
  type SessionWriteResult,
  StaleEpochError,
  type Store,
  type WebhookEvent,
} from '../store/store.ts';
import { handoffEvent, messageCreatedEvent, sessionEndedEvent } from '../webhooks/webhook-events.ts';
import { traceDecisions } from './approval-traces.ts';
import type { SessionChange } from './operation-context.ts';
import { newMessageView } from './public-message.ts';
import type { SessionEntry } from './resident-actors.ts';
import { sessionEventsOf } from './session-events.ts';

export interface FencedCommitDeps {
  store: Store;
  /** The shard's fence, or null when this process may no longer write it. */
  fence(shard: number): Fence | null;
  /** A write of `shard` was refused for a stale epoch. */
  lost(shard: number): void;
  /** A write queued webhook events: the deliverer may look at once. */
  queuedWebhookEvents?(): void;
  /** A write appended events to a session's log, the last of them `seq`: its streams may read them now. */
  sessionEvents?(sessionId: string, seq: number): void;
}

export async function commitFenced(
  deps: FencedCommitDeps,
  entry: SessionEntry,
  change: SessionChange,
): Promise<SessionWriteResult> {
  const { id, shard } = entry.session;
  const fence = deps.fence(shard);
  if (!fence) throw shardMoving({ session_id: id });
  const { event, patch, last, ...write } = change;
  const snapshot = persistedSnapshot(entry.actor.getSnapshot(), event);
  const keyed = write.idempotency !== undefined || write.idempotencyResponse !== undefined;
  const hooks = withSessionEvents(entry, change);
  const at = hooks?.at ?? change.at ?? new Date().toISOString();
  const logged = sessionEventsOf(id, change, at);
  let result: SessionWriteResult;
  try {
    result = await deps.store.commitSession({
      ...write,
      ...hooks,
      at,
      events: logged,
      session_id: id,
      fence,
      patch: { ...patch, snapshot },
    });
  } catch (err) {
    if (!(err instanceof StaleEpochError)) throw err;
    deps.lost(shard);
    throw shardMoving({ session_id: id }, err);
  } finally {
    // Counted once the write has settled, whatever its outcome (a failed one may still have landed): a
    // key lookup that read while it was in flight took the count from before it, and so reads again.
    if (keyed) entry.keyedCommits++;
  }
  if (result.webhook_deliveries > 0) deps.queuedWebhookEvents?.();
  if (logged.length > 0) deps.sessionEvents?.(id, result.events_count);
  if (write.decisions) traceDecisions(deps.store, id, write.decisions);
  entry.session.messages_count = result.messages_count;
  if (patch?.handoff !== undefined) {
    entry.session.handoff = patch.handoff;
    entry.session.handled_by = patch.handoff ? 'humans' : 'agent';
  }
  if (patch?.metadata) entry.session.metadata = patch.metadata;
  // Kept for the session events' record; the rest of the row is the actor's snapshot.
  if (patch?.last_message_at) entry.session.last_message_at = patch.last_message_at;
  entry.history.append(result.messages);
  // An event costs a whole machine transition; an operation's closing activity rides on its DONE, a few
  // microtasks later. In between the actor still has the lifetime of the turn's first commit: an expiry
  // submitted then waits behind the turn and checks the lifetime again when it runs (operations.ts).
  if (last && event?.type === 'ACTIVITY' && !event.byUser && !event.turnEnded && !event.handoff)
    entry.doneExpiresAt = event.expiresAt;
  else if (event) entry.actor.send(event);
  return result;
}

/**
 * Resolves while the store still holds this process's fence of the session's shard; otherwise the shard is
 * given up, as after a refused write, and it rejects with shard_moving. For an answer the actor gives from
 * memory without writing (a refusal such as approval_pending): a process that does not know yet that its
 * shard was taken (Redis restarted and another process claimed it before this one's next renewal) would
 * answer from state the new owner has moved on from; no claim since ours means nobody else wrote the session.
 */
export async function confirmFence(deps: FencedCommitDeps, sessionId: string): Promise<void> {
  const shard = shardOf(sessionId);
  const fence = deps.fence(shard);
  if (!fence) throw shardMoving({ session_id: sessionId });
  if (await deps.store.holdsFence(fence)) return;
  // Unless the lease was lost, and a new one taken, while the store answered.
  if (deps.fence(shard)?.epoch === fence.epoch) deps.lost(shard);
  throw shardMoving({ session_id: sessionId });
}

/**
 * The change's webhook events, with message.created for each message it stores, session.handoff_requested or
 * session.handed_back when it changes who handles the session, and session.closed or session.expired when it
 * ends the session (terminate, an inactivity final message, expiry): the record as it will be after the
 * write, at its time.
 */
function withSessionEvents(
  entry: SessionEntry,
  change: SessionChange,
): { webhookEvents: WebhookEvent[]; at?: string } | undefined {
  const { patch, webhookEvents, messages } = change;
  const ended = patch?.status === 'closed' || patch?.status === 'expired' ? patch.status : null;
  const handoff = patch?.handoff;
  if (!ended && handoff === undefined && !messages?.length)
    return webhookEvents ? { webhookEvents } : undefined;
  const { session } = entry;
  const at = change.at ?? new Date().toISOString();
  const after = {
    ...session,
    updated_at: at,
    messages_count: session.messages_count + (messages?.length ?? 0),
    last_message_at: patch?.last_message_at ?? session.last_message_at,
    closed_at: patch?.closed_at ?? session.closed_at,
    close_reason: patch?.close_reason ?? session.close_reason,
    ...(handoff === undefined
      ? {}
      : { handoff, handled_by: handoff ? ('humans' as const) : ('agent' as const) }),
  };
  const events = (messages ?? []).map((m) => messageCreatedEvent(session, newMessageView(m, at), at));
  events.push(...(webhookEvents ?? []));
  if (handoff !== undefined) events.push(handoffEvent(after, at));
  if (ended) events.push(sessionEndedEvent(after, ended, after));
  return { webhookEvents: events, at };
}

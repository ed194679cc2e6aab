// A session's lasting changes, each defined once: the columns it sets on the session row and the machine
// event it implies. An operation commits one with its messages; the host applies the event to the stored
// snapshot in the same write and sends it to the actor once the write is committed.
import type { Handoff } from '../machines/session.ts';
import type { SessionChange } from './operation-context.ts';

type Transition = Required<Pick<SessionChange, 'patch' | 'event'>>;

/**
 * Messages were stored at `at`: the session lives `ttlMs` from then; one by the user ends a warning. The
 * reply that ends a paused turn (`endsPaused`) ends the paused state too, and the session's wake_at.
 */
export function activity(at: string, ttlMs: number, byUser: boolean, endsPaused = false): Transition {
  const expiresAt = Date.parse(at) + ttlMs;
  const patch = { last_message_at: at, expires_at: new Date(expiresAt).toISOString() };
  return endsPaused
    ? { patch: { ...patch, wake_at: null }, event: { type: 'ACTIVITY', expiresAt, byUser, turnEnded: true } }
    : { patch, event: { type: 'ACTIVITY', expiresAt, byUser } };
}

/** The inactivity warning was stored. Not activity: the session's lifetime stays where it was. */
export const warned = (): Transition => ({ patch: {}, event: { type: 'WARNED' } });

/** The session closed at `at`, for `reason`. */
export const closed = (at: string, reason: string | null): Transition => ({
  patch: { status: 'closed', closed_at: at, close_reason: reason },
  event: { type: 'CLOSED', closedAt: at, reason },
});

/** People handle the session from now on (`handoff`), or the agent again (null). */
export const handoffChange = (handoff: Handoff | null): Transition =>
  handoff
    ? { patch: { handoff }, event: { type: 'HANDED_OFF', handoff } }
    : { patch: { handoff: null }, event: { type: 'HANDED_BACK' } };

/** The session's lifetime has passed. */
export const expired = (): Transition => ({ patch: { status: 'expired' }, event: { type: 'EXPIRED' } });

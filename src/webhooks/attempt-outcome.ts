// What an attempt of a webhook delivery comes to (docs/internals/decisions.md#webhooks): delivered on a 2xx;
// otherwise pending until the next wait of the retry schedule, or failed once the schedule is spent; and what
// it says of its endpoint: answered with a 2xx, healthy; otherwise failing, backed off as a whole until the
// wait of the endpoint's own failures in a row (the retry schedule again), so that a dead endpoint costs one
// attempt per wait rather than one per delivery.
import type { DueWebhookDelivery, WebhookAttempt } from '../store/store.ts';
import type { AttemptResult } from './sender.ts';

export interface OutcomeTimes {
  /** Milliseconds to wait after attempt 1, 2, …; once the attempts outnumber them the delivery has failed. */
  retrySchedule: readonly number[];
  /** How long after its event a delivery is retried at most: the schedule's span (at least 10 min). */
  retrySpanMs: number;
  /** What one attempt of it may take, at most, beyond its wait (its timeout, the claim's slack, a poll). */
  attemptMs: number;
}

/**
 * The outcome of attempt `attempts + 1` of `delivery`, ended at `now` with `result`; `probe` when it was its
 * failing endpoint's one attempt.
 */
export function outcomeOf(
  delivery: DueWebhookDelivery,
  result: AttemptResult,
  now: number,
  probe: boolean,
  times: OutcomeTimes,
): Pick<WebhookAttempt, 'status' | 'next_attempt_at' | 'endpoint'> {
  const code = result.status_code;
  if (code !== null && code >= 200 && code <= 299) {
    return { status: 'delivered', next_attempt_at: null, endpoint: null };
  }
  const { retrySchedule } = times;
  // The endpoint's wait: after its n-th failure in a row, the schedule's n-th wait (then its last). An
  // attempt that was not its probe (sent while it was healthy) counts as its first.
  const failures = probe ? delivery.endpoint_failures + 1 : 1;
  const endpointWait = retrySchedule[Math.min(failures, retrySchedule.length) - 1] ?? 0;
  const endpoint = {
    retry_at: new Date(now + endpointWait).toISOString(),
    probe,
    give_up_before: new Date(now - times.retrySpanMs).toISOString(),
  };
  // This was attempt `attempts + 1`; the wait after it is the schedule's entry at `attempts`. A delivery that
  // waited behind others (an endpoint down for a day) is not given a schedule of its own: past the
  // schedule's span from its event, one attempt is its last, so a backlog drains in one pass.
  const wait = retrySchedule[delivery.attempts];
  // What its own attempts may have taken is allowed for, so that a delivery that never waited keeps its
  // whole schedule.
  const allowance = (delivery.attempts + 1) * times.attemptMs;
  const age = now - Date.parse(delivery.created_at);
  if (wait === undefined || age >= times.retrySpanMs + allowance) {
    return { status: 'failed', next_attempt_at: null, endpoint };
  }
  return { status: 'pending', next_attempt_at: new Date(now + wait).toISOString(), endpoint };
}

// The statements of an endpoint's backoff, for both stores (docs/internals/decisions.md#webhooks): an
// endpoint whose attempt failed is backed off as a whole, its deliveries waiting together until its
// `retry_at`, when one of them goes as a probe; an answered attempt makes it healthy again; and when it has
// failed every attempt for longer than the retry schedule's span, its deliveries older than that are given up.
import { type Dialect, instant, Query, type Statement } from './sql.ts';
import { WEBHOOK_ENDPOINT_FAILING, type WebhookProbeClaim } from './store.ts';

/** Takes a failing endpoint's probe if its `retry_at` is still as read (one row changed, or none). */
export function claimWebhookProbe(d: Dialect, claim: WebhookProbeClaim): Statement {
  const q = new Query(d);
  return q.statement(`UPDATE webhooks SET retry_at = ${q.param(instant(claim.until))}
    WHERE id = ${q.param(claim.webhook_id)} AND retry_at = ${q.param(instant(claim.retry_at))}`);
}

/** An endpoint answered: healthy again (its failures forgotten, nothing held back). */
export function endpointAnswered(d: Dialect, webhookId: string): Statement {
  const q = new Query(d);
  return q.statement(`UPDATE webhooks SET failures = 0, failing_since = NULL, retry_at = NULL
    WHERE id = ${q.param(webhookId)} AND failures > 0`);
}

/**
 * An endpoint's attempt failed at `at`: a probe's sets its `retry_at` and adds a failure; another's (sent
 * while it was healthy, or before its probe's outcome) makes them at least one and `retry_at` at least the
 * given one. Returns the endpoint's `retry_at` and `failing_since` after.
 */
export function endpointFailed(
  d: Dialect,
  webhookId: string,
  failure: { at: string; retry_at: string; probe: boolean },
): Statement {
  // Parameters in the order the text reads them (SQLite's `?` is positional), each use its own.
  const q = new Query(d);
  const retryAt = () => q.param(instant(failure.retry_at));
  const [failures, retry] = failure.probe
    ? ['failures + 1', retryAt()]
    : [
        'CASE WHEN failures < 1 THEN 1 ELSE failures END',
        `CASE WHEN retry_at IS NULL OR retry_at < ${retryAt()} THEN ${retryAt()} ELSE retry_at END`,
      ];
  return q.statement(`UPDATE webhooks SET failures = ${failures}, retry_at = ${retry},
      failing_since = coalesce(failing_since, ${q.param(instant(failure.at))})
    WHERE id = ${q.param(webhookId)} RETURNING retry_at, failing_since`);
}

/** Moves an endpoint's deliveries due before `until` (first of their keys, or retries) to it. */
export function holdDeliveries(d: Dialect, webhookId: string, until: string): Statement {
  const q = new Query(d);
  return q.statement(`UPDATE webhook_deliveries SET next_attempt_at = ${q.param(instant(until))}
    WHERE webhook_id = ${q.param(webhookId)} AND status = 'pending'
      AND next_attempt_at < ${q.param(instant(until))}`);
}

/**
 * Fails an endpoint's pending deliveries created before `before`, unsent; returns what each counted in its
 * tenant's outbox (`tenant_id`, `shard`, `bytes`).
 */
export function giveUpDeliveries(d: Dialect, webhookId: string, before: string): Statement {
  const q = new Query(d);
  return q.statement(`UPDATE webhook_deliveries SET status = 'failed', error = ${q.param(WEBHOOK_ENDPOINT_FAILING)},
      next_attempt_at = NULL
    WHERE webhook_id = ${q.param(webhookId)} AND status = 'pending' AND created_at < ${q.param(instant(before))}
    RETURNING tenant_id, shard, bytes`);
}

/**
 * Makes the first pending delivery of each of an endpoint's keys due at `at` where it is blocked (the ones
 * before it were given up): a key's chain goes on from its oldest pending delivery.
 */
export function unblockEndpointKeys(d: Dialect, webhookId: string, at: string): Statement {
  const q = new Query(d);
  return q.statement(`UPDATE webhook_deliveries SET next_attempt_at = ${q.param(instant(at))}
    WHERE next_attempt_at IS NULL AND status = 'pending' AND id IN (
      SELECT (SELECT x.id FROM webhook_deliveries x
          WHERE x.webhook_id = k.webhook_id AND x.ordering_key = k.ordering_key AND x.status = 'pending'
          ORDER BY x.${d.rowOrder} LIMIT 1)
        FROM (SELECT DISTINCT webhook_id, ordering_key FROM webhook_deliveries
          WHERE webhook_id = ${q.param(webhookId)} AND status = 'pending') k)`);
}

// The Store's webhooks: a tenant's endpoints, the events queued in the transaction of the change they
// report, and the outbox of their deliveries (due, claimed, attempted, cleaned up).
import type { WebhookEventType } from '#schemas';
import type { Page, PageRequest } from './common.ts';

/** A tenant's webhook endpoint; its signing secret is read only by the deliverer. */
export interface Webhook {
  id: string;
  url: string;
  events: WebhookEventType[];
  created_at: string;
}

export interface NewWebhook {
  id: string;
  url: string;
  events: WebhookEventType[];
  /** `whsec_` + base64. */
  secret: string;
}

/**
 * An event to deliver, written in the transaction of the change it reports: one delivery for each of its
 * tenant's endpoints subscribed to its type at that moment (none, and nothing is stored, when there are none).
 */
export interface WebhookEvent {
  /** `evt_…`: the webhook-id every attempt of every delivery of it carries. */
  id: string;
  tenant_id: string;
  type: WebhookEventType;
  /** Deliveries of an endpoint with the same key go out in the order written: a session's id, a user's id. */
  ordering_key: string;
  /** The shard whose owner delivers it: the session's, or shardOf(the user's id). */
  shard: number;
  /** The body sent, as written: JSON of `{ type, timestamp, data }`. */
  payload: string;
  created_at: string;
}

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event's delivery to one endpoint, as listed. */
export interface WebhookDelivery {
  id: string;
  webhook_id: string;
  event_id: string;
  type: WebhookEventType;
  status: WebhookDeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  /**
   * Why it is not delivered: what the last attempt got instead of an answer (`timeout`, a connection error's
   * code, …), or why it was never sent (WEBHOOK_OUTBOX_FULL); null once an attempt was answered.
   */
  error: string | null;
  last_attempt_at: string | null;
  /** Null once delivered or failed. */
  next_attempt_at: string | null;
  created_at: string;
}

/** The error of a delivery refused when queued: its tenant's outbox was past its cap. */
export const WEBHOOK_OUTBOX_FULL = 'outbox_full';
/**
 * The error of a delivery given up unsent: its endpoint failed every attempt made to it for longer than the
 * retry schedule's span, and the delivery is older than that span.
 */
export const WEBHOOK_ENDPOINT_FAILING = 'endpoint_failing';

/**
 * A tenant's cap on its pending deliveries, and on their bytes (a payload counts once for each endpoint
 * still to be sent it): past either, a new delivery is stored failed (WEBHOOK_OUTBOX_FULL) instead of pending.
 */
export interface WebhookOutboxLimits {
  maxPendingDeliveries: number;
  maxPendingBytes: number;
}

export interface WebhookOutboxSettings extends WebhookOutboxLimits {
  /** Told, once the change that queued them committed, how many deliveries were refused. */
  onRefused?(count: number): void;
}

/** What a tenant has pending, as its outbox counts it. */
export interface WebhookOutboxUsage {
  pending_deliveries: number;
  pending_bytes: number;
}

/**
 * A delivery due now, with what sending it needs but its payload (read once claimed, webhookPayload: a round
 * reads more due deliveries than it sends).
 */
export interface DueWebhookDelivery {
  id: string;
  tenant_id: string;
  webhook_id: string;
  event_id: string;
  type: WebhookEventType;
  ordering_key: string;
  /** The shard whose owner sends it. */
  shard: number;
  /** Attempts made so far: what a claim and a record check, so that a stale read sends nothing. */
  attempts: number;
  /** When it fell due, as read: what a claim checks. */
  next_attempt_at: string;
  url: string;
  secret: string;
  created_at: string;
  /**
   * Its endpoint's failed attempts in a row (0: healthy) and, when failing, when its next attempt may go, as
   * read: a failing endpoint is sent one delivery at a time (a probe), taken with claimWebhookProbe.
   */
  endpoint_failures: number;
  endpoint_retry_at: string | null;
}

/**
 * A process takes a due delivery for one attempt: its `next_attempt_at` moves to `until` (the attempt's
 * deadline), so that no other process (nor a stale read of this one) sends it meanwhile, and the attempt is
 * counted (`attempts` + 1, `last_attempt_at` = `at`) before anything is sent: one cut off midway (its
 * process killed) stays counted, and its delivery is due again once the claim lapses.
 */
export interface WebhookClaim {
  id: string;
  /** As read with the due delivery: the claim fails when either changed since. */
  attempts: number;
  next_attempt_at: string;
  /** When the attempt starts. */
  at: string;
  until: string;
}

/** The outcome of one attempt: delivered, pending again at `next_attempt_at`, or failed for good. */
export interface WebhookAttempt {
  id: string;
  /**
   * The attempts counted, this one included (as its claim left them): the record fails when the delivery was
   * claimed again since (its claim lapsed) or recorded.
   */
  attempts: number;
  status: WebhookDeliveryStatus;
  /** The receiver's HTTP status; null when no answer came (refused, timed out). */
  status_code: number | null;
  /** Why no answer came (`timeout`, a connection error's code, …); null with a status code. */
  error: string | null;
  at: string;
  next_attempt_at: string | null;
  /**
   * What the attempt says of its endpoint. Delivered, null: the endpoint is healthy again. Otherwise the
   * endpoint is failing, backed off as a whole: none of its deliveries is due before `retry_at` (those due
   * sooner move to it). A probe (the one attempt of a failing endpoint) sets `retry_at` and adds one to its
   * failures; another attempt makes them at least one and `retry_at` at least this. When the endpoint has
   * been failing since before `give_up_before`, its pending deliveries created before it are failed unsent
   * (WEBHOOK_ENDPOINT_FAILING), and the next of each of their keys falls due at `retry_at`.
   */
  endpoint: { retry_at: string; probe: boolean; give_up_before: string } | null;
}

/** A process takes a failing endpoint's next attempt (its probe), as read; see claimWebhookProbe. */
export interface WebhookProbeClaim {
  webhook_id: string;
  /** The endpoint's `retry_at` as read: the claim fails when it changed since. */
  retry_at: string;
  /** Until when no other probe of it may go: its `retry_at` moves there. */
  until: string;
}

export interface WebhookStore {
  /**
   * Sets the tenants' outbox caps (none until called) and who hears of refusals, for every change this
   * store queues events in from now on.
   */
  configureWebhookOutbox(settings: WebhookOutboxSettings): void;
  /** What the tenant has pending, as the cap counts it. */
  webhookOutboxUsage(tenantId: string): Promise<WebhookOutboxUsage>;
  /**
   * Registers an endpoint unless the tenant has `limit` already, counted in the insert's transaction (so
   * that registrations made at once cannot pass it together); null when it has.
   */
  createWebhook(tenantId: string, webhook: NewWebhook, limit: number): Promise<Webhook | null>;
  /** Oldest first. */
  listWebhooks(tenantId: string): Promise<Webhook[]>;
  getWebhook(tenantId: string, id: string): Promise<Webhook | null>;
  /** Removes the endpoint and its deliveries (their pending bytes leave the outbox); false when the tenant had no such endpoint. */
  deleteWebhook(tenantId: string, id: string): Promise<boolean>;
  /** An endpoint's deliveries, newest first; null when the tenant has no such endpoint. */
  listWebhookDeliveries(
    tenantId: string,
    webhookId: string,
    page: PageRequest,
  ): Promise<Page<WebhookDelivery> | null>;
  /**
   * Pending deliveries due at `now` (only in `shards` when given, none of `skip`'s tenants or endpoints),
   * earliest due first, at most `limit`. Only the first pending delivery of an endpoint and ordering key is
   * ever due: one queued behind another has no `next_attempt_at` until the one before it is delivered or
   * failed. None of an endpoint backed off until after `now` is due.
   */
  dueWebhookDeliveries(
    now: string,
    limit: number,
    shards?: readonly number[],
    skip?: { tenants: readonly string[]; webhooks: readonly string[] },
  ): Promise<DueWebhookDelivery[]>;
  /**
   * Takes a failing endpoint's next attempt: its `retry_at` moves to `until` if still as read, so that one
   * process sends one delivery to it meanwhile. Given back with the reverse claim (from `until` to what was
   * read). False when it changed since (taken, recorded, healthy again, deleted).
   */
  claimWebhookProbe(claim: WebhookProbeClaim): Promise<boolean>;
  /** The payload of an event while a delivery of it is pending (null after: it may be pruned since). */
  webhookPayload(eventId: string): Promise<string | null>;
  /**
   * Takes a due delivery for one attempt and counts it; false when it is no longer as read (claimed,
   * recorded, deleted).
   */
  claimWebhookDelivery(claim: WebhookClaim): Promise<boolean>;
  /**
   * Gives back a claim whose attempt ended unrecorded (its process stopping): the delivery is due at `at`
   * rather than once the claim lapses; the attempt stays counted. False when the claim is not held any more.
   */
  releaseWebhookClaim(
    claim: Pick<WebhookClaim, 'id' | 'until' | 'at'> & { attempts: number },
  ): Promise<boolean>;
  /**
   * Records a claimed attempt: status, status code and next attempt as given. Delivered or failed,
   * the next delivery of its endpoint and ordering key falls due at `at`, in the same transaction. False (and
   * nothing written) when the delivery is not pending with `attempts` as given any more.
   */
  recordWebhookAttempt(attempt: WebhookAttempt): Promise<boolean>;
  /** Deletes delivered and failed deliveries created before `before`, at most `limit`; returns how many. */
  deleteOldWebhookDeliveries(before: string, limit: number): Promise<number>;
  /** Deletes the payloads of events none of whose deliveries is pending any more, at most `limit`; how many. */
  pruneWebhookEvents(limit: number): Promise<number>;
}

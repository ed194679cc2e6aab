// The webhook deliverer (docs/internals/decisions.md#webhooks): every `pollMs`, or at once when woken, it
// takes the due deliveries of the shards this process serves from the outbox, sends them (a few at a time)
// and records each attempt: delivered on a 2xx, otherwise pending until the next wait of the retry schedule,
// or failed once the schedule is spent. The store hands out only the first pending delivery of an endpoint
// and ordering key, so a session's events reach an endpoint in order. One round at a time; a failed round is
// logged and the next retries.
import type { DueWebhookDelivery, Store, WebhookAttempt } from '../store/store.ts';
import type { AttemptResult, WebhookSender } from './sender.ts';
import type { WebhookMetrics } from './webhook-metrics.ts';

export const DEFAULT_WEBHOOK_POLL_MS = 1000;
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
export const DEFAULT_WEBHOOK_CONCURRENCY = 16;
/** A claim outlives its attempt's timeout by this much, for the record to be written. */
const CLAIM_SLACK_MS = 2_000;
/** The least time a delivery queued behind others is retried for (see #outcomeOf). */
const MIN_RETRY_SPAN_MS = 10 * 60_000;

export interface WebhookDelivererOptions {
  store: Store;
  /** The shards whose deliveries this process sends (Coordinator.servedShards); undefined for every shard. */
  shards(): readonly number[] | undefined;
  /** Whether this process still serves `shard`, asked again right before an attempt (Coordinator.serves). */
  serves?(shard: number): boolean;
  /** Milliseconds to wait after attempt 1, 2, …; once the attempts outnumber them the delivery has failed. */
  retrySchedule: readonly number[];
  /** Whether endpoints on private or loopback addresses are sent to (PARLEY_WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  pollMs?: number;
  /** The time an attempt has, for the answer's headers and body together. */
  timeoutMs?: number;
  /** Most attempts in flight at once. */
  concurrency?: number;
  metrics: WebhookMetrics;
  log: { warn(obj: unknown, msg?: string): void };
}

export class WebhookDeliverer {
  readonly #o: WebhookDelivererOptions;
  readonly #pollMs: number;
  readonly #timeoutMs: number;
  readonly #concurrency: number;
  /** Aborted by stop(): attempts in flight end without being recorded. */
  #stopping = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  /** Woken during a round: look again as soon as it ends. */
  #again = false;
  #round: Promise<void> = Promise.resolve();
  /** Attempts in flight, by delivery id. */
  readonly #inFlight = new Map<string, Promise<void>>();
  #sender: Promise<WebhookSender> | undefined;

  /** How long after its event a delivery is retried at most: the schedule's span. */
  readonly #retrySpanMs: number;

  constructor(options: WebhookDelivererOptions) {
    this.#o = options;
    this.#retrySpanMs = Math.max(
      MIN_RETRY_SPAN_MS,
      options.retrySchedule.reduce((sum, wait) => sum + wait, 0),
    );
    this.#pollMs = options.pollMs ?? DEFAULT_WEBHOOK_POLL_MS;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
    this.#concurrency = Math.max(1, options.concurrency ?? DEFAULT_WEBHOOK_CONCURRENCY);
  }

  start(): void {
    if (this.#timer) return;
    this.#stopping = new AbortController();
    this.#timer = setInterval(() => this.wake(), this.#pollMs);
    this.#timer.unref();
    this.wake();
  }

  /** Something was just queued or became due here: look now rather than at the next poll. */
  wake(): void {
    if (!this.#timer) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    this.#round = this.#rounds();
  }

  /** Stops looking and aborts the attempts in flight: they stay pending, for whoever serves their shard next. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#stopping.abort(new Error('webhook deliverer stopped'));
    await this.#round;
    await Promise.all(this.#inFlight.values());
    const sender = this.#sender;
    this.#sender = undefined;
    if (sender) await sender.then((s) => s.close()).catch(() => {});
  }

  async #rounds(): Promise<void> {
    try {
      do {
        this.#again = false;
        try {
          await this.#look();
        } catch (err) {
          this.#o.log.warn({ err }, 'webhook delivery round failed; the next one retries');
        }
      } while (this.#again && this.#timer);
    } finally {
      // In the same step as the last check of #again: a wake() after it starts a new round.
      this.#running = false;
    }
  }

  async #look(): Promise<void> {
    const room = this.#concurrency - this.#inFlight.size;
    if (room <= 0) return;
    const shards = this.#o.shards();
    if (shards?.length === 0) return;
    // Deliveries in flight are still pending and due: ask for enough to fill the room without them.
    const due = await this.#o.store.dueWebhookDeliveries(
      new Date().toISOString(),
      room + this.#inFlight.size,
      shards,
    );
    const { serves } = this.#o;
    const sendable = due.filter((d) => !this.#inFlight.has(d.id) && (serves?.(d.shard) ?? true));
    for (const delivery of sendable.slice(0, room)) {
      if (!this.#timer) return;
      const attempt = this.#attempt(delivery)
        .catch((err) => {
          this.#o.log.warn(
            { err, delivery_id: delivery.id },
            'webhook attempt failed; it will be sent again',
          );
          return false;
        })
        .then((lookAgain) => {
          // Out of the in-flight set before looking again, so that its slot counts as free.
          this.#inFlight.delete(delivery.id);
          if (lookAgain) this.wake();
        });
      this.#inFlight.set(delivery.id, attempt);
    }
  }

  /** Sends and records one attempt; true when the next delivery of its endpoint and key may be due now. */
  async #attempt(delivery: DueWebhookDelivery): Promise<boolean> {
    const { store, metrics, log } = this.#o;
    const signal = this.#stopping.signal;
    const sender = await this.#senderOf();
    const at = new Date();
    // Taken for this attempt only if still as read: another process (a shard handed over mid-attempt) or an
    // earlier read of this one sends nothing meanwhile, and the record below fails if it was taken anyway.
    // The claim counts the attempt, so that one cut off (this process killed) is counted all the same.
    const claim = {
      id: delivery.id,
      attempts: delivery.attempts,
      next_attempt_at: delivery.next_attempt_at,
      at: at.toISOString(),
      until: new Date(at.getTime() + this.#timeoutMs + CLAIM_SLACK_MS).toISOString(),
    };
    const claimed = { id: delivery.id, attempts: delivery.attempts + 1, until: claim.until };
    if (!(await store.claimWebhookDelivery(claim))) return false;
    // The request ends within the claim, however long the claim itself took (a pool wait, a paused process):
    // past it, another process may be sending the delivery.
    const left = Date.parse(claim.until) - CLAIM_SLACK_MS - Date.now();
    if (left <= 0) return false;
    let result: AttemptResult;
    try {
      result = await sender.send(delivery, Math.min(this.#timeoutMs, left), signal);
    } catch (err) {
      if (signal.aborted) {
        // Stopped mid-attempt: no outcome is recorded (the attempt stays counted), and the claim is given
        // back so that the next owner sends it at once rather than once the claim lapses.
        await store.releaseWebhookClaim({ ...claimed, at: new Date().toISOString() }).catch(() => false);
        return false;
      }
      result = { status_code: null, error: err instanceof Error ? err.message : String(err) };
    }
    const ended = Date.now();
    const outcome = this.#outcomeOf(delivery, result, ended);
    const record: WebhookAttempt = {
      id: delivery.id,
      attempts: claimed.attempts,
      status_code: result.status_code,
      error: result.status_code === null ? result.error : null,
      at: at.toISOString(),
      ...outcome,
    };
    try {
      // False: claimed again by another attempt since (this claim had lapsed); that attempt's record stands.
      if (!(await store.recordWebhookAttempt(record))) return true;
    } catch (err) {
      // No look at once: the delivery is sent again once its claim lapses.
      log.warn(
        { err, delivery_id: delivery.id },
        'recording a webhook attempt failed; it will be sent again',
      );
      return false;
    }
    metrics.attemptDuration.observe((ended - at.getTime()) / 1000);
    metrics.deliveries.inc({ outcome: outcome.status === 'pending' ? 'retry' : outcome.status });
    // A retry due before the next poll (a short schedule) is looked for when it is due.
    if (outcome.next_attempt_at) this.#wakeAt(Date.parse(outcome.next_attempt_at));
    if (outcome.status === 'failed') {
      log.warn(
        { delivery_id: delivery.id, webhook_id: delivery.webhook_id, event_id: delivery.event_id, ...result },
        "webhook delivery failed for good: its retry schedule is spent, or its event is older than the schedule's span",
      );
    }
    return true;
  }

  #wakeAt(due: number): void {
    const wait = due - Date.now();
    if (wait >= this.#pollMs) return;
    setTimeout(() => this.wake(), Math.max(0, wait)).unref();
  }

  #outcomeOf(
    delivery: DueWebhookDelivery,
    result: AttemptResult,
    now: number,
  ): Pick<WebhookAttempt, 'status' | 'next_attempt_at'> {
    const code = result.status_code;
    if (code !== null && code >= 200 && code <= 299) return { status: 'delivered', next_attempt_at: null };
    // This was attempt `attempts + 1`; the wait after it is the schedule's entry at `attempts`. A delivery that
    // waited behind others (an endpoint down for a day) is not given a schedule of its own: past the
    // schedule's span from its event, one attempt is its last, so a backlog drains in one pass.
    const wait = this.#o.retrySchedule[delivery.attempts];
    // What its own attempts may have taken is allowed for, so that a delivery that never waited keeps its
    // whole schedule.
    const allowance = (delivery.attempts + 1) * (this.#timeoutMs + CLAIM_SLACK_MS + this.#pollMs);
    const age = now - Date.parse(delivery.created_at);
    if (wait === undefined || age >= this.#retrySpanMs + allowance) {
      return { status: 'failed', next_attempt_at: null };
    }
    return { status: 'pending', next_attempt_at: new Date(now + wait).toISOString() };
  }

  #senderOf(): Promise<WebhookSender> {
    // Loaded on the first delivery: a process without webhooks never loads undici or standardwebhooks here.
    this.#sender ??= import('./sender.ts').then(
      ({ WebhookSender }) => new WebhookSender({ allowPrivate: this.#o.allowPrivate }),
      (err) => {
        this.#sender = undefined;
        throw err;
      },
    );
    return this.#sender;
  }
}

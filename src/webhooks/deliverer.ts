// The webhook deliverer (docs/internals/decisions.md#webhooks): every `pollMs`, or at once when woken, it
// takes the due deliveries of the shards this process serves from the outbox, sends them (a few at a time,
// shared fairly across tenants and endpoints: fair-share.ts) and records each attempt: delivered on a 2xx,
// otherwise pending until the next wait of the retry schedule, or failed once the schedule is spent, its
// endpoint backed off as a whole (attempt-outcome.ts). The store hands out only the first pending delivery of
// an endpoint and ordering key, so a session's events reach an endpoint in order. One round at a time; a
// failed round is logged and the next retries.
import type { DueWebhookDelivery, Store, WebhookAttempt } from '../store/store.ts';
import { traceWebhookAttempt } from '../tracing/tracer.ts';
import { type OutcomeTimes, outcomeOf } from './attempt-outcome.ts';
import { pickFairly, type Shares, saturated, sharesOf } from './fair-share.ts';
import type { AttemptResult, WebhookSender } from './sender.ts';
import type { WebhookMetrics } from './webhook-metrics.ts';

export const DEFAULT_WEBHOOK_POLL_MS = 1000;
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
export const DEFAULT_WEBHOOK_CONCURRENCY = 16;
/** A claim outlives its attempt's timeout by this much, for the record to be written. */
const CLAIM_SLACK_MS = 2_000;
/** The least time a delivery queued behind others is retried for (see attempt-outcome.ts). */
const MIN_RETRY_SPAN_MS = 10 * 60_000;
/** How often at most a round looks past the due deliveries of tenants and endpoints at their share. */
const FAIR_SCAN_MS = 250;

class PayloadMissing extends Error {
  override message = 'payload_missing';
}

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
  /** Attempts in flight, by delivery id: what each was sent, and its end. */
  readonly #inFlight = new Map<string, { delivery: DueWebhookDelivery; done: Promise<void> }>();
  readonly #shares: Shares;
  /** When the next scan past the deliveries of tenants and endpoints at their share may run. */
  #fairScanAt = 0;
  /** Until when wake() waits, the last round having sent nothing for the shares (see wake). */
  #heldUntil = 0;
  #heldTimer: NodeJS.Timeout | undefined;
  #wakeTimer: NodeJS.Timeout | undefined;
  #wakeTimerAt = 0;
  #sender: Promise<WebhookSender> | undefined;

  /** The retry schedule and its span, and what an attempt may take (outcomeOf). */
  readonly #times: OutcomeTimes;

  constructor(options: WebhookDelivererOptions) {
    this.#o = options;
    this.#pollMs = options.pollMs ?? DEFAULT_WEBHOOK_POLL_MS;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
    this.#times = {
      retrySchedule: options.retrySchedule,
      retrySpanMs: Math.max(
        MIN_RETRY_SPAN_MS,
        options.retrySchedule.reduce((sum, wait) => sum + wait, 0),
      ),
      attemptMs: this.#timeoutMs + CLAIM_SLACK_MS + this.#pollMs,
    };
    this.#concurrency = Math.max(1, options.concurrency ?? DEFAULT_WEBHOOK_CONCURRENCY);
    this.#shares = sharesOf(this.#concurrency);
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
    // The last round sent nothing, every due delivery being of tenants or endpoints at their share: only an
    // attempt ending frees one of their slots, and what was queued since is looked for a little later (a
    // round per commit would read the same due deliveries again each time).
    const held = this.#heldUntil - Date.now();
    if (held > 0) {
      this.#heldTimer ??= setTimeout(() => {
        this.#heldTimer = undefined;
        this.wake();
      }, held).unref();
      return;
    }
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
    clearTimeout(this.#heldTimer);
    clearTimeout(this.#wakeTimer);
    this.#heldTimer = undefined;
    this.#wakeTimer = undefined;
    this.#timer = undefined;
    this.#stopping.abort(new Error('webhook deliverer stopped'));
    await this.#round;
    await Promise.all([...this.#inFlight.values()].map((a) => a.done));
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
    const now = new Date().toISOString();
    const { serves } = this.#o;
    const sendable = (due: DueWebhookDelivery[]) =>
      due.filter((d) => !this.#inFlight.has(d.id) && (serves?.(d.shard) ?? true));
    const busy = () => [...this.#inFlight.values()].map((a) => a.delivery);
    // Deliveries being claimed may still read as due: ask for enough to fill the room without them, and some
    // more, so that the shares have others to choose from.
    const limit = room + this.#inFlight.size + this.#concurrency;
    const due = await this.#o.store.dueWebhookDeliveries(now, limit, shards);
    const first = pickFairly(sendable(due), room, busy(), this.#shares);
    this.#start(first.picked);
    if (first.picked.length === 0 && first.heldBack) this.#heldUntil = Date.now() + FAIR_SCAN_MS;
    // The earliest due were all of tenants or endpoints at their share, and more may be due behind them: ask
    // again without those (a scan past their deliveries, so at most every FAIR_SCAN_MS).
    if (!first.heldBack || due.length < limit || this.#inFlight.size >= this.#concurrency) return;
    const wait = this.#fairScanAt - Date.now();
    if (wait > 0) {
      this.#wakeAt(Date.now() + wait);
      return;
    }
    this.#fairScanAt = Date.now() + FAIR_SCAN_MS;
    const left = this.#concurrency - this.#inFlight.size;
    const skip = saturated(busy(), this.#shares);
    const more = await this.#o.store.dueWebhookDeliveries(now, left + this.#concurrency, shards, skip);
    this.#start(pickFairly(sendable(more), left, busy(), this.#shares).picked);
  }

  #start(deliveries: DueWebhookDelivery[]): void {
    for (const delivery of deliveries) {
      if (!this.#timer) return;
      const done = this.#attempt(delivery)
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
          this.#heldUntil = 0;
          if (lookAgain) this.wake();
        });
      this.#inFlight.set(delivery.id, { delivery, done });
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
    // A failing endpoint gets one attempt at a time, across processes: its probe, claimed on the endpoint
    // (and given back, a claim the other way, when the delivery's own claim fails or the process stops).
    const read = delivery.endpoint_retry_at;
    const probe = delivery.endpoint_failures > 0 && read !== null;
    const probeClaim = { webhook_id: delivery.webhook_id, retry_at: read ?? '', until: claim.until };
    const giveProbeBack = async () => {
      if (probe)
        await store.claimWebhookProbe({ ...probeClaim, retry_at: claim.until, until: probeClaim.retry_at });
    };
    if (probe && !(await store.claimWebhookProbe(probeClaim))) return false;
    if (!(await store.claimWebhookDelivery(claim))) {
      await giveProbeBack();
      return false;
    }
    // The request ends within the claim, however long the claim itself took (a pool wait, a paused process):
    // past it, another process may be sending the delivery.
    const left = Date.parse(claim.until) - CLAIM_SLACK_MS - Date.now();
    if (left <= 0) return false;
    // Read once claimed: a round reads more due deliveries than it sends. (An event's payload is kept while a
    // delivery of it is pending, so it is there; were it not, the delivery could never be sent.)
    const payload = await store.webhookPayload(delivery.event_id);
    let result: AttemptResult;
    try {
      if (payload === null) throw new PayloadMissing();
      result = await traceWebhookAttempt(delivery, () =>
        sender.send(delivery, payload, Math.min(this.#timeoutMs, left), signal),
      );
    } catch (err) {
      if (signal.aborted) {
        // Stopped mid-attempt: no outcome is recorded (the attempt stays counted), and the claim is given
        // back so that the next owner sends it at once rather than once the claim lapses.
        await store.releaseWebhookClaim({ ...claimed, at: new Date().toISOString() }).catch(() => false);
        await giveProbeBack().catch(() => {});
        return false;
      }
      result = { status_code: null, error: err instanceof Error ? err.message : String(err) };
    }
    const ended = Date.now();
    const outcome =
      payload === null
        ? ({ status: 'failed', next_attempt_at: null, endpoint: null } as const)
        : outcomeOf(delivery, result, ended, probe, this.#times);
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
    // A retry (or the endpoint's next attempt) due before the next poll is looked for when it is due.
    if (outcome.next_attempt_at) this.#wakeAt(Date.parse(outcome.next_attempt_at));
    if (outcome.endpoint) this.#wakeAt(Date.parse(outcome.endpoint.retry_at));
    if (outcome.status === 'failed') {
      log.warn(
        { delivery_id: delivery.id, webhook_id: delivery.webhook_id, event_id: delivery.event_id, ...result },
        "webhook delivery failed for good: its retry schedule is spent, or its event is older than the schedule's span",
      );
    }
    return true;
  }

  /** Looks at `due` if that is before the next poll; one timer at a time, for the earliest asked. */
  #wakeAt(due: number): void {
    const wait = due - Date.now();
    if (wait >= this.#pollMs || (this.#wakeTimer && this.#wakeTimerAt <= due)) return;
    clearTimeout(this.#wakeTimer);
    this.#wakeTimerAt = due;
    this.#wakeTimer = setTimeout(
      () => {
        this.#wakeTimer = undefined;
        this.wake();
      },
      Math.max(0, wait),
    ).unref();
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

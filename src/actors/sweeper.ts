// The sweeper: every `sweepMs` it passivates the actors idle too long, expires the due sessions of the shards
// this process serves, wakes their paused turns that are due (a call whose time ran out, a decided turn whose
// process died before it went on), deletes the sessions of a tenant with a retention once they are older than
// it (the demo page's), and deletes Idempotency-Key records and webhook deliveries past retention, and the
// payloads of webhook events no pending delivery needs. One sweep at a time; a failed one is logged and the
// next retries.
import type { Coordinator } from '../cluster/coordinator.ts';
import { shardFilter } from '../shards.ts';
import type { Store } from '../store/store.ts';
import type { ResidentActors } from './resident-actors.ts';

/** Most due sessions expired by one sweep; the next sweep takes the rest. */
const EXPIRIES_PER_SWEEP = 500;
/** Most sessions past their tenant's retention deleted by one sweep. */
const DELETIONS_PER_SWEEP = 200;
/** How long delivered and failed webhook deliveries stay listed. */
export const WEBHOOK_DELIVERY_RETENTION_MS = 7 * 24 * 3600 * 1000;
/** Most webhook deliveries (or event payloads) one statement of a sweep deletes. */
const WEBHOOK_PRUNE_BATCH = 2_000;

export interface SweeperOptions {
  store: Store;
  coordinator: Coordinator;
  residents: ResidentActors;
  /** Idle time after which an actor is passivated (10 min). */
  idleMs: number;
  sweepMs: number;
  /** Expires the session if its time has passed. */
  expireIfDue(sessionId: string): Promise<void>;
  /** The sessions of `tenantId` are deleted `afterMs` after their creation. */
  retention?: { tenantId: string; afterMs: number };
  /** Deletes a session with all it holds; false when it is busy (the next sweep tries again). */
  deleteSession(sessionId: string): Promise<boolean>;
  /** Moves the session's paused turn on, if it can go on. */
  wake(sessionId: string): Promise<void>;
  log?: { warn(obj: unknown, msg?: string): void };
}

export class Sweeper {
  readonly #o: SweeperOptions;
  #timer: NodeJS.Timeout | undefined;
  #sweeping = false;

  constructor(options: SweeperOptions) {
    this.#o = options;
  }

  start(): void {
    this.#timer = setInterval(() => void this.sweep(), this.#o.sweepMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async sweep(): Promise<void> {
    if (this.#sweeping) return;
    this.#sweeping = true;
    const { store, coordinator, residents, log } = this.#o;
    try {
      residents.passivateIdle(Date.now() - this.#o.idleMs);
      const now = new Date().toISOString();
      for (const id of await store.sessionsDueForExpiry(
        now,
        EXPIRIES_PER_SWEEP,
        shardFilter(coordinator.servedShards()),
      )) {
        await this.#o.expireIfDue(id).catch((err) => log?.warn({ err, session_id: id }, 'expiry failed'));
      }
      for (const id of await store.sessionsToWake(
        now,
        EXPIRIES_PER_SWEEP,
        shardFilter(coordinator.servedShards()),
      )) {
        await this.#o
          .wake(id)
          .catch((err) => log?.warn({ err, session_id: id }, 'waking a paused turn failed'));
      }
      const { retention } = this.#o;
      if (retention) {
        const before = new Date(Date.now() - retention.afterMs).toISOString();
        const shards = shardFilter(coordinator.servedShards());
        for (const id of await store.sessionsCreatedBefore(
          retention.tenantId,
          before,
          DELETIONS_PER_SWEEP,
          shards,
        )) {
          await this.#o
            .deleteSession(id)
            .catch((err) => log?.warn({ err, session_id: id }, 'deleting a session past retention failed'));
        }
      }
      await store.deleteExpiredIdempotencyRecords(now);
      // In batches, so that a large backlog does not hold the store's writer (SQLite has one) for long.
      const before = new Date(Date.now() - WEBHOOK_DELIVERY_RETENTION_MS).toISOString();
      let deleted: number;
      do deleted = await store.deleteOldWebhookDeliveries(before, WEBHOOK_PRUNE_BATCH);
      while (deleted === WEBHOOK_PRUNE_BATCH);
      do deleted = await store.pruneWebhookEvents(WEBHOOK_PRUNE_BATCH);
      while (deleted === WEBHOOK_PRUNE_BATCH);
    } catch (err) {
      log?.warn({ err }, 'session sweep failed; the next one retries');
    } finally {
      this.#sweeping = false;
    }
  }
}

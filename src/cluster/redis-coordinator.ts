// Shard ownership across processes (docs/internals/architecture.md#sharding-and-ownership): membership keys
// with a TTL, rendezvous hashing of the 1,024 shards over live members, leases taken with SET NX PX and
// renewed by an atomic script, epochs issued by the database, and self-fencing on a monotonic clock before a
// lease can expire in Redis. This module holds the leases and decides, round by round; redis-leases.ts holds
// the keys and the commands.
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { customAlphabet } from 'nanoid';
import { SHARD_COUNT } from '../shards.ts';
import type { Fence, Store } from '../store/store.ts';
import type { ClusterMetrics } from './cluster-metrics.ts';
import type { Coordinator, Route, ShardHandler } from './coordinator.ts';
import {
  CHANNEL,
  leaseValue,
  leaveMembership,
  readMemberUrl,
  readOwner,
  readView,
  releaseLeases,
  renewAll,
  swapLeases,
  takeFree,
} from './redis-leases.ts';
import { desiredOwner } from './rendezvous.ts';

/**
 * Most shards one process hands over in one round, so that moves stay gradual while turns finish. Free
 * shards are taken all at once: a dead owner's sessions must come back quickly.
 */
const HANDOVERS_PER_ROUND = 128;

interface Lease {
  epoch: number;
  value: string;
  /** performance.now() after which this process stops writing the shard (self-fencing). */
  validUntil: number;
  releasing: boolean;
}

export interface RedisCoordinatorOptions {
  store: Pick<Store, 'claimShards'>;
  redisUrl: string;
  /** This process's URL, where peers forward requests for its shards. */
  nodeUrl: string;
  /** Lease and membership TTL (10 s): renewed every fifth of it, given up 30% of it before it can lapse. */
  leaseMs: number;
  metrics: ClusterMetrics;
  log: { info(obj: unknown, msg?: string): void; warn(obj: unknown, msg?: string): void };
}

const suffix = customAlphabet('0123456789abcdefghijklmnopqrstuvwxyz', 8);

export class RedisCoordinator implements Coordinator {
  readonly nodeId = `${hostname()}-${process.pid}-${suffix()}`;
  readonly #o: RedisCoordinatorOptions;
  readonly #redis: Redis;
  readonly #sub: Redis;
  readonly #leases = new Map<number, Lease>();
  /** Owner node of each shard as last read from Redis. */
  #owners: Array<string | null> = new Array(SHARD_COUNT).fill(null);
  /** Live members and their URLs as last read from Redis. */
  #members = new Map<string, string>();
  #handler: ShardHandler | undefined;
  readonly #releases = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #lapseTimer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #draining = false;
  #stopped = false;
  /** When Redis last answered a renewal (monotonic ms). */
  #lastContact = Number.NEGATIVE_INFINITY;

  constructor(options: RedisCoordinatorOptions) {
    this.#o = options;
    const common = { lazyConnect: true, connectTimeout: options.leaseMs / 5 } as const;
    // Commands fail at once while Redis is away: a renewal that cannot be sent must not wait in a queue.
    this.#redis = new Redis(options.redisUrl, {
      ...common,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: options.leaseMs / 5,
    });
    this.#sub = new Redis(options.redisUrl, common);
    for (const client of [this.#redis, this.#sub]) {
      client.on('error', (err) => options.log.warn({ err }, 'redis connection error'));
    }
  }

  get draining(): boolean {
    return this.#draining;
  }

  get connected(): boolean {
    return performance.now() - this.#lastContact < this.#o.leaseMs;
  }

  get #renewMs(): number {
    return this.#o.leaseMs / 5;
  }

  bind(handler: ShardHandler): void {
    this.#handler = handler;
  }

  async start(): Promise<void> {
    await Promise.all([this.#redis.connect(), this.#sub.connect()]);
    await this.#sub.subscribe(CHANNEL);
    this.#sub.on('message', (_channel, from) => {
      if (from !== this.nodeId) void this.#tick();
    });
    await this.#tick();
    await this.#nudge();
    this.#timer = setInterval(() => void this.#tick(), this.#renewMs);
    this.#timer.unref();
    this.#o.log.info({ node: this.nodeId, shards: this.#leases.size }, 'joined the cluster');
  }

  async drain(): Promise<void> {
    if (this.#draining || this.#stopped) return;
    this.#draining = true;
    // Peers stop counting this process at once and take each shard as soon as it is released.
    await leaveMembership(this.#redis, this.nodeId).catch(() => {});
    await this.#nudge();
    for (;;) {
      // A round already past its draining check may still be acquiring leases; they are handed over too.
      await this.#running;
      const held = [...this.#leases].filter(([, l]) => !l.releasing).map(([s]) => s);
      if (held.length > 0) this.#track(this.#release(held));
      if (this.#releases.size === 0) return;
      await Promise.allSettled([...this.#releases]);
    }
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#draining = true;
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#lapseTimer);
    await this.#running;
    await Promise.allSettled([...this.#releases]);
    // Whatever is still held is given back at once, so peers need not wait for the leases to lapse.
    const held = [...this.#leases];
    this.#leases.clear();
    this.#o.metrics.ownedShards.set(0);
    await Promise.allSettled([
      held.length > 0
        ? releaseLeases(
            this.#redis,
            held.map(([s, l]) => [s, l.value]),
          )
        : null,
      leaveMembership(this.#redis, this.nodeId),
    ]);
    await this.#nudge();
    this.#sub.disconnect();
    this.#redis.disconnect();
  }

  fence(shard: number): Fence | null {
    const lease = this.#valid(shard);
    return lease ? { shard, epoch: lease.epoch } : null;
  }

  serves(shard: number): boolean {
    const lease = this.#valid(shard);
    return lease !== null && !lease.releasing;
  }

  servedShards(): number[] {
    return [...this.#leases.keys()].filter((s) => this.serves(s));
  }

  lost(shard: number): void {
    this.#o.metrics.staleEpochRejections.inc();
    this.#lose([shard], 'taken');
  }

  route(shard: number): Route {
    if (this.#leases.has(shard)) return this.serves(shard) ? { kind: 'local' } : { kind: 'none' };
    const owner = this.#owners[shard];
    const url = owner ? this.#members.get(owner) : undefined;
    return owner && url && owner !== this.nodeId ? { kind: 'remote', node: owner, url } : { kind: 'none' };
  }

  async refresh(shard: number): Promise<Route> {
    if (this.#leases.has(shard)) return this.route(shard);
    try {
      const owner = await readOwner(this.#redis, shard);
      this.#owners[shard] = owner;
      if (owner && !this.#members.has(owner)) {
        const url = await readMemberUrl(this.#redis, owner);
        if (url !== null) this.#members.set(owner, url);
      }
    } catch {
      // Redis is away: answer from what we knew.
    }
    return this.route(shard);
  }

  /** The lease of `shard` if this process may still write under it. */
  #valid(shard: number): Lease | null {
    const lease = this.#leases.get(shard);
    if (!lease) return null;
    if (performance.now() < lease.validUntil) return lease;
    // Checked on every use, not only on the timer: a process that was paused must not write on waking.
    this.#lose([shard], 'lapsed');
    return null;
  }

  #lose(shards: readonly number[], reason: string): void {
    const gone = shards.filter((s) => this.#leases.delete(s));
    if (gone.length === 0) return;
    this.#o.metrics.leaseLosses.inc({ reason }, gone.length);
    this.#o.metrics.ownedShards.set(this.#leases.size);
    this.#o.log.warn({ shards: gone.length, reason }, 'lost shard leases; dropping their actors');
    this.#handler?.drop(gone);
  }

  async #nudge(): Promise<void> {
    await this.#redis.publish(CHANNEL, this.nodeId).catch(() => {});
  }

  #track(release: Promise<void>): void {
    this.#releases.add(release);
    void release.finally(() => this.#releases.delete(release));
  }

  /** One round at a time; a nudge during a round asks for another right after it. */
  #tick(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = this.#rounds().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #rounds(): Promise<void> {
    try {
      do {
        this.#again = false;
        await this.#round();
      } while (this.#again && !this.#stopped);
    } catch (err) {
      this.#o.log.warn({ err }, 'cluster round failed; the next one retries');
    }
  }

  async #round(): Promise<void> {
    await this.#renew();
    for (const shard of [...this.#leases.keys()]) this.#valid(shard);
    const view = await readView(this.#redis, this.nodeId, this.#renewMs).catch((err) => {
      this.#o.log.warn({ err }, 'cannot read the cluster from Redis');
      return null;
    });
    if (!view || this.#stopped) return;
    this.#owners = view.owners;
    this.#members = view.members;
    if (view.nextLapse !== null) this.#roundAfter(view.nextLapse);
    await this.#rebalance();
  }

  /** Refreshes membership and every lease in one round trip; a lease renewed counts from when it was sent. */
  async #renew(): Promise<void> {
    const held = [...this.#leases];
    const sent = performance.now();
    const { answered, renewed } = await renewAll(
      this.#redis,
      this.nodeId,
      this.#draining ? null : this.#o.nodeUrl,
      this.#o.leaseMs,
      held.map(([s, l]) => [s, l.value]),
    );
    if (answered) this.#lastContact = performance.now();
    if (renewed === null) return;
    const taken: number[] = [];
    const validUntil = sent + this.#o.leaseMs * 0.7;
    held.forEach(([shard, lease], i) => {
      if (this.#leases.get(shard) !== lease) return;
      if (renewed[i]) lease.validUntil = validUntil;
      else taken.push(shard);
    });
    this.#o.metrics.leaseRenewals.inc(held.length - taken.length);
    if (taken.length > 0) this.#lose(taken, 'taken');
  }

  /**
   * A member that stopped renewing (killed, paused) lapses between two rounds; a round right after its
   * leases lapse takes its shards without waiting for the next renewal. Its leases were renewed in the
   * same round trip as its membership, so they lapse within moments of it.
   */
  #roundAfter(ms: number): void {
    clearTimeout(this.#lapseTimer);
    this.#lapseTimer = setTimeout(() => void this.#tick(), ms + 25);
    this.#lapseTimer.unref();
  }

  /** Takes free shards this process should own and hands over those another live member should own. */
  async #rebalance(): Promise<void> {
    const members = [...this.#members.keys()].filter((m) => m !== this.nodeId || !this.#draining);
    const take: number[] = [];
    const give: number[] = [];
    for (let shard = 0; shard < SHARD_COUNT; shard++) {
      const desired = desiredOwner(members, shard);
      const lease = this.#leases.get(shard);
      if (desired === this.nodeId && !lease && this.#owners[shard] === null) take.push(shard);
      else if (lease && !lease.releasing && desired !== null && desired !== this.nodeId) give.push(shard);
    }
    if (give.length > 0) this.#track(this.#release(give.slice(0, HANDOVERS_PER_ROUND)));
    if (take.length > 0 && !this.#draining) await this.#acquire(take);
  }

  /** SET NX each lease, then the database issues the epochs that fence the previous owners out. */
  async #acquire(shards: number[]): Promise<void> {
    const sent = performance.now();
    const pending = leaseValue(this.nodeId, 0);
    const won = await takeFree(this.#redis, shards, pending, this.#o.leaseMs);
    if (won.length === 0) return;
    let epochs: Map<number, number>;
    try {
      epochs = await this.#o.store.claimShards(this.nodeId, won);
    } catch (err) {
      await releaseLeases(
        this.#redis,
        won.map((s) => [s, pending]),
      ).catch(() => {});
      throw err;
    }
    const swapped = await swapLeases(
      this.#redis,
      won.map((s) => [s, pending, `${this.nodeId}|${epochs.get(s)}`]),
      this.#o.leaseMs,
    );
    won.forEach((shard, i) => {
      const epoch = epochs.get(shard);
      if (!swapped[i] || epoch === undefined) return;
      this.#leases.set(shard, {
        epoch,
        value: leaseValue(this.nodeId, epoch),
        validUntil: sent + this.#o.leaseMs * 0.7,
        releasing: false,
      });
      this.#owners[shard] = this.nodeId;
    });
    this.#o.metrics.ownedShards.set(this.#leases.size);
    await this.#nudge();
  }

  /** Stops taking work for `shards`, lets the host finish it, then deletes the leases so a peer takes them. */
  async #release(shards: number[]): Promise<void> {
    for (const shard of shards) {
      const lease = this.#leases.get(shard);
      if (lease) lease.releasing = true;
    }
    try {
      await this.#handler?.release(shards);
    } catch (err) {
      this.#o.log.warn({ err }, 'handing shards over failed; releasing them anyway');
    }
    const mine = shards.flatMap((s) => {
      const lease = this.#leases.get(s);
      return lease ? [[s, lease] as const] : [];
    });
    for (const [shard] of mine) {
      this.#leases.delete(shard);
      this.#owners[shard] = null;
    }
    this.#o.metrics.ownedShards.set(this.#leases.size);
    if (mine.length > 0) {
      await releaseLeases(
        this.#redis,
        mine.map(([s, l]) => [s, l.value]),
      ).catch((err) => this.#o.log.warn({ err }, 'could not delete released leases; they lapse'));
    }
    await this.#nudge();
    // The next batch follows at once rather than at the next renewal.
    void this.#tick();
  }
}

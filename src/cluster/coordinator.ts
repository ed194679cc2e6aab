// Shard ownership as the rest of the process sees it: which shards this process serves, the fencing epoch
// to carry on every write, and where a request for another shard goes. On one node (no REDIS_URL) the
// process claims all 1,024 shards at start; with Redis, RedisCoordinator (redis-coordinator.ts) does.

import { SHARD_COUNT } from '../shards.ts';
import type { Fence, Store } from '../store/store.ts';
import type { ClusterMetrics } from './cluster-metrics.ts';

/** Where a request for a shard goes now. */
export type Route =
  | { kind: 'local' }
  | { kind: 'remote'; node: string; url: string }
  /** No owner that can take it (moving, or its owner is gone): wait a little, then 503. */
  | { kind: 'none' };

/** What the session host does when the coordinator gives shards up. */
export interface ShardHandler {
  /** Hand `shards` over: let their running and queued operations finish, then drop their actors. */
  release(shards: readonly number[]): Promise<void>;
  /** `shards` are lost without notice (lease expired or taken): drop their actors now. */
  drop(shards: readonly number[]): void;
}

export interface Coordinator {
  readonly nodeId: string;
  /** True from the start of a graceful drain: readiness fails, shards are being handed over. */
  readonly draining: boolean;
  /**
   * Whether the coordination service answered within the last lease TTL. A process cut off from it holds no
   * lease for long and cannot tell who owns a shard, so readiness fails.
   */
  readonly connected: boolean;
  start(): Promise<void>;
  /** Hands every shard over to the other processes (graceful drain); requests are still forwarded. */
  drain(): Promise<void>;
  stop(): Promise<void>;
  bind(handler: ShardHandler): void;
  /** The fence for writes to `shard`, or null when this process may no longer write it. */
  fence(shard: number): Fence | null;
  /** Whether this process takes new work for `shard` (it owns it and is not handing it over). */
  serves(shard: number): boolean;
  /** The shards this process serves. */
  servedShards(): number[];
  /** A write was refused with a stale epoch: the shard has another owner now. */
  lost(shard: number): void;
  /** Where a request for `shard` goes, from what this process knows now. */
  route(shard: number): Route;
  /** Where a request for `shard` goes, asking the coordination service afresh. */
  refresh(shard: number): Promise<Route>;
}

const allShards = () => Array.from({ length: SHARD_COUNT }, (_, i) => i);

export class LocalCoordinator implements Coordinator {
  readonly nodeId: string;
  /** From a graceful stop on: readiness fails while the process still listens for its running turns. */
  draining = false;
  readonly connected = true;
  readonly #store: Store;
  readonly #metrics: ClusterMetrics;
  #epochs = new Map<number, number>();

  constructor(store: Store, nodeId: string, metrics: ClusterMetrics) {
    this.#store = store;
    this.nodeId = nodeId;
    this.#metrics = metrics;
  }

  async start(): Promise<void> {
    // Claiming bumps every epoch, so a process that ran on this database before can no longer write.
    this.#epochs = await this.#store.claimShards(this.nodeId, allShards());
    this.#metrics.ownedShards.set(this.#epochs.size);
  }

  async drain(): Promise<void> {
    this.draining = true;
  }

  async stop(): Promise<void> {
    this.#epochs.clear();
  }

  bind(): void {}

  fence(shard: number): Fence | null {
    const epoch = this.#epochs.get(shard);
    return epoch === undefined ? null : { shard, epoch };
  }

  serves(shard: number): boolean {
    return this.#epochs.has(shard);
  }

  servedShards(): number[] {
    return [...this.#epochs.keys()];
  }

  lost(shard: number): void {
    this.#metrics.staleEpochRejections.inc();
    if (this.#epochs.delete(shard)) this.#metrics.ownedShards.set(this.#epochs.size);
  }

  route(shard: number): Route {
    return this.serves(shard) ? { kind: 'local' } : { kind: 'none' };
  }

  async refresh(shard: number): Promise<Route> {
    return this.route(shard);
  }
}

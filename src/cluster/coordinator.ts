// Shard ownership as the session host sees it: which shards this process owns and the fencing epoch to
// carry on every write. On one node (no REDIS_URL) the process claims all 1,024 shards at start; the
// Redis-coordinated version plugs in behind the same interface.
import type { Fence, Store } from '../store/store.ts';
import { SHARD_COUNT } from './shard.ts';

export interface Coordinator {
  readonly nodeId: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The fence for writes to `shard`, or null when this process does not own it. */
  fence(shard: number): Fence | null;
  /** A write was refused with a stale epoch: the shard has another owner now. */
  lost(shard: number): void;
}

export class LocalCoordinator implements Coordinator {
  readonly nodeId: string;
  readonly #store: Store;
  #epochs = new Map<number, number>();

  constructor(store: Store, nodeId: string) {
    this.#store = store;
    this.nodeId = nodeId;
  }

  async start(): Promise<void> {
    // Claiming bumps every epoch, so a process that ran on this database before can no longer write.
    this.#epochs = await this.#store.claimShards(
      this.nodeId,
      Array.from({ length: SHARD_COUNT }, (_, i) => i),
    );
  }

  async stop(): Promise<void> {
    this.#epochs.clear();
  }

  fence(shard: number): Fence | null {
    const epoch = this.#epochs.get(shard);
    return epoch === undefined ? null : { shard, epoch };
  }

  lost(shard: number): void {
    this.#epochs.delete(shard);
  }
}

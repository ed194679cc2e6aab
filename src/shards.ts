// Every session belongs to one of 1,024 fixed shards; ownership, leases and fencing epochs are per shard.
// A leaf module at the top of src/, like ids.ts: the store, the cluster and the webhooks all read it.
export const SHARD_COUNT = 1024;

/** Stable 32-bit FNV-1a of the id's UTF-16 code units, mod the shard count: the same on every process and release. */
export function shardOf(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % SHARD_COUNT;
}

/**
 * `served` as the store's shard filter: undefined when it holds every shard (one node), so that a query
 * reads no list of 1,024 shards to parse and match.
 */
export const shardFilter = (served: readonly number[]): readonly number[] | undefined =>
  served.length === SHARD_COUNT ? undefined : served;

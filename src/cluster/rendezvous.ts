// Rendezvous (highest-random-weight) hashing: the desired owner of a shard is the live member with the
// highest score for it. Every process computes the same answer from the same member list, and a member
// joining or leaving moves only the shards it wins or held, about 1/N of them.
import { SHARD_COUNT } from '../shards.ts';

/** A well-mixed 32-bit score of (member, shard): FNV-1a of the member id, then a murmur3 finaliser. */
function score(member: string, shard: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < member.length; i++) {
    h ^= member.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= shard + 0x9e3779b9;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The desired owner of `shard` among `members` (node ids), or null when there are none. */
export function desiredOwner(members: readonly string[], shard: number): string | null {
  let best: string | null = null;
  let bestScore = -1;
  for (const member of members) {
    const s = score(member, shard);
    // Ties (rare) go to the smaller id, so that every process agrees.
    if (s > bestScore || (s === bestScore && best !== null && member < best)) {
      best = member;
      bestScore = s;
    }
  }
  return best;
}

/** The shards `member` should own among `members`. */
export function desiredShards(members: readonly string[], member: string): number[] {
  const shards: number[] = [];
  for (let shard = 0; shard < SHARD_COUNT; shard++) {
    if (desiredOwner(members, shard) === member) shards.push(shard);
  }
  return shards;
}

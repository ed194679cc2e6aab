// What the cluster keeps in Redis and every command that reads or writes it: a membership key per process
// (its URL, with a TTL), a lease key per shard (`<node>|<epoch>`, with a TTL), the Lua scripts that renew,
// swap and release leases atomically, and the view of owners and members that a round reads.
import type { Redis } from 'ioredis';
import { SHARD_COUNT } from '../shards.ts';

const PREFIX = 'parley:';
/** Processes publish their node id here when the cluster changed, so that peers run a round at once. */
export const CHANNEL = `${PREFIX}cluster`;
const memberKey = (node: string) => `${PREFIX}member:${node}`;
const shardKey = (shard: number) => `${PREFIX}shard:${shard}`;
const SHARD_KEYS = Array.from({ length: SHARD_COUNT }, (_, i) => shardKey(i));

// KEYS: shard keys; ARGV[1]: TTL in ms; ARGV[i + 1]: this process's value for KEYS[i]. A key Redis no
// longer has (a restart) is taken back: the database still fences it with our epoch.
const RENEW = `
local out = {}
for i, key in ipairs(KEYS) do
  local v = redis.call('GET', key)
  if v == ARGV[i + 1] then redis.call('PEXPIRE', key, ARGV[1]); out[i] = 1
  elseif not v then redis.call('SET', key, ARGV[i + 1], 'PX', ARGV[1]); out[i] = 1
  else out[i] = 0 end
end
return out`;

// KEYS: shard keys; ARGV[1]: TTL in ms; ARGV[2i], ARGV[2i + 1]: expected and new value of KEYS[i].
const SWAP = `
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[2 * i] then
    redis.call('SET', key, ARGV[2 * i + 1], 'PX', ARGV[1]); out[i] = 1
  else out[i] = 0 end
end
return out`;

// KEYS: shard keys; ARGV[i]: this process's value for KEYS[i]. Deletes only what is still ours.
const RELEASE = `
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[i] then redis.call('DEL', key) end
end
return 1`;

/** A shard and the value of its lease key. */
export type LeaseEntry = readonly [shard: number, value: string];

/** A lease key's value; epoch 0 while the database has not issued one yet. */
export const leaseValue = (node: string, epoch: number) => `${node}|${epoch}`;

const ownerOf = (value: string) => value.split('|')[0] ?? null;

/** A script's answer of one 0/1 flag per key, as booleans. */
const flagsOf = (answer: unknown): boolean[] => (Array.isArray(answer) ? answer.map((f) => f === 1) : []);

export interface RenewResult {
  /** Every command answered: Redis is reachable. */
  answered: boolean;
  /** Per held lease, in order: still ours and extended. Null when the renewal got no usable answer. */
  renewed: boolean[] | null;
}

/**
 * Refreshes this process's membership (unless `url` is null: draining) and every held lease in one round
 * trip.
 */
export async function renewAll(
  redis: Redis,
  node: string,
  url: string | null,
  leaseMs: number,
  held: readonly LeaseEntry[],
): Promise<RenewResult> {
  const pipeline = redis.pipeline();
  if (url !== null) pipeline.set(memberKey(node), JSON.stringify({ url, boot: node }), 'PX', leaseMs);
  if (held.length > 0) {
    pipeline.eval(RENEW, held.length, ...held.map(([s]) => shardKey(s)), leaseMs, ...held.map(([, v]) => v));
  }
  let results: Array<[Error | null, unknown]> | null;
  try {
    results = await pipeline.exec();
  } catch {
    return { answered: false, renewed: null };
  }
  const answered = Boolean(results?.length) && (results ?? []).every(([err]) => err === null);
  const last = results?.at(-1);
  if (held.length === 0 || !last || last[0] || !Array.isArray(last[1])) return { answered, renewed: null };
  return { answered, renewed: flagsOf(last[1]) };
}

/** SET NX each shard's lease to `value`; the shards whose lease was free and is now ours. */
export async function takeFree(redis: Redis, shards: number[], value: string, leaseMs: number) {
  const pipeline = redis.pipeline();
  for (const shard of shards) pipeline.set(shardKey(shard), value, 'PX', leaseMs, 'NX');
  const results = (await pipeline.exec()) ?? [];
  return shards.filter((_, i) => results[i]?.[1] === 'OK');
}

/** Replaces each lease's `from` value by `to` where it still holds `from`; per entry, whether it did. */
export async function swapLeases(
  redis: Redis,
  entries: readonly (readonly [shard: number, from: string, to: string])[],
  leaseMs: number,
): Promise<boolean[]> {
  const answer = await redis.eval(
    SWAP,
    entries.length,
    ...entries.map(([s]) => shardKey(s)),
    leaseMs,
    ...entries.flatMap(([, from, to]) => [from, to]),
  );
  return flagsOf(answer);
}

/** Deletes the leases that still hold the given values. */
export async function releaseLeases(redis: Redis, entries: readonly LeaseEntry[]): Promise<void> {
  await redis.eval(
    RELEASE,
    entries.length,
    ...entries.map(([s]) => shardKey(s)),
    ...entries.map(([, v]) => v),
  );
}

export async function leaveMembership(redis: Redis, node: string): Promise<void> {
  await redis.del(memberKey(node));
}

/** The owner of `shard` as Redis has it now (null: no lease). */
export async function readOwner(redis: Redis, shard: number): Promise<string | null> {
  const value = await redis.get(shardKey(shard));
  return value ? ownerOf(value) : null;
}

/** The URL a live member announced, or null when it has no membership. */
export async function readMemberUrl(redis: Redis, node: string): Promise<string | null> {
  const member = await redis.get(memberKey(node));
  return member ? parseMember(member).url : null;
}

export interface ClusterView {
  owners: Array<string | null>;
  members: Map<string, string>;
  /** Milliseconds until the earliest membership of another process lapses unrenewed, if one will soon. */
  nextLapse: number | null;
}

/**
 * Every shard's owner and every live member, in one scan and one round trip. `lapseWithinMs` is the renewal
 * interval: a live member renews that often, so its key never gets this close to lapsing.
 */
export async function readView(redis: Redis, self: string, lapseWithinMs: number): Promise<ClusterView> {
  const memberKeys: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', memberKey('*'), 'COUNT', 1000);
    cursor = next;
    memberKeys.push(...keys);
  } while (cursor !== '0');
  const pipeline = redis.pipeline().mget(SHARD_KEYS);
  if (memberKeys.length > 0) pipeline.mget(memberKeys);
  for (const key of memberKeys) pipeline.pttl(key);
  const results = (await pipeline.exec()) ?? [];
  const [shardValues, values, ...ttls] = results.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
  const members = new Map<string, string>();
  let nextLapse: number | null = null;
  memberKeys.forEach((key, i) => {
    const value = Array.isArray(values) ? values[i] : null;
    const node = key.slice(memberKey('').length);
    if (typeof value === 'string') members.set(node, parseMember(value).url);
    const ttl = ttls[i];
    if (node !== self && typeof ttl === 'number' && ttl >= 0 && ttl < lapseWithinMs) {
      nextLapse = Math.min(nextLapse ?? ttl, ttl);
    }
  });
  const owners = (Array.isArray(shardValues) ? shardValues : []).map((v) =>
    typeof v === 'string' ? ownerOf(v) : null,
  );
  return { owners, members, nextLapse };
}

function parseMember(value: string): { url: string } {
  try {
    const parsed: unknown = JSON.parse(value);
    if (parsed && typeof parsed === 'object' && 'url' in parsed && typeof parsed.url === 'string') {
      return { url: parsed.url };
    }
  } catch {}
  return { url: '' };
}

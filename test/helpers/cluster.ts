// A local Parley cluster for end-to-end tests (issue 6,
// docs/internals/architecture.md#sharding-and-ownership): a private Redis, one shared store (a SQLite file in
// one data directory, or a fresh PostgreSQL database) and N real processes on loopback, each knowing its own
// URL. Reads the shard leases straight from Redis, so that a test can tell who owns what without asking the
// processes it is about to kill.
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { SHARD_COUNT, shardOf } from '../../src/shards.ts';
import { freePort } from '../../support/free-port.ts';
import { createTestDatabase } from './postgres.ts';
import { type ServiceProcess, startService, tempDir } from './process.ts';
import { type RedisServer, startRedis } from './redis.ts';

export const clusterApiKey = 'cluster-test-key-0123456789abcdef';
const tokenSecret = 'cluster-test-token-secret-0123456789abcdef';

export interface ClusterOptions {
  /** How many processes (default 3). */
  nodes?: number;
  store?: 'sqlite' | 'postgres';
  /** PARLEY_LEASE_TTL_MS of every process (default 3000, short so that failover tests run fast). */
  leaseTtlMs?: number;
  /** More variables for every process. */
  env?: Record<string, string>;
}

/** A lease as stored in `parley:shard:{n}`: `{nodeId}|{epoch}`. */
export interface Lease {
  nodeId: string;
  epoch: number;
}

export interface Cluster {
  /** The processes, by index; `restart(i)` replaces entry i. */
  readonly nodes: ServiceProcess[];
  /** Each node's base URL, fixed for the cluster's lifetime (a restart keeps the port). */
  readonly urls: string[];
  readonly redis: RedisServer;
  readonly apiKey: string;
  readonly store: 'sqlite' | 'postgres';
  /** The data directory every process shares (SQLite's parley.db lives here). */
  readonly dataDir: string;
  /** `dataDir/parley.db`, for read-only checks of a SQLite cluster. */
  readonly sqliteFile: string;
  /** The PostgreSQL database, when store is 'postgres'. */
  readonly databaseUrl: string | undefined;
  readonly leaseTtlMs: number;
  /** A Redis client of the harness's own, for reading leases and members. */
  readonly redisClient: Redis;
  /** Starts node i again on its port (after it exited) and waits for /healthz. */
  restart(i: number): Promise<ServiceProcess>;
  /** SIGSTOP / SIGCONT node i, remembered so that waitUntilSettled does not expect a paused node. */
  pause(i: number): void;
  resume(i: number): void;
  /** Whether node i is running and not paused, by the harness's own bookkeeping. */
  isUp(i: number): boolean;
  /** Live members: nodeId → the URL it announced. */
  members(): Promise<Map<string, string>>;
  /** The lease of every shard (index = shard), null where nobody holds one. One MGET. */
  leases(): Promise<Array<Lease | null>>;
  /** shard → nodeId of the lease holder (absent where nobody holds one). */
  owners(): Promise<Map<number, string>>;
  /** The index of the node whose announced URL belongs to nodeId, or -1. */
  indexOf(nodeId: string): Promise<number>;
  /** The nodeId holding the lease of the session's shard, or undefined. */
  ownerOfSession(sessionId: string): Promise<string | undefined>;
  /**
   * Waits until every shard is held (claim finished, epoch > 0) by a live member only, every node that
   * is up is a member holding at least one shard, and the holders did not change between two reads.
   */
  waitUntilSettled(options?: { timeoutMs?: number }): Promise<void>;
}

export const shardKey = (shard: number) => `parley:shard:${shard}`;
export const shardKeys = Array.from({ length: SHARD_COUNT }, (_, shard) => shardKey(shard));

export function parseLease(value: string | null): Lease | null {
  if (value === null) return null;
  const bar = value.lastIndexOf('|');
  if (bar < 0) return { nodeId: value, epoch: Number.NaN };
  return { nodeId: value.slice(0, bar), epoch: Number(value.slice(bar + 1)) };
}

/**
 * Starts Redis, the store and `nodes` processes; everything is stopped when `t` ends. Returns null after
 * `t.skip(reason)` when Redis or PostgreSQL is unavailable (the caller returns), or throws under CI=true.
 */
export async function startCluster(t: TestContext, options: ClusterOptions = {}): Promise<Cluster | null> {
  const count = options.nodes ?? 3;
  const store = options.store ?? 'sqlite';
  const leaseTtlMs = options.leaseTtlMs ?? 3000;

  const redis = await startRedis(t);
  if (!redis) return null;

  let databaseUrl: string | undefined;
  if (store === 'postgres') {
    const created = await createTestDatabase();
    if (!created.db) {
      t.skip(created.reason);
      return null;
    }
    const { db } = created;
    databaseUrl = db.url;
    // Registered before the processes' own cleanup; DROP … WITH (FORCE) ends whatever they left open.
    t.after(() => db.drop());
  }
  // SQLite: every process opens dataDir/parley.db. PostgreSQL: the directory is still each process's
  // PARLEY_DATA_DIR, with nothing in it that matters.
  const dataDir = await tempDir(t, 'parley-cluster-');
  const ports = await distinctFreePorts(count);
  const urls = ports.map((port) => `http://127.0.0.1:${port}`);

  const envOf = (i: number): Record<string, string> => ({
    REDIS_URL: redis.url,
    PARLEY_NODE_URL: urls[i] as string,
    PARLEY_LEASE_TTL_MS: String(leaseTtlMs),
    // The tests tell which process served a request by its x-parley-node header.
    PARLEY_NODE_HEADER: 'true',
    PARLEY_TOKEN_SECRET: tokenSecret,
    PARLEY_BOOTSTRAP_API_KEY: clusterApiKey,
    // The load generators send hundreds of requests a second with one key: not what these tests are about.
    PARLEY_RATE_LIMIT_KEY: '1000000',
    PARLEY_RATE_LIMIT_TOKEN: '1000000',
    LOG_LEVEL: 'warn',
    ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
    ...options.env,
  });

  const nodes: ServiceProcess[] = [];
  const paused = new Set<number>();
  const startNode = async (i: number) => {
    const node = await startService({
      dataDir,
      port: ports[i] as number,
      env: envOf(i),
      readyTimeoutMs: 60_000,
    });
    nodes[i] = node;
    return node;
  };
  t.after(async () => {
    // SIGKILL ends a stopped process too; SIGCONT first all the same, so that a failed kill leaves
    // nothing frozen behind.
    for (const i of paused) nodes[i]?.child.kill('SIGCONT');
    await Promise.all(nodes.map((node) => node?.kill()));
  });

  // The first process migrates the store and creates the bootstrap key; the others would race it.
  await startNode(0);
  await Promise.all(Array.from({ length: count - 1 }, (_, k) => startNode(k + 1)));

  const redisClient = redis.client({ maxRetriesPerRequest: 1 });

  const members = () => readMembers(redisClient);

  const leases = async () => (await redisClient.mget(shardKeys)).map(parseLease);

  const owners = async () => {
    const out = new Map<number, string>();
    (await leases()).forEach((lease, shard) => {
      if (lease) out.set(shard, lease.nodeId);
    });
    return out;
  };

  const isUp = (i: number) => {
    const node = nodes[i];
    return (
      node !== undefined && node.child.exitCode === null && node.child.signalCode === null && !paused.has(i)
    );
  };

  const cluster: Cluster = {
    nodes,
    urls,
    redis,
    apiKey: clusterApiKey,
    store,
    dataDir,
    sqliteFile: join(dataDir, 'parley.db'),
    databaseUrl,
    leaseTtlMs,
    redisClient,
    restart: async (i) => {
      const old = nodes[i];
      if (old && old.child.exitCode === null && old.child.signalCode === null) {
        throw new Error(`node ${i} is still running; stop it before restarting it`);
      }
      paused.delete(i);
      return startNode(i);
    },
    pause(i) {
      nodes[i]?.child.kill('SIGSTOP');
      paused.add(i);
    },
    resume(i) {
      nodes[i]?.child.kill('SIGCONT');
      paused.delete(i);
    },
    isUp,
    members,
    leases,
    owners,
    async indexOf(nodeId) {
      const url = (await members()).get(nodeId);
      return url === undefined ? -1 : urls.indexOf(url);
    },
    async ownerOfSession(sessionId) {
      return parseLease(await redisClient.get(shardKey(shardOf(sessionId))))?.nodeId;
    },
    async waitUntilSettled({ timeoutMs = 30_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      let previous = '';
      let problem = 'not checked yet';
      for (;;) {
        try {
          const held = await leases();
          problem = unsettled(
            await members(),
            held,
            urls.filter((_, i) => isUp(i)),
          );
          if (!problem) {
            // Settled means also at rest: the same holders on two reads a renewal period apart.
            const signature = held.map((lease) => lease?.nodeId ?? '').join(',');
            if (signature === previous) return;
            previous = signature;
            problem = 'the holders were still changing';
          } else {
            previous = '';
          }
        } catch (err) {
          problem = `Redis did not answer: ${(err as Error).message}`;
          previous = '';
        }
        if (Date.now() > deadline) {
          throw new Error(`the cluster did not settle within ${timeoutMs} ms: ${problem}`);
        }
        await sleep(Math.max(100, leaseTtlMs / 5));
      }
    },
  };
  return cluster;
}

/** Live members from their `parley:member:{nodeId}` keys: nodeId → the URL it announced ('' if none). */
export async function readMembers(redis: Redis): Promise<Map<string, string>> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', 'parley:member:*', 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const out = new Map<string, string>();
  if (keys.length === 0) return out;
  const values = await redis.mget(keys);
  keys.forEach((key, k) => {
    const value = values[k];
    if (value == null) return;
    let url = '';
    try {
      url = String((JSON.parse(value) as { url?: unknown }).url ?? '').replace(/\/+$/, '');
    } catch {
      // Not the contract's JSON: keep the member, without a URL.
    }
    out.set(key.slice('parley:member:'.length), url);
  });
  return out;
}

/**
 * Why the cluster is not settled yet ('' when it is): a shard without a lease, held by a non-member or
 * still being claimed (epoch 0), a process that is up but not a member, or a member that is up and
 * holds no shard.
 */
export function unsettled(
  members: Map<string, string>,
  leases: ReadonlyArray<Lease | null>,
  upUrls: readonly string[],
): string {
  const holders = new Set<string>();
  for (const [shard, lease] of leases.entries()) {
    if (!lease) return `shard ${shard} has no lease`;
    if (!members.has(lease.nodeId)) return `shard ${shard} is held by ${lease.nodeId}, not a member`;
    if (!(lease.epoch > 0)) return `shard ${shard} is still being claimed (epoch ${lease.epoch})`;
    holders.add(lease.nodeId);
  }
  const memberUrls = new Set(members.values());
  for (const url of upUrls) if (!memberUrls.has(url)) return `${url} is not a member`;
  for (const [nodeId, url] of members) {
    if (upUrls.includes(url) && !holders.has(nodeId)) return `member ${nodeId} (${url}) holds no shard`;
  }
  return '';
}

/** `count` ports that were free a moment ago, all different. */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** The shards whose lease nodeId holds. */
export async function shardsOf(cluster: Cluster, nodeId: string): Promise<number[]> {
  return [...(await cluster.owners())].filter(([, owner]) => owner === nodeId).map(([shard]) => shard);
}

export interface OwnershipGaps {
  /** Per shard, the longest time (ms) its lease key was seen missing. */
  longest: number[];
  /** The shards with the longest gaps, longest first. */
  worst(count: number): Array<{ shard: number; ms: number }>;
  polls: number;
  /** Polls that Redis did not answer. */
  errors: number;
  /** The longest time between two successful polls: the measure's own blind spot. */
  maxIntervalMs: number;
}

/**
 * Polls the 1,024 lease keys with one MGET every `intervalMs` and measures, per shard, how long its key
 * stays missing: from the first poll that sees it missing to the first that sees it held again (so a
 * gap is known to about one interval). A gap still open at stop() counts up to then.
 */
export function watchOwnership(
  cluster: Pick<Cluster, 'redisClient'>,
  intervalMs = 100,
): { stop(): Promise<OwnershipGaps> } {
  const longest = new Array<number>(SHARD_COUNT).fill(0);
  const openSince = new Array<number | undefined>(SHARD_COUNT).fill(undefined);
  let polls = 0;
  let errors = 0;
  let maxIntervalMs = 0;
  let lastPoll = Date.now();
  let running = true;

  const loop = (async () => {
    while (running) {
      const started = Date.now();
      try {
        const values = await cluster.redisClient.mget(shardKeys);
        const now = Date.now();
        maxIntervalMs = Math.max(maxIntervalMs, now - lastPoll);
        lastPoll = now;
        polls++;
        values.forEach((value, shard) => {
          const since = openSince[shard];
          if (value === null) {
            if (since === undefined) openSince[shard] = now;
          } else if (since !== undefined) {
            longest[shard] = Math.max(longest[shard] ?? 0, now - since);
            openSince[shard] = undefined;
          }
        });
      } catch {
        errors++;
      }
      await sleep(Math.max(0, intervalMs - (Date.now() - started)));
    }
  })();

  return {
    async stop() {
      running = false;
      await loop;
      const now = Date.now();
      openSince.forEach((since, shard) => {
        if (since !== undefined) longest[shard] = Math.max(longest[shard] ?? 0, now - since);
      });
      return {
        longest,
        worst: (count) =>
          longest
            .map((ms, shard) => ({ shard, ms }))
            .sort((a, b) => b.ms - a.ms)
            .slice(0, count),
        polls,
        errors,
        maxIntervalMs,
      };
    },
  };
}

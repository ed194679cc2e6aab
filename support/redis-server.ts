// A private `redis-server`, as the tests, the bench and `npm run cluster` each start one: finding the
// binary, its arguments and telling when it answers. PING is polled rather than the log parsed: its wording
// changes between versions.
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import { pollUntil, type Readiness } from './processes.ts';

/** The path of `redis-server` on PATH, or undefined. */
export function findRedisServer(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'redis-server');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** Arguments of a server on loopback `port` that persists nothing (its working files in `dir`, if given). */
export function redisServerArgs(port: number, dir?: string): string[] {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  return dir === undefined ? args : [...args, '--dir', dir];
}

/** Whether the Redis at `url` answers PING now (one short attempt, no retries). */
export async function answersPing(url: string): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 500,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/** Waits up to 10 s for the server at `url` to answer PING, unless its process is `gone` first. */
export function waitForPing(url: string, gone: () => boolean, intervalMs = 50): Promise<Readiness> {
  return pollUntil(() => answersPing(url), { gone, timeoutMs: 10_000, intervalMs });
}

// A private `redis-server` per test, on a free loopback port and with nothing persisted, for the cluster
// tests (docs/internals/testing.md). Without the binary the test is skipped with the reason, except under
// CI=true, where that is a failure.
import { type ChildProcess, spawn } from 'node:child_process';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis, type RedisOptions } from 'ioredis';
import { freePort } from '../../support/free-port.ts';
import { exitOf, hasExited, stopChild } from '../../support/processes.ts';
import { findRedisServer, redisServerArgs, waitForPing } from '../../support/redis-server.ts';
import { tempDir } from './process.ts';

export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGTERM, or `signal`) and waits for its exit; a no-op when it is not running. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP: connections stay open but nothing answers, as with a hung server. */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  /** Stops the server and starts a new, empty one on the same port, waiting `downMs` in between. */
  restart(options?: { signal?: NodeJS.Signals; downMs?: number }): Promise<void>;
  /** A new client of this server, disconnected when the test ends. */
  client(options?: RedisOptions): Redis;
}

/**
 * Starts a `redis-server` for the test `t` and waits until it answers PING; stopped when `t` ends.
 * Returns null after `t.skip(reason)` when the binary is missing (the caller returns), or throws under
 * CI=true.
 */
export async function startRedis(t: TestContext): Promise<RedisServer | null> {
  const binary = findRedisServer();
  if (binary === undefined) {
    const reason = 'redis-server is not installed (apt-get install redis-server)';
    if (process.env.CI === 'true') throw new Error(`${reason}. Under CI=true that is a failure.`);
    t.skip(reason);
    return null;
  }
  const dir = await tempDir(t, 'parley-redis-');
  const clients = new Set<Redis>();
  let child: ChildProcess | undefined;
  let exited: Promise<unknown> = Promise.resolve();
  let stderr = '';

  const spawnOn = async (port: number): Promise<void> => {
    stderr = '';
    const proc = spawn(binary, redisServerArgs(port, dir), { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    let gone = false;
    exited = exitOf(proc).finally(() => {
      gone = true;
    });
    exited.catch(() => {});
    child = proc;
    const readiness = await waitForPing(`redis://127.0.0.1:${port}`, () => gone);
    if (readiness === 'gone') throw new Error(`redis-server on port ${port} exited at start: ${stderr}`);
    if (readiness === 'timeout') {
      proc.kill('SIGKILL');
      throw new Error(`redis-server on port ${port} did not answer PING within 10 s: ${stderr}`);
    }
  };

  // The port was free a moment ago; another process may take it before redis-server binds it.
  let port = 0;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await spawnOn(port);
      break;
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }

  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const proc = child;
    if (!proc || hasExited(proc)) return;
    // A paused server would not act on SIGTERM until continued.
    proc.kill('SIGCONT');
    await stopChild(proc, exited, signal);
  };

  // A test that dies before its hooks run must not leave a server behind.
  const onExit = () => child?.kill('SIGKILL');
  process.once('exit', onExit);
  t.after(async () => {
    for (const client of clients) client.disconnect();
    await stop('SIGKILL');
    process.off('exit', onExit);
  });

  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    async restart({ signal = 'SIGTERM', downMs = 0 } = {}) {
      await stop(signal);
      if (downMs > 0) await sleep(downMs);
      await spawnOn(port);
    },
    client(options: RedisOptions = {}) {
      const client = new Redis({ port, host: '127.0.0.1', ...options });
      // A restart of the server is expected; the client reconnects by itself.
      client.on('error', () => {});
      clients.add(client);
      return client;
    },
  };
}

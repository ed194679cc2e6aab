// A private `redis-server` for W5, on a free loopback port with nothing persisted, killed by the bench's cleanup.
import { freePort } from '../support/free-port.ts';
import { hasExited } from '../support/processes.ts';
import { redisServerArgs, waitForPing } from '../support/redis-server.ts';
import { type Child, spawnChild, tempDir } from './processes.ts';

export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly child: Child;
  stop(): Promise<void>;
}

/** Starts redis-server and resolves once it answers PING. */
export async function startRedis(binary: string): Promise<RedisServer> {
  const port = await freePort();
  const child = spawnChild(binary, redisServerArgs(port, tempDir('redis')), {});
  const url = `redis://127.0.0.1:${port}`;
  const readiness = await waitForPing(url, () => hasExited(child.process));
  if (readiness === 'gone') throw new Error(`redis-server exited at start:\n${child.output()}`);
  if (readiness === 'timeout')
    throw new Error(`redis-server did not answer PING within 10 s:\n${child.output()}`);
  return { url, child, stop: () => child.stop() };
}

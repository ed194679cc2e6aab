// A private `redis-server` for W5, on a free loopback port with nothing persisted, killed by the bench's cleanup.
import { answersPing } from '../scripts/redis-probe.ts';
import { type Child, freePort, sleep, spawnChild, tempDir } from './processes.ts';

export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly child: Child;
  stop(): Promise<void>;
}

/** Starts redis-server and resolves once it answers PING. */
export async function startRedis(binary: string): Promise<RedisServer> {
  const port = await freePort();
  const dir = tempDir('redis');
  const child = spawnChild(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    {},
  );
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.process.exitCode !== null || child.process.signalCode !== null)
      throw new Error(`redis-server exited at start:\n${child.output()}`);
    if (await answersPing(url)) break;
    if (Date.now() > deadline)
      throw new Error(`redis-server did not answer PING within 10 s:\n${child.output()}`);
    await sleep(50);
  }
  return { url, child, stop: () => child.stop() };
}

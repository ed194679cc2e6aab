// Waiting for a condition rather than for time: polled every 50 ms, with a generous deadline for a loaded machine.
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `done` every 50 ms until it holds; fails with `what` after `timeoutMs`. */
export async function waitFor(
  what: string,
  done: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

// What a passivated session leaves on the heap once the process is warm: W3 compares with a cold baseline,
// so its "per passivated session" figure also holds the one-time cost of the first turns (compiled code,
// inline caches, prepared statements, metric label sets) spread over its sessions. Here one process
// (idle 3 s) takes a warm-up batch and then two batches of 10,000 sessions with one send each; after each
// batch, when every actor is passivated, the heap is read after full GCs. Run it on its own (about 2 min):
//   node bench/passivation-marginal.ts

import { waitPassivated } from './memory.ts';
import { installCleanup, sleep } from './processes.ts';
import { runLoad } from './run-load.ts';
import { createSessions, fullGc, metric, readMetrics, startParley } from './servers.ts';

const BATCH = 10_000;
const WARM_UP = 2_000;

installCleanup();
const parley = await startParley({ idleSeconds: 3, sweepSeconds: 1, gcOnSignal: true });
try {
  /** The smallest heap of three reads, each after 1 s idle and a full GC. */
  const heap = async () => {
    const reads: number[] = [];
    for (let i = 0; i < 3; i++) {
      await sleep(1_000);
      await fullGc(parley);
      reads.push(metric(await readMetrics(parley), 'parley_nodejs_heap_size_used_bytes'));
    }
    return Math.min(...reads);
  };
  /** Creates `n` sessions, sends one message to each, and waits until no actor is resident. */
  const batch = async (n: number) => {
    const sessions = await createSessions(parley, n);
    const { apiKey, url } = parley;
    await runLoad({ url, apiKey, mode: 'plain', sessions, concurrency: 32, kind: 'each', passes: 1 });
    await waitPassivated(parley, 60_000);
    return heap();
  };
  const cold = await heap();
  const warm = await batch(WARM_UP);
  const first = await batch(BATCH);
  const second = await batch(BATCH);
  const perSession = (from: number, to: number, n: number) => ((to - from) / n).toFixed(1);
  process.stdout.write(
    `heap after passivation: cold ${cold} B, after ${WARM_UP} warm-up sessions ${warm} B, ` +
      `+${BATCH} ${first} B, +${BATCH} more ${second} B\n` +
      `bytes per passivated session: warm-up batch ${perSession(cold, warm, WARM_UP)}, ` +
      `then ${perSession(warm, first, BATCH)} and ${perSession(first, second, BATCH)}\n`,
  );
} finally {
  await parley.stop();
}

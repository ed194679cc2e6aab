// W3's resident half alone, for measuring one change in a minute: `node bench/w3-resident.ts [n] [dir]` loads n
// sessions (10,000) with one send each and reads the heap as bench/memory.ts does (the smallest of 3 reads,
// each after 1 s idle and a full GC), prints the heap bytes per resident session, and with a directory writes
// a heap snapshot of the loaded process there (--heapsnapshot-signal).
import { sendOnce, settledRead } from './memory.ts';
import { sleep } from './processes.ts';
import { createSessions, startParley } from './servers.ts';

const n = Number(process.argv[2] ?? 10_000);
const snap = process.argv[3];
const parley = await startParley({
  idleSeconds: 3600,
  sweepSeconds: 1,
  gcOnSignal: true,
  nodeArgs: snap ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snap}`] : [],
});
try {
  const base = await settledRead(parley);
  await sendOnce(parley, await createSessions(parley, n));
  const loaded = await settledRead(parley);
  console.log(`n=${n} resident=${loaded.resident} perSession=${((loaded.heap - base.heap) / n).toFixed(0)}`);
  if (snap) {
    parley.child.process.kill('SIGUSR2');
    // The snapshot is written by the server's main thread; stopping it sooner would cut it short.
    await sleep(15_000);
  }
} finally {
  await parley.stop();
}

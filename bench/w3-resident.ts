// W3's resident half alone, for measuring one change in a minute: `node bench/w3-resident.ts [n] [dir]` loads n
// sessions (10,000) with one send each as bench/memory.ts does, prints the heap bytes per resident session, and
// with a directory writes a heap snapshot of the loaded process there (--heapsnapshot-signal).
import { sleep } from './processes.ts';
import { runLoad } from './run-load.ts';
import { createSessions, fullGc, metric, readMetrics, type Server, startParley } from './servers.ts';

const n = Number(process.argv[2] ?? 10_000);
const snap = process.argv[3];
/** The smallest heap of 3 reads, each after 1 s idle and a full GC (as bench/memory.ts reads). */
async function read(server: Server) {
  let heap = Infinity;
  let resident = 0;
  for (let i = 0; i < 3; i++) {
    await sleep(1000);
    await fullGc(server);
    const m = await readMetrics(server);
    heap = Math.min(heap, metric(m, 'parley_nodejs_heap_size_used_bytes'));
    resident = metric(m, 'parley_actors_resident');
  }
  return { heap, resident };
}
const parley = await startParley({
  idleSeconds: 3600,
  sweepSeconds: 1,
  gcOnSignal: true,
  nodeArgs: snap ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snap}`] : [],
});
try {
  const base = await read(parley);
  const sessions = await createSessions(parley, n);
  await runLoad({
    url: parley.url,
    apiKey: parley.apiKey,
    mode: 'plain',
    sessions,
    concurrency: 32,
    kind: 'each',
    passes: 1,
  });
  const loaded = await read(parley);
  console.log(`n=${n} resident=${loaded.resident} perSession=${((loaded.heap - base.heap) / n).toFixed(0)}`);
  if (snap) {
    parley.child.process.kill('SIGUSR2');
    // The snapshot is written by the server's main thread; stopping it sooner would cut it short.
    await sleep(15_000);
  }
} finally {
  await parley.stop();
}

// W3: Parley's memory at baseline, with N resident sessions of 2 messages each, and after idle passivation.
// In two halves so that the passivation wait (idle time) can overlap the other workloads: start() loads and
// reads; finish() waits until no actor is resident and reads again.
import { sleep } from './processes.ts';
import type { Row } from './report.ts';
import { runLoad } from './run-load.ts';
import { createSessions, fullGc, metric, readMetrics, type Server, startParley } from './servers.ts';
import { errorText, info, log, type Outcome, type Settings } from './workload.ts';

interface MemoryRead {
  rss: number;
  heap: number;
  resident: number;
}

/** Three reads of /metrics, each after 1 s idle and a full GC; the smallest RSS and heap. */
export async function settledRead(server: Server): Promise<MemoryRead> {
  const reads: MemoryRead[] = [];
  for (let i = 0; i < 3; i++) {
    await sleep(1_000);
    await fullGc(server);
    const m = await readMetrics(server);
    reads.push({
      rss: metric(m, 'parley_process_resident_memory_bytes'),
      heap: metric(m, 'parley_nodejs_heap_size_used_bytes'),
      resident: metric(m, 'parley_actors_resident'),
    });
  }
  return {
    rss: Math.min(...reads.map((r) => r.rss)),
    heap: Math.min(...reads.map((r) => r.heap)),
    resident: Math.min(...reads.map((r) => r.resident)),
  };
}

/** One message to each session (c=32): each then holds a user message and its reply. */
export async function sendOnce(server: Server, sessions: string[]) {
  const [sent] = await runLoad({
    url: server.url,
    apiKey: server.apiKey,
    mode: 'plain',
    sessions,
    concurrency: 32,
    kind: 'each',
    passes: 1,
  });
  return sent;
}

/** Polls /metrics until no actor is resident; returns how long that took. */
export async function waitPassivated(server: Server, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if (metric(await readMetrics(server), 'parley_actors_resident') === 0) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) throw new Error(`actors still resident after ${timeoutMs} ms`);
    await sleep(250);
  }
}

export interface MemoryRun {
  finish(): Promise<Outcome>;
  stop(): Promise<void>;
}

export async function startMemory(s: Settings): Promise<MemoryRun> {
  const n = s.memorySessions;
  const parley = await startParley({ idleSeconds: s.memoryIdleSeconds, sweepSeconds: 1, gcOnSignal: true });
  try {
    log('W3: baseline');
    const baseline = await settledRead(parley);
    log(`W3: creating ${n} sessions and sending one message to each (c=32)`);
    const t0 = Date.now();
    const sessions = await createSessions(parley, n);
    const createMs = Date.now() - t0;
    const sent = await sendOnce(parley, sessions);
    const sendMs = Date.now() - t0 - createMs;
    const loaded = await settledRead(parley);
    const loadedAt = Date.now();
    log(
      `W3: ${loaded.resident} actors resident; passivation after ${s.memoryIdleSeconds} s idle, meanwhile the rest`,
    );
    return {
      stop: () => parley.stop(),
      async finish() {
        log('W3: waiting for passivation');
        await waitPassivated(parley, (s.memoryIdleSeconds + 30) * 1000);
        const passivatedAfterMs = Date.now() - loadedAt;
        const passivated = await settledRead(parley);
        await parley.stop();
        const perSession = (loaded.heap - baseline.heap) / n;
        const leftPerSession = (passivated.heap - baseline.heap) / n;
        const mib = (v: number) => v / 2 ** 20;
        const rows: Row[] = [
          info('W3 memory', 'RSS baseline MiB', mib(baseline.rss)),
          info('W3 memory', `RSS ${n} sessions MiB`, mib(loaded.rss)),
          info('W3 memory', 'RSS passivated MiB', mib(passivated.rss)),
          info('W3 memory', 'heap baseline MiB', mib(baseline.heap)),
          info('W3 memory', `heap ${n} sessions MiB`, mib(loaded.heap)),
          info('W3 memory', 'heap passivated MiB', mib(passivated.heap)),
          {
            ...info('W3 memory', 'heap B per resident session', perSession),
            target: '≤ 4 KB',
            met: perSession <= 4096 && loaded.resident >= n,
          },
          {
            ...info('W3 memory', 'heap B per passivated session', leftPerSession),
            target: '0 (nothing)',
            met: leftPerSession <= 0,
          },
        ];
        const details = [
          `### W3 (${n} sessions, one send each: user message + reply; idle ${s.memoryIdleSeconds} s, sweep 1 s)`,
          '',
          `- Creating the sessions took ${(createMs / 1000).toFixed(1)} s, the sends ${(sendMs / 1000).toFixed(1)} s ` +
            `(errors: ${sent ? errorText(sent) : 'no report'}).`,
          `- Resident actors at the reads: baseline ${baseline.resident}, loaded ${loaded.resident}, ` +
            `passivated ${passivated.resident}; all passivated ${(passivatedAfterMs / 1000).toFixed(1)} s after ` +
            'the loaded read (the other workloads ran in their own processes while this one sat idle).',
          '- Each read is the smallest of 3 reads of `/metrics`, each after 1 s idle and a full GC (SIGWINCH to ' +
            'a Parley started with `--expose-gc --import bench/gc-on-signal.ts`), so heap counts live objects.',
          `- Bytes per session = (heap − heap baseline) / ${n}.`,
        ];
        if (loaded.resident < n) {
          details.push(
            `- **Only ${loaded.resident} of ${n} actors were resident at the loaded read** (the sends took longer ` +
              'than the idle time): the per-session figure is understated and not counted as met.',
          );
        }
        return { rows, details };
      },
    };
  } catch (err) {
    await parley.stop();
    throw err;
  }
}

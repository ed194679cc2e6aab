// W1 (plain send) and W2 (streamed send): c workers over N sessions, closed loop, Parley vs the floor.
import { cpus } from 'node:os';
import type { PassReport } from './load.ts';
import { machineCpu, type Row } from './report.ts';
import { runLoad } from './run-load.ts';
import {
  cpuSeconds,
  createSessions,
  floorSessions,
  type Server,
  startFloor,
  startParley,
} from './servers.ts';
import { errorCount, errorText, info, log, type Outcome, type Settings } from './workload.ts';

export async function throughput(s: Settings): Promise<Outcome> {
  const parley = await startParley();
  const floor = await startFloor('full');
  const normal = await startFloor('normal');
  try {
    log(`W1/W2: creating ${s.sessions} Parley sessions`);
    const parleySessions = await createSessions(parley, s.sessions);
    const cpuMs = new Map<PassReport, number | null>();
    // CPU used by processes other than the server and the load generator (other sessions, tests), in % of one CPU.
    const othersPct = new Map<PassReport, number | null>();
    const drive = async (server: Server, mode: 'plain' | 'stream', concurrency = s.concurrency) => {
      const durationMs = concurrency === 1 ? Math.min(3_000, s.durationMs) : s.durationMs;
      log(`${mode === 'plain' ? 'W1' : 'W2'}: ${server.name}, c=${concurrency}, ${durationMs / 1000} s`);
      const cpuBefore = cpuSeconds(server);
      const machineBefore = machineCpu();
      const t0 = Date.now();
      const report = await runLoad({
        url: server.url,
        apiKey: server.apiKey,
        mode,
        sessions: server === parley ? parleySessions : floorSessions(s.sessions),
        concurrency,
        kind: 'duration',
        warmupMs: concurrency === 1 ? 500 : s.warmupMs,
        durationMs,
      });
      const cpuAfter = cpuSeconds(server);
      const machineAfter = machineCpu();
      const serverMs = cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) * 1000;
      cpuMs.set(report, serverMs === null ? null : serverMs / report.sent);
      const others = machineAfter.busy - machineBefore.busy - report.loaderCpuMs - (serverMs ?? 0);
      othersPct.set(report, serverMs === null ? null : Math.max(0, (100 * others) / (Date.now() - t0)));
      return report;
    };
    const w1 = { parley: await drive(parley, 'plain'), floor: await drive(floor, 'plain') };
    const w1normal = await drive(normal, 'plain');
    const w1one = { parley: await drive(parley, 'plain', 1), floor: await drive(floor, 'plain', 1) };
    const w2 = { parley: await drive(parley, 'stream'), floor: await drive(floor, 'stream') };
    const p99 = w1.parley.latency.p99;
    const ttfe99 = w2.parley.ttfe?.p99 ?? Number.NaN;
    const errors = (r: { parley: PassReport; floor: PassReport }, workload: string): Row => ({
      workload,
      figure: 'errors',
      parley: errorCount(r.parley),
      floor: errorCount(r.floor),
      target: '0',
      met: errorCount(r.parley) === 0,
    });
    const rows: Row[] = [
      {
        workload: 'W1 send',
        figure: 'req/s',
        parley: w1.parley.rps,
        floor: w1.floor.rps,
        target: '≥ 1.0x floor',
        met: w1.parley.rps >= w1.floor.rps,
      },
      info('W1 send', 'p50 ms', w1.parley.latency.p50, w1.floor.latency.p50),
      { ...info('W1 send', 'p99 ms', p99, w1.floor.latency.p99), target: '≤ 20 ms', met: p99 <= 20 },
      errors(w1, 'W1 send'),
      info('W1 send', 'server CPU ms per request', cpuMs.get(w1.parley) ?? null, cpuMs.get(w1.floor) ?? null),
      {
        ...info(
          'W1 send',
          'other processes CPU %',
          othersPct.get(w1.parley) ?? null,
          othersPct.get(w1.floor) ?? null,
        ),
        ratio: false,
      },
      info('W1 send', 'req/s vs floor sync=NORMAL', w1.parley.rps, w1normal.rps),
      info('W1 send', 'p99 ms vs floor sync=NORMAL', p99, w1normal.latency.p99),
      info('W1 send', 'c=1 req/s', w1one.parley.rps, w1one.floor.rps),
      info('W1 send', 'c=1 p50 ms', w1one.parley.latency.p50, w1one.floor.latency.p50),
      info('W1 send', 'c=1 p99 ms', w1one.parley.latency.p99, w1one.floor.latency.p99),
      info('W2 stream', 'streams/s', w2.parley.rps, w2.floor.rps),
      info('W2 stream', 'first event p50 ms', w2.parley.ttfe?.p50 ?? null, w2.floor.ttfe?.p50 ?? null),
      {
        ...info('W2 stream', 'first event p99 ms', ttfe99, w2.floor.ttfe?.p99 ?? null),
        target: '≤ 10 ms',
        met: ttfe99 <= 10,
      },
      info('W2 stream', 'complete p50 ms', w2.parley.latency.p50, w2.floor.latency.p50),
      info('W2 stream', 'complete p99 ms', w2.parley.latency.p99, w2.floor.latency.p99),
      info(
        'W2 stream',
        'server CPU ms per stream',
        cpuMs.get(w2.parley) ?? null,
        cpuMs.get(w2.floor) ?? null,
      ),
      {
        ...info(
          'W2 stream',
          'other processes CPU %',
          othersPct.get(w2.parley) ?? null,
          othersPct.get(w2.floor) ?? null,
        ),
        ratio: false,
      },
      errors(w2, 'W2 stream'),
    ];
    const line = (name: string, r: PassReport) =>
      `- ${name}: ${r.count} answered in the measured ${r.seconds} s; latency ${JSON.stringify(r.latency)}` +
      `${r.ttfe ? `; first event ${JSON.stringify(r.ttfe)}` : ''}; errors ${errorText(r)}; server CPU ` +
      `${cpuMs.get(r)?.toFixed(3) ?? '?'} ms per request; other processes ${othersPct.get(r)?.toFixed(0) ?? '?'}% CPU`;
    const details = [
      `### W1, W2 (c=${s.concurrency} over ${s.sessions} sessions, ${s.warmupMs / 1000} s warm-up, ` +
        `${s.durationMs / 1000} s measured)`,
      '',
      '- Latency summaries count the requests started in the measured window; req/s counts those answered in it.',
      '- Server CPU per request: user + system CPU time of the server process (from /proc) over warm-up and ' +
        'measured window, divided by every request sent in them; less sensitive to other load than req/s.',
      '- "floor sync=NORMAL" is the same floor with `synchronous = NORMAL` (better-sqlite3\'s default under WAL: ' +
        'no fsync per commit), for comparison only; the ratios and targets use the `FULL` floor.',
      '- "other processes CPU %": machine CPU time during the run (os.cpus) minus the server\'s and the load ' +
        "generator's, in % of one CPU (the machine has " +
        `${cpus().length}): anything well above 0 (other tests, builds) makes that run's figures pessimistic.`,
      '- "c=1": one worker, 0.5 s warm-up, at most 3 s measured: the latency of a turn without queueing.',
      line('W1 Parley', w1.parley),
      line('W1 floor', w1.floor),
      line('W1 floor sync=NORMAL', w1normal),
      line('W1 Parley c=1', w1one.parley),
      line('W1 floor c=1', w1one.floor),
      line('W2 Parley', w2.parley),
      line('W2 floor', w2.floor),
    ];
    return { rows, details };
  } finally {
    await Promise.all([parley.stop(), floor.stop(), normal.stop()]);
  }
}

// W5: two Parley processes sharing one SQLite store through Redis leases
// (docs/internals/architecture.md#sharding-and-ownership). The W1 send to the sessions' owner (direct) vs
// through the other process (forwarded), then how long after a kill -9 of the owner its sessions answer again
// through the survivor.
import { randomBytes } from 'node:crypto';
import { findRedisServer } from '../support/redis-server.ts';
import {
  forwards,
  NODE_HEADER,
  nodeOf,
  PROBE_EVERY_MS,
  PROBE_TIMEOUT_MS,
  RECOVERY_LIMIT_MS,
  recover,
  send,
  tails,
  waitForSplit,
} from './cluster-nodes.ts';
import type { PassReport } from './load.ts';
import { tempDir } from './processes.ts';
import { startRedis } from './redis-server.ts';
import { machineCpu, type Row } from './report.ts';
import { runLoad } from './run-load.ts';
import { cpuSeconds, createSessions, metric, readMetrics, type Server, startParley } from './servers.ts';
import { errorCount, errorText, info, log, type Outcome, type Settings } from './workload.ts';

const OVERHEAD_TARGET = '≤ 1 ms';
const RECOVERY_TARGET_S = 12;
/** The unmeasured pass through B before the measured runs. */
const WARM_UP_MS = 3_000;

export async function cluster(s: Settings): Promise<Outcome> {
  const binary = findRedisServer();
  if (!binary) {
    log('W5: redis-server is not on PATH; not measured');
    return notMeasured('redis-server not on PATH');
  }
  // Stopped in reverse order of start: the Parley processes leave the cluster while Redis still answers.
  const stops: Array<() => Promise<void>> = [];
  try {
    const redis = await startRedis(binary);
    stops.push(() => redis.stop());
    const dataDir = tempDir('cluster');
    const shared = { redisUrl: redis.url, tokenSecret: randomBytes(24).toString('hex') };
    // A first: it migrates the store and takes every shard; B joining then takes about half of them.
    const a = await startParley({ name: 'parley A', dataDir, cluster: shared });
    stops.push(() => a.stop());
    const b = await startParley({ name: 'parley B', dataDir, apiKey: a.apiKey, cluster: shared });
    stops.push(() => b.stop());
    const split = await waitForSplit(a, b);
    log(`W5: shards split A ${split.a} / B ${split.b} after ${split.seconds.toFixed(1)} s`);

    log(`W5: creating ${s.sessions} sessions through A`);
    // A process creates sessions in shards it owns, so A owns every one of them.
    const sessions = await createSessions(a, s.sessions);
    const nodeA = await nodeOf(a);
    const nodeB = await nodeOf(b);
    const probe = await send(b, sessions[0] as string);
    if (probe.status !== 201 || probe.node !== nodeA) {
      throw new Error(
        `a send through B answered ${probe.status} from ${probe.node}, not 201 from A (${nodeA})`,
      );
    }

    const drive = async (server: Server, concurrency: number) => {
      const durationMs = concurrency === 1 ? Math.min(3_000, s.durationMs) : s.durationMs;
      const how = server === a ? 'direct to A' : 'forwarded through B';
      log(`W5: ${how}, c=${concurrency}, ${durationMs / 1000} s`);
      const before = await Promise.all([forwards(a), forwards(b)]);
      const cpuBefore = [cpuSeconds(a), cpuSeconds(b)];
      const machineBefore = machineCpu();
      const t0 = Date.now();
      const report = await runLoad({
        url: server.url,
        apiKey: server.apiKey,
        mode: 'plain',
        sessions,
        concurrency,
        kind: 'duration',
        warmupMs: concurrency === 1 ? 500 : s.warmupMs,
        durationMs,
      });
      const cpuAfter = [cpuSeconds(a), cpuSeconds(b)];
      const machineAfter = machineCpu();
      const after = await Promise.all([forwards(a), forwards(b)]);
      // CPU per request sent (warm-up included), as in W1: what the hop costs, whatever else loads the machine.
      const cpuMs = (i: number) => {
        const [from, to] = [cpuBefore[i], cpuAfter[i]];
        return from == null || to == null ? null : ((to - from) * 1000) / report.sent;
      };
      // As in W1: CPU of everything but A, B and the load generator, in % of one CPU; high means a noisy run.
      const serversMs = ((cpuMs(0) ?? 0) + (cpuMs(1) ?? 0)) * report.sent;
      const othersMs = machineAfter.busy - machineBefore.busy - report.loaderCpuMs - serversMs;
      const othersPct = Math.max(0, (100 * othersMs) / (Date.now() - t0));
      log(
        `W5:   ${report.rps} req/s, p50 ${report.latency.p50} ms, p99 ${report.latency.p99} ms, errors ` +
          `${errorText(report)}; other processes ${othersPct.toFixed(0)}% CPU`,
      );
      return {
        report,
        forwardedByA: (after[0] ?? 0) - (before[0] ?? 0),
        forwardedByB: (after[1] ?? 0) - (before[1] ?? 0),
        cpuMsA: cpuMs(0),
        cpuMsB: cpuMs(1),
        othersPct,
      };
    };
    // Unmeasured: a pass through B warms both processes (B's relay path, A's turns), so the CPU figures
    // below measure the code, not its JIT compilation in a fresh process.
    log(`W5: warm-up through B, c=${s.concurrency}, ${WARM_UP_MS / 1000} s`);
    await runLoad({
      url: b.url,
      apiKey: b.apiKey,
      mode: 'plain',
      sessions,
      concurrency: s.concurrency,
      kind: 'duration',
      warmupMs: 0,
      durationMs: WARM_UP_MS,
    });
    const many = { direct: await drive(a, s.concurrency), forwarded: await drive(b, s.concurrency) };
    const one = { direct: await drive(a, 1), forwarded: await drive(b, 1) };

    log('W5: kill -9 of A, then a send through B every 50 ms until it answers 201');
    const recovery = await recover(a, b, sessions[1] as string);
    const ownedByB = metric(await readMetrics(b), 'parley_owned_shards');
    log(
      `W5: ${recovery.seconds === null ? `no 201 within ${RECOVERY_LIMIT_MS / 1000} s` : `recovered in ${recovery.seconds.toFixed(2)} s`}`,
    );

    const runs = [many.direct, many.forwarded, one.direct, one.forwarded];
    const errors = runs.reduce((sum, r) => sum + errorCount(r.report), 0);
    // Direct sends must all be served by A, forwarded ones all relayed by B: anything else measured another thing.
    const misrouted = runs.some((r) =>
      r === many.forwarded || r === one.forwarded ? r.forwardedByB < r.report.sent : r.forwardedByA > 0,
    );
    if (errors > 0 || misrouted || recovery.seconds === null || recovery.seconds > RECOVERY_TARGET_S) {
      log(`W5: something is off; the last log lines of the Parley processes follow.\n${tails([a, b])}`);
    }

    const overhead = (r: typeof many) => r.forwarded.report.latency.p50 - r.direct.report.latency.p50;
    const rows: Row[] = [
      ...figures(`c=${s.concurrency}`, many),
      overheadRow(`c=${s.concurrency}`, overhead(many)),
      info('W5 cluster', `c=${s.concurrency} B CPU ms per forwarded request`, many.forwarded.cpuMsB),
      info('W5 cluster', `c=${s.concurrency} A CPU ms per direct request`, many.direct.cpuMsA),
      ...figures('c=1', one),
      overheadRow('c=1', overhead(one)),
      // Direct and forwarded run one after the other, so other load can favour either: the busiest run says
      // how far the difference can be trusted.
      {
        ...info(
          'W5 cluster',
          'other processes CPU % (busiest run)',
          Math.max(...runs.map((r) => r.othersPct)),
        ),
        ratio: false,
      },
      { ...info('W5 cluster', 'errors', errors), target: '0', met: errors === 0 },
      {
        ...info('W5 cluster', 'recovery after kill -9 s', recovery.seconds),
        target: `≤ ${RECOVERY_TARGET_S} s`,
        met: recovery.seconds !== null && recovery.seconds <= RECOVERY_TARGET_S,
      },
    ];
    const line = (name: string, r: Awaited<ReturnType<typeof drive>>) =>
      `- ${name}: ${r.report.count} answered in the measured ${r.report.seconds} s; latency ` +
      `${JSON.stringify(r.report.latency)}; errors ${errorText(r.report)}; of ${r.report.sent} sent, A ` +
      `forwarded ${r.forwardedByA}, B forwarded ${r.forwardedByB}; CPU ms per request: A ${fixed(r.cpuMsA)}, B ` +
      `${fixed(r.cpuMsB)}; other processes ${r.othersPct.toFixed(0)}% CPU`;
    const details = [
      `### W5 (two processes, one SQLite store, Redis leases of 10 s; c=${s.concurrency} and c=1 over ` +
        `${s.sessions} sessions)`,
      '',
      `- Set-up: a private redis-server, Parley A started first (it migrates), then B on the same data dir; ` +
        `shards split A ${split.a} / B ${split.b} ${split.seconds.toFixed(1)} s after B was ready. ` +
        `Sessions created through A, so A owns them all; a probe send through B answered from A (${NODE_HEADER}: ` +
        `${nodeA}; B is ${nodeB}).`,
      '- Direct: the load generator sends to A. Forwarded: it sends to B, which relays each request to A ' +
        '(one more loopback hop and a third process on the same CPUs). Overhead = forwarded p50 − direct p50.',
      `- Before the measured runs, an unmeasured ${WARM_UP_MS / 1000} s pass at c=${s.concurrency} through B ` +
        'warms both processes, so no run pays for JIT compilation in a fresh process.',
      '- CPU per request: user + system CPU time of A or B (from /proc) over warm-up and measured window, ' +
        "divided by every request sent in them; B's in a forwarded run is what relaying costs.",
      `- c=${s.concurrency}: ${s.warmupMs / 1000} s warm-up, ${s.durationMs / 1000} s measured; c=1: 0.5 s ` +
        `warm-up, at most 3 s measured.${misrouted ? ' **Some requests were not routed as intended (see the forward counts).**' : ''}`,
      line(`c=${s.concurrency} direct`, many.direct),
      line(`c=${s.concurrency} forwarded`, many.forwarded),
      line('c=1 direct', one.direct),
      line('c=1 forwarded', one.forwarded),
      `- Recovery: A killed with SIGKILL, then a send (same Idempotency-Key each time, ${PROBE_TIMEOUT_MS / 1000} s ` +
        `timeout) through B every ${PROBE_EVERY_MS} ms to one of A's sessions until a 201: ` +
        `${recovery.seconds === null ? `none within ${RECOVERY_LIMIT_MS / 1000} s` : `${recovery.seconds.toFixed(2)} s`} ` +
        `from the kill; answers before it ${JSON.stringify(recovery.answers)}; B owned ${ownedByB} shards right after.`,
    ];
    return { rows, details };
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

const fixed = (v: number | null) => (v === null ? '?' : v.toFixed(3));

function notMeasured(why: string): Outcome {
  return {
    rows: [
      { ...info('W5 cluster', `not measured (${why})`, null), target: 'fwd p50 ≤ 1 ms; recovery ≤ 12 s' },
    ],
    details: ['### W5', '', `- Not measured: ${why}.`],
  };
}

interface Drive {
  report: PassReport;
}

/** req/s, p50 and p99, direct then forwarded: one row each, since "forwarded" is no floor of "direct". */
function figures(label: string, r: { direct: Drive; forwarded: Drive }): Row[] {
  return (['direct', 'forwarded'] as const).flatMap((how) => [
    info('W5 cluster', `${label} ${how} req/s`, r[how].report.rps),
    info('W5 cluster', `${label} ${how} p50 ms`, r[how].report.latency.p50),
    info('W5 cluster', `${label} ${how} p99 ms`, r[how].report.latency.p99),
  ]);
}

function overheadRow(label: string, ms: number): Row {
  return {
    ...info('W5 cluster', `${label} forwarded overhead p50 ms`, ms),
    target: OVERHEAD_TARGET,
    met: ms <= 1,
  };
}

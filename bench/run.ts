// `npm run bench`: runs W1–W5 of issue 7, W1t of issue 17 (W1 with a tool step per send), W1w (W1 with a
// webhook endpoint), W6 (a turn paused for approval, then approved) and W7 (W1 with one conversation event
// stream subscriber per session) against Parley and the floor, prints the table, writes bench/RESULTS.md.
// Options: --quick (short runs, fewer sessions), --duration=S (measured seconds of W1/W2/W1t/W1w/W6/W7),
// --only=w1,w1t,w1w,w3,w6,w7 (w1 and w2 run together; w1t runs them too, since its figures are differences to
// W1; w1w and w7 run their own W1; w6 compares with W1t when it ran too), --no-write (do not touch RESULTS.md;
// implied by --only).
import { approvalCost } from './approval-cost.ts';
import { cluster } from './cluster.ts';
import { coldActivation } from './cold-activation.ts';
import { eventStreamCost } from './event-stream-cost.ts';
import { type MemoryRun, startMemory } from './memory.ts';
import { installCleanup } from './processes.ts';
import { cpuBusy, formatTable, writeResults } from './report.ts';
import { throughput } from './throughput.ts';
import { webhookCost } from './webhooks.ts';
import type { Outcome, Settings } from './workload.ts';

const args = process.argv.slice(2);
const option = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const unknown = args.filter((a) => !/^--(quick|no-write|duration=\d+(\.\d+)?|only=[\w,]+)$/.test(a));
if (unknown.length) {
  process.stderr.write(
    `unknown option(s): ${unknown.join(' ')}\n` +
      'usage: npm run bench -- [--quick] [--duration=S] [--only=w1,w1t,w1w,w2,w3,w4,w5,w6,w7] [--no-write]\n',
  );
  process.exit(2);
}

const quick = args.includes('--quick');
const settings: Settings = {
  warmupMs: quick ? 1_000 : 2_000,
  durationMs: Number(option('duration') ?? (quick ? 4 : 10)) * 1000,
  sessions: 1_000,
  concurrency: 32,
  memorySessions: quick ? 2_000 : 10_000,
  // W3's actors must stay resident through its sends and loaded read; W1, W2 and W4 run during the idle wait.
  memoryIdleSeconds: quick ? 40 : 120,
  coldSessions: quick ? 300 : 1_000,
  coldConcurrency: 8,
};
const only = option('only')?.toLowerCase().split(',');
const wanted = (w: string) => !only || only.includes(w);

installCleanup();
const busyBefore = await cpuBusy();
process.stderr.write(
  `CPUs ${busyBefore.toFixed(0)}% busy before the run (other processes skew the figures)\n`,
);
const startedAt = new Date();
const done: Record<string, Outcome> = {};
let w3: MemoryRun | undefined;
let failed = false;
try {
  // W3 starts first: its passivation wait is idle time, spent running the others in their own processes.
  if (wanted('w3')) w3 = await startMemory(settings);
  if (wanted('w1') || wanted('w2') || wanted('w1t')) {
    done.w12 = await throughput(settings, { toolStep: wanted('w1t') });
  }
  if (wanted('w1w')) done.w1w = await webhookCost(settings);
  if (wanted('w6')) {
    const w1t = done.w12?.figures;
    const toolStep =
      w1t?.w1tCpuMs !== undefined ? { concurrent: w1t.w1tCpuMs, one: w1t.w1tOneCpuMs ?? null } : undefined;
    done.w6 = await approvalCost(settings, toolStep);
  }
  if (wanted('w7')) done.w7 = await eventStreamCost(settings);
  if (wanted('w4')) done.w4 = await coldActivation(settings);
  if (w3) done.w3 = await w3.finish();
  // After W4 and W3's last read: W5's three processes would skew their figures.
  if (wanted('w5')) done.w5 = await cluster(settings);
} catch (err) {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  failed = true;
  process.exitCode = 1;
  await w3?.stop();
}

const outcomes = ['w12', 'w1w', 'w6', 'w7', 'w3', 'w4', 'w5'].flatMap((k) => (done[k] ? [done[k]] : []));
const table = formatTable(outcomes.flatMap((o) => o.rows));
const seconds = (Date.now() - startedAt.getTime()) / 1000;
process.stdout.write(`\n${table}\n\n(${Math.round(seconds)} s)\n`);
const details = outcomes.flatMap((o) => [...o.details, '']).join('\n');
if (!failed && !only && !args.includes('--no-write')) {
  const command = ['npm run bench', ...(args.length ? ['--', ...args] : [])].join(' ');
  const file = writeResults({ command, startedAt, busyBefore, seconds, table, details });
  process.stdout.write(`wrote ${file}\n`);
} else if (details.trim()) {
  // Not written to RESULTS.md: the raw summaries (and each run's other load) are only here.
  process.stdout.write(`\n${details}`);
}

// The result table (figure, Parley, floor, ratio, target, met) and bench/RESULTS.md with the machine description.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { benchDir } from './processes.ts';

export interface Row {
  workload: string;
  figure: string;
  parley: number | null;
  floor: number | null;
  /** The target, as text. */
  target: string;
  /** Whether the target is met; null when the row has no target or was not measured. */
  met: boolean | null;
  /** False where Parley/floor means nothing (the columns are two separate runs' conditions). */
  ratio?: false;
}

const number = (v: number | null) =>
  v === null
    ? '—'
    : Math.abs(v) >= 100
      ? Math.round(v).toLocaleString('en-US')
      : String(Math.round(v * 100) / 100);

export function formatTable(rows: Row[]): string {
  const lines = [
    '| workload | figure | Parley | floor | Parley/floor | target | met |',
    '|---|---|--:|--:|--:|---|---|',
  ];
  for (const r of rows) {
    const ratio =
      r.ratio !== false && r.parley !== null && r.floor ? `${(r.parley / r.floor).toFixed(2)}x` : '—';
    const met = r.met === null ? '—' : r.met ? 'yes' : '**no**';
    lines.push(
      `| ${r.workload} | ${r.figure} | ${number(r.parley)} | ${number(r.floor)} | ${ratio} | ${r.target} | ${met} |`,
    );
  }
  return lines.join('\n');
}

/** CPU time of the whole machine so far, in ms: busy (all processes) and in all (busy + idle), summed over CPUs. */
export function machineCpu(): { busy: number; all: number } {
  return cpus().reduce(
    (acc, c) => {
      const all = c.times.user + c.times.nice + c.times.sys + c.times.irq + c.times.idle;
      return { busy: acc.busy + all - c.times.idle, all: acc.all + all };
    },
    { busy: 0, all: 0 },
  );
}

/** How busy the machine's CPUs were (all processes) over `ms`, in percent: other load skews every figure. */
export async function cpuBusy(ms = 1_000): Promise<number> {
  const a = machineCpu();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const b = machineCpu();
  return b.all > a.all ? (100 * (b.busy - a.busy)) / (b.all - a.all) : 0;
}

const loads = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');

export function machine(busyBefore: number): string {
  const cpu = cpus();
  let kernel = 'unknown';
  try {
    kernel = execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim();
  } catch {
    // not a Unix
  }
  return [
    `- CPU: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length}`,
    `- Memory: ${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- Node: ${process.version}`,
    `- Kernel: ${kernel} (${process.platform}/${process.arch})`,
    `- Other load: CPUs ${busyBefore.toFixed(0)}% busy in the second before the run; load average (1/5/15 min) ` +
      `at the end ${loads()}`,
  ].join('\n');
}

export function writeResults(options: {
  command: string;
  startedAt: Date;
  busyBefore: number;
  seconds: number;
  table: string;
  details: string;
}): string {
  const file = join(benchDir, 'RESULTS.md');
  // The notes are written by people (what the profile showed, what was changed); a new run keeps them.
  const previous = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const notesAt = previous.indexOf('\n## Notes\n');
  const notes = notesAt >= 0 ? previous.slice(notesAt + '\n## Notes\n'.length).trim() : '<!-- analysis -->';
  const text = `# Benchmark results

Written by \`npm run bench\` (\`bench/run.ts\`); every figure below was measured in this run.

- Date: ${options.startedAt.toISOString()}
- Command: \`${options.command}\` (${Math.round(options.seconds)} s)

## Machine

${machine(options.busyBefore)}

## Results

Latencies in ms, measured by the load generator (its own process, undici over loopback). Parley runs the
\`scripted\` agent with \`token_delay_ms: 0\`; the floor is \`bench/floor-server.ts\` (bare Fastify 5, one
better-sqlite3 transaction per request, WAL, \`synchronous = FULL\`).

${options.table}

${options.details}

## Notes

${notes}
`;
  writeFileSync(file, text);
  return file;
}

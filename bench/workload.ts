// What every workload shares: the run's settings, its outcome (table rows + RESULTS.md details), log lines.
import type { PassReport } from './load.ts';
import type { Row } from './report.ts';

export interface Settings {
  warmupMs: number;
  durationMs: number;
  /** W1/W2: sessions and concurrent workers. */
  sessions: number;
  concurrency: number;
  /** W3: sessions, and the idle time before passivation (it must outlast the sends and the loaded read). */
  memorySessions: number;
  memoryIdleSeconds: number;
  /** W4 */
  coldSessions: number;
  coldConcurrency: number;
}

export interface Outcome {
  rows: Row[];
  /** Markdown lines for RESULTS.md: set-up, errors, raw summaries. */
  details: string[];
  /** Figures a later workload compares with, by name (W6 takes W1t's server CPU per turn). */
  figures?: Record<string, number | null>;
}

export const log = (line: string) => process.stderr.write(`${line}\n`);

export const errorCount = (r: PassReport) => Object.values(r.errors).reduce((a, b) => a + b, 0);
export const errorText = (r: PassReport) => (errorCount(r) ? JSON.stringify(r.errors) : 'none');

/** A row without a floor figure or target. */
export const info = (
  workload: string,
  figure: string,
  parley: number | null,
  floor: number | null = null,
): Row => ({
  workload,
  figure,
  parley,
  floor,
  target: '',
  met: null,
});

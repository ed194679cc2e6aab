// Latency summaries: nearest-rank percentiles over recorded samples (milliseconds).

export interface Summary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function summarize(samples: number[]): Summary {
  const sorted = Float64Array.from(samples).sort();
  const at = (q: number) =>
    sorted.length ? (sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? 0) : 0;
  const total = sorted.reduce((sum, v) => sum + v, 0);
  const round = (v: number) => Math.round(v * 1000) / 1000;
  return {
    count: sorted.length,
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    max: round(sorted.length ? (sorted[sorted.length - 1] ?? 0) : 0),
    mean: round(sorted.length ? total / sorted.length : 0),
  };
}

/** Milliseconds between two process.hrtime.bigint() readings. */
export const msBetween = (start: bigint, end: bigint) => Number(end - start) / 1e6;

// When a webhook delivery that failed is tried again (docs/internals/decisions.md#webhooks): the waits after
// attempt 1, 2, …, and the parser of PARLEY_WEBHOOK_RETRY_SCHEDULE. Once the attempts outnumber the waits,
// the delivery has failed.

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Most waits a schedule may list. */
export const MAX_RETRY_SCHEDULE_ENTRIES = 100;

/**
 * 1 s, 5 s, 30 s, 2 min, 10 min, 1 h, then hourly until the waits add up to 24 h: the last attempt is made a
 * day (and a few minutes) after the first, 30 attempts in all.
 */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE: readonly number[] = (() => {
  const waits = [SECOND, 5 * SECOND, 30 * SECOND, 2 * MINUTE, 10 * MINUTE, HOUR];
  let total = waits.reduce((sum, wait) => sum + wait, 0);
  while (total < DAY) {
    waits.push(HOUR);
    total += HOUR;
  }
  return Object.freeze(waits);
})();

const UNITS: Record<string, number> = { ms: 1, s: SECOND, m: MINUTE, h: HOUR };
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/;

/**
 * Parses a comma-separated list of waits such as `1s, 5s, 30s, 2m` (units ms, s, m, h) into milliseconds;
 * a message saying what is wrong instead when the text is not such a list. Each wait is over 0 and at most
 * 24 h; there are at most 100.
 */
export function parseRetrySchedule(text: string): number[] | string {
  const entries = text.split(',').map((entry) => entry.trim());
  if (entries.length > MAX_RETRY_SCHEDULE_ENTRIES) {
    return `has ${entries.length} waits; at most ${MAX_RETRY_SCHEDULE_ENTRIES} are allowed`;
  }
  const waits: number[] = [];
  for (const entry of entries) {
    const match = DURATION.exec(entry);
    if (!match) {
      return entry === ''
        ? 'has an empty wait: give a comma-separated list of durations such as 1s,5s,30s,2m'
        : `"${entry}" is not a duration: give a number and a unit (ms, s, m or h), such as 30s`;
    }
    const ms = Math.round(Number(match[1]) * UNITS[match[2]]);
    if (ms <= 0) return `"${entry}" is not a wait: each must be over 0`;
    if (ms > DAY) return `"${entry}" is too long: each wait must be at most 24h`;
    waits.push(ms);
  }
  return waits;
}

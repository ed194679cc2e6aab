// The webhook retry schedule (docs/internals/decisions.md#webhooks): the default waits, and
// PARLEY_WEBHOOK_RETRY_SCHEDULE's parser.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE, parseRetrySchedule } from '../../src/webhooks/retry-schedule.ts';

const HOUR = 3_600_000;

test('the default schedule waits 1 s, 5 s, 30 s, 2 min, 10 min, 1 h, then hourly, its last attempt about 24 h after the first', () => {
  assert.deepEqual(DEFAULT_WEBHOOK_RETRY_SCHEDULE.slice(0, 6), [1000, 5000, 30_000, 120_000, 600_000, HOUR]);
  assert.ok(DEFAULT_WEBHOOK_RETRY_SCHEDULE.slice(6).every((wait) => wait === HOUR));
  const total = DEFAULT_WEBHOOK_RETRY_SCHEDULE.reduce((sum, wait) => sum + wait, 0);
  assert.ok(total >= 24 * HOUR && total < 25 * HOUR, `${total / HOUR} h`);
  assert.ok(Object.isFrozen(DEFAULT_WEBHOOK_RETRY_SCHEDULE));
});

test('a comma-separated list of durations in ms, s, m and h is read as milliseconds, spaces allowed', () => {
  assert.deepEqual(parseRetrySchedule('1s,5s,30s,2m'), [1000, 5000, 30_000, 120_000]);
  assert.deepEqual(parseRetrySchedule(' 250ms , 1.5s,10 m, 1h '), [250, 1500, 600_000, HOUR]);
  assert.deepEqual(parseRetrySchedule('24h'), [24 * HOUR]);
  assert.deepEqual(parseRetrySchedule(Array(100).fill('1s').join(',')), Array(100).fill(1000));
});

test('a schedule that is empty, unitless, zero, over 24 h or longer than 100 waits is refused with a message', () => {
  const cases: Array<[string, RegExp]> = [
    ['', /empty wait/],
    ['1s,,5s', /empty wait/],
    ['5', /"5" is not a duration/],
    ['5x', /"5x" is not a duration/],
    ['-1s', /"-1s" is not a duration/],
    ['1d', /"1d" is not a duration/],
    ['0s', /"0s" is not a wait: each must be over 0/],
    ['0.0001ms', /must be over 0/],
    ['25h', /"25h" is too long/],
    ['1441m', /too long/],
    [Array(101).fill('1s').join(','), /101 waits; at most 100/],
  ];
  for (const [text, message] of cases) {
    const parsed = parseRetrySchedule(text);
    assert.equal(typeof parsed, 'string', text);
    assert.match(String(parsed), message, text);
  }
});

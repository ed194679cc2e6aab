// Budget periods in UTC (docs/guides/usage.md#budgets): a day and a month start and end at UTC midnight
// whatever the local time zone, so Retry-After counts to that instant; December rolls over into January.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { periodOf } from '../../src/actors/budgets.ts';

const at = (iso: string) => new Date(iso);

describe('budget periods', () => {
  test('a day runs from UTC midnight to the next, its last millisecond included', () => {
    assert.deepEqual(periodOf('day', at('2026-03-01T23:59:59.999Z')), {
      fromDay: '2026-03-01',
      endsAt: at('2026-03-02T00:00:00.000Z'),
    });
    assert.deepEqual(periodOf('day', at('2026-03-02T00:00:00.000Z')).fromDay, '2026-03-02');
  });

  test('a month runs from its first UTC day to the next month, across a year and a leap day', () => {
    assert.deepEqual(periodOf('month', at('2026-12-31T23:59:59.999Z')), {
      fromDay: '2026-12-01',
      endsAt: at('2027-01-01T00:00:00.000Z'),
    });
    assert.deepEqual(periodOf('month', at('2028-02-29T12:00:00.000Z')), {
      fromDay: '2028-02-01',
      endsAt: at('2028-03-01T00:00:00.000Z'),
    });
  });

  test('an instant written with another offset is read in UTC', () => {
    assert.deepEqual(periodOf('day', at('2026-03-02T01:30:00+02:00')).fromDay, '2026-03-01');
  });
});

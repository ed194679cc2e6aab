// Resource ids: what they look like, and that ids made later sort after earlier ones.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from '../src/ids.ts';

test('an id is its prefix, an underscore and 21 letters and digits, and no two are alike', () => {
  const ids = Array.from({ length: 10_000 }, () => newId('msg'));
  for (const id of ids) assert.match(id, /^msg_[0-9A-Za-z]{21}$/);
  assert.equal(new Set(ids).size, ids.length);
});

test('ids of one kind made in later milliseconds sort after earlier ones, as strings', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    ids.push(newId('ses'));
    const at = Date.now();
    // The next id must be made in a later millisecond: wait for the clock to move, not for a time.
    while (Date.now() === at) await sleep(1);
  }
  assert.deepEqual([...ids].sort(), ids);
});

// Shard assignment must be stable across processes and releases, and spread sessions evenly.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../src/ids.ts';
import { SHARD_COUNT, shardOf } from '../src/shards.ts';

describe('shardOf', () => {
  it('gives the same shard for the same id, always', () => {
    // Pinned values: changing the hash would move every stored session to another shard.
    assert.equal(shardOf('ses_abc'), shardOf('ses_abc'));
    // FNV-1a offset basis 0x811c9dc5 for the empty string: its low 10 bits are 453.
    assert.deepEqual(['', 'a', 'ses_V1StGXR8_Z5jdHi6B-myT'].map(shardOf), [453, 300, 790]);
  });

  it('stays within 0..1023 and spreads random ids evenly', () => {
    const counts = new Array<number>(SHARD_COUNT).fill(0);
    const n = 200_000;
    for (let i = 0; i < n; i++) {
      const shard = shardOf(newId('ses'));
      assert.ok(shard >= 0 && shard < SHARD_COUNT);
      counts[shard] = (counts[shard] ?? 0) + 1;
    }
    const mean = n / SHARD_COUNT;
    assert.ok(Math.min(...counts) > mean * 0.6, `min ${Math.min(...counts)}`);
    assert.ok(Math.max(...counts) < mean * 1.4, `max ${Math.max(...counts)}`);
  });
});

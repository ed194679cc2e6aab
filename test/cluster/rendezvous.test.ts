// Rendezvous hashing decides which live member should own each shard: every process must agree, the
// shards must spread evenly, and a member joining or leaving must move only its own share.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { desiredOwner, desiredShards } from '../../src/cluster/rendezvous.ts';
import { SHARD_COUNT } from '../../src/shards.ts';

const members = ['vm-101-aaaa', 'vm-102-bbbb', 'vm-103-cccc'];
const owners = (list: string[]) => Array.from({ length: SHARD_COUNT }, (_, s) => desiredOwner(list, s));

describe('rendezvous hashing', () => {
  it('gives the same owner whatever the order of the member list', () => {
    assert.deepEqual(owners(members), owners([...members].reverse()));
  });

  it('has no owner without members, and the only member owns everything', () => {
    assert.equal(desiredOwner([], 7), null);
    assert.equal(desiredShards(['solo'], 'solo').length, SHARD_COUNT);
  });

  it('spreads the shards evenly: each of three members owns between 25% and 42% of them', () => {
    for (const m of members) {
      const share = desiredShards(members, m).length / SHARD_COUNT;
      assert.ok(share > 0.25 && share < 0.42, `${m} owns ${share}`);
    }
  });

  it('moves only the shards the new member wins when one joins', () => {
    const before = owners(members);
    const after = owners([...members, 'vm-104-dddd']);
    for (let s = 0; s < SHARD_COUNT; s++) {
      if (before[s] !== after[s])
        assert.equal(after[s], 'vm-104-dddd', `shard ${s} moved between old members`);
    }
    const won = after.filter((o) => o === 'vm-104-dddd').length;
    assert.ok(won > SHARD_COUNT * 0.15 && won < SHARD_COUNT * 0.35, `the newcomer won ${won}`);
  });

  it("moves only the leaving member's shards when one leaves", () => {
    const before = owners(members);
    const after = owners(members.slice(1));
    for (let s = 0; s < SHARD_COUNT; s++) {
      if (before[s] !== members[0]) assert.equal(after[s], before[s], `shard ${s} moved needlessly`);
    }
  });
});

// The resident bytes of a process (docs/internals/decisions.md#resident-memory): histories and file contents
// under one bound, the least recently used of either kind let go first; and a session's cached history as it
// follows its commits.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CachedHistory, messageBytes } from '../src/actors/cached-history.ts';
import { FileCache } from '../src/agents/file-cache.ts';
import { ResidentBytes } from '../src/resident-bytes.ts';
import type { MessageRecord } from '../src/store/store.ts';

/** No bound on a history's characters: these tests are about bytes. */
const anyChars = Number.MAX_SAFE_INTEGER;
let seq = 0;
function message(text: string): MessageRecord {
  return {
    id: `msg_${++seq}`,
    session_id: 'ses_1',
    role: 'user',
    content: [{ type: 'text', text }],
    metadata: null,
    created_at: new Date(0).toISOString(),
    turn_id: null,
    stop_reason: null,
    usage: null,
    tool_calls: null,
    author: null,
  };
}

/** A loader that counts its calls. */
function loader(messages: MessageRecord[]) {
  const load = async () => {
    load.calls++;
    return [...messages];
  };
  load.calls = 0;
  return load;
}

describe('resident bytes', () => {
  test('holdings past the bound push out the least recently used, each told through its release', () => {
    const released: string[] = [];
    const seen: number[] = [];
    const resident = new ResidentBytes({
      maxBytes: 100,
      rss: null,
      onChange: (bytes) => seen.push(bytes),
    });
    const hold = (key: string, bytes: number) => resident.hold(key, bytes, () => released.push(key));
    assert.ok(hold('a', 40));
    assert.ok(hold('b', 40));
    resident.touch('a');
    assert.ok(hold('c', 40));
    assert.deepEqual(released, ['b']);
    assert.equal(resident.bytes, 80);
    assert.ok(hold('a', 70), 'a holding grows in place');
    assert.deepEqual(released, ['b', 'c']);
    assert.equal(resident.bytes, 70);
    assert.equal(seen.at(-1), 70, 'every change is reported');
  });

  test('a holding larger than the bound is refused and keeps nothing, without pushing anything out', () => {
    const released: string[] = [];
    const resident = new ResidentBytes({ maxBytes: 100, rss: null });
    resident.hold('a', 50, () => released.push('a'));
    resident.hold('big', 30, () => released.push('big'));
    assert.equal(
      resident.hold('big', 101, () => released.push('big')),
      false,
    );
    assert.deepEqual(released, []);
    assert.equal(resident.bytes, 50);
  });

  test('with the process under 85% of the bound the room grows by half the free room a second, from nothing', () => {
    let now = 0;
    const resident = new ResidentBytes({ maxBytes: 1000, rss: () => 0, now: () => now });
    const hold = (key: string, bytes: number) => resident.hold(key, bytes, () => {});
    assert.equal(hold('a', 400), true);
    assert.equal(resident.limit, 425, 'half of the 850 free below the aim');
    assert.equal(hold('b', 500), false, 'no more room before the next reading');
    now += 1000;
    assert.equal(hold('b', 400), true);
    assert.equal(resident.limit, 850);
    assert.equal(resident.bytes, 800);
    now += 1000;
    hold('b', 400);
    assert.equal(resident.limit, 1000, 'never more than the bound');
  });

  test('when the process grows past 85% of the bound the holdings give that growth back, and take room again as it frees', () => {
    let rss = 0;
    let now = 0;
    const released: string[] = [];
    const resident = new ResidentBytes({ maxBytes: 1000, rss: () => rss, now: () => now });
    const hold = (key: string, bytes: number) => resident.hold(key, bytes, () => released.push(key));
    hold('a', 400);
    now += 1000;
    hold('b', 400);
    rss = 1050;
    now += 1000;
    hold('c', 100);
    assert.equal(resident.limit, 600, 'the 200 bytes over the aim of 850 are given back from the 800 held');
    assert.deepEqual(released, ['a']);
    assert.equal(resident.bytes, 500);
    rss = 0;
    now += 10;
    hold('c', 100);
    assert.equal(resident.limit, 600, 'the resident set is read once a second at most');
    rss = 500;
    now += 1000;
    hold('c', 100);
    assert.equal(resident.limit, 775, 'half the free room comes back');
    rss = 5000;
    now += 1000;
    assert.equal(hold('d', 1), true);
    assert.equal(resident.limit, 100, 'a process far over its bound keeps a tenth of it, no more');
    assert.equal(resident.bytes, 1);
    assert.equal(hold('e', 101), false);
  });

  test('a process over its aim from its first reading keeps a tenth of the bound', () => {
    const resident = new ResidentBytes({ maxBytes: 1000, rss: () => 2000 });
    assert.equal(
      resident.hold('a', 100, () => {}),
      true,
    );
    assert.equal(resident.limit, 100);
    assert.equal(
      resident.hold('b', 1, () => {}),
      true,
    );
    assert.equal(resident.bytes, 1, 'the least recently used made room');
  });

  test('a holding that grows while the process is over its aim gives back only the growth', () => {
    let rss = 0;
    let now = 0;
    const released: string[] = [];
    const resident = new ResidentBytes({ maxBytes: 1000, rss: () => rss, now: () => now });
    const hold = (key: string, bytes: number) => resident.hold(key, bytes, () => released.push(key));
    hold('k', 400);
    now += 1000;
    hold('o', 400);
    rss = 1050;
    now += 1000;
    assert.ok(hold('k', 410), 'a commit grows a history');
    assert.equal(resident.limit, 600);
    assert.deepEqual(released, ['o']);
    assert.equal(resident.bytes, 410);
    now += 1000;
    hold('k', 420);
    assert.equal(resident.limit, 600, 'an excess that lasts is not given back twice');
    rss = 1100;
    now += 1000;
    hold('k', 420);
    assert.equal(resident.limit, 370, 'growth beyond the last reading is');
  });

  test('forgetting a key frees its bytes without calling its release', () => {
    const resident = new ResidentBytes({ maxBytes: 100, rss: null });
    resident.hold('a', 50, () => assert.fail('released'));
    resident.forget('a');
    resident.forget('unknown');
    assert.equal(resident.bytes, 0);
  });

  test('a history used more recently takes the place of cached files, and files take the place of a history', async () => {
    const resident = new ResidentBytes({ maxBytes: 10_000, rss: null });
    const files = new FileCache(10_000, resident);
    files.set('t1', 'a', Buffer.alloc(4000));
    files.set('t1', 'b', Buffer.alloc(4000));
    const history = new CachedHistory(resident);
    const text = 'x'.repeat(1000);
    const load = loader([message(text)]);
    await history.recent(50, anyChars, load);
    const size = messageBytes(message(text));
    assert.ok(size > 2000 && size < 4000, `a message of 1,000 characters counts ${size} bytes`);
    assert.equal(files.get('t1', 'a'), undefined, 'the least recently used file went');
    assert.ok(files.get('t1', 'b'));
    assert.equal(resident.bytes, 4000 + size);
    assert.equal(files.bytes, 4000);

    files.set('t1', 'c', Buffer.alloc(6000));
    assert.equal(resident.bytes, 10_000, 'the history was the least recently used: b was read after it');
    await history.recent(50, anyChars, load);
    assert.equal(load.calls, 2, 'the history let go is read again');
  });
});

describe('a cached history', () => {
  test('is read once, follows appended messages and keeps the last `limit`', async () => {
    const resident = new ResidentBytes({ maxBytes: 1_000_000, rss: null });
    const history = new CachedHistory(resident);
    const load = loader([message('one'), message('two')]);
    assert.equal((await history.recent(50, anyChars, load)).length, 2);
    history.append([message('three'), message('four')]);
    const kept = await history.recent(3, anyChars, load);
    assert.deepEqual(
      kept.map((m) => m.content[0]?.type === 'text' && m.content[0].text),
      ['two', 'three', 'four'],
    );
    assert.equal(load.calls, 1);
    assert.equal(
      resident.bytes,
      kept.reduce((n, m) => n + messageBytes(m), 0),
      'trimmed messages no longer count',
    );
  });

  test('keeps the newest messages within a number of characters, as the store reads them, the newest always', async () => {
    const history = new CachedHistory(new ResidentBytes({ maxBytes: 1_000_000, rss: null }));
    const load = loader([message('a'.repeat(100)), message('b'.repeat(100))]);
    await history.recent(50, anyChars, load);
    history.append([message('c'.repeat(100))]);
    const text = (m: MessageRecord) => (m.content[0]?.type === 'text' ? m.content[0].text[0] : '');
    // [{"type":"text","text":"…"}] around 100 characters: 127 each, as the store counts them.
    assert.deepEqual((await history.recent(50, 254, load)).map(text), ['b', 'c']);
    assert.deepEqual((await history.recent(50, 253, load)).map(text), ['c']);
    assert.deepEqual((await history.recent(50, 10, load)).map(text), ['c']);
    assert.equal(load.calls, 1);
  });

  test('counts characters as the store does, escapes included', async () => {
    const history = new CachedHistory(new ResidentBytes({ maxBytes: 1_000_000, rss: null }));
    const quoted = message('"\n'.repeat(10));
    assert.equal(JSON.stringify(quoted.content).length, 67, 'twenty characters, each escaped');
    await history.recent(50, anyChars, loader([quoted, message('x'.repeat(40))]));
    assert.equal((await history.recent(50, 67 + 67, loader([]))).length, 2);
    assert.equal((await history.recent(50, 67 + 66, loader([]))).length, 1);
  });

  test('a history read while its actor left memory is not kept', async () => {
    const resident = new ResidentBytes({ maxBytes: 1_000_000, rss: null });
    const history = new CachedHistory(resident);
    let answer: (messages: MessageRecord[]) => void = () => {};
    const reading = history.recent(50, anyChars, () => new Promise((resolve) => (answer = resolve)));
    history.forget();
    answer([message('late')]);
    assert.equal((await reading).length, 1, 'the turn still gets its history');
    assert.equal(resident.bytes, 0);
    history.append([message('after')]);
    assert.equal(resident.bytes, 0);
  });

  test('a history larger than the bound is answered but not kept, and leaves the rest in place', async () => {
    const resident = new ResidentBytes({ maxBytes: 5000, rss: null });
    resident.hold('other', 1000, () => assert.fail('released'));
    const history = new CachedHistory(resident);
    const load = loader([message('y'.repeat(3000))]);
    assert.equal((await history.recent(50, anyChars, load)).length, 1);
    await history.recent(50, anyChars, load);
    assert.equal(load.calls, 2);
    assert.equal(resident.bytes, 1000);
  });

  test('appending beyond the bound lets the history go rather than break it', async () => {
    const resident = new ResidentBytes({ maxBytes: 5000, rss: null });
    const history = new CachedHistory(resident);
    const load = loader([message('a')]);
    await history.recent(50, anyChars, load);
    history.append([message('z'.repeat(3000))]);
    assert.equal(resident.bytes, 0);
    await history.recent(50, anyChars, load);
    assert.equal(load.calls, 2, 'read again from the store, which has every message');
  });

  test('forgotten with its actor, it frees its bytes', async () => {
    const resident = new ResidentBytes({ maxBytes: 1_000_000, rss: null });
    const history = new CachedHistory(resident);
    await history.recent(50, anyChars, loader([message('one')]));
    assert.ok(resident.bytes > 0);
    history.forget();
    assert.equal(resident.bytes, 0);
  });
});

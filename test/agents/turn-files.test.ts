// The files a turn sends the model (docs/internals/decisions.md#files-a-turn-sends): newest first within
// PARLEY_MAX_TURN_FILE_BYTES, older ones as a placeholder line and never read; bytes kept in a per-process
// cache bounded by PARLEY_FILE_CACHE_BYTES, so a later turn does not read them again. Reads are counted by
// wrapping the real store's method.
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { FileCache } from '../../src/agents/file-cache.ts';
import { toModelMessages } from '../../src/agents/model-messages.ts';
import type { ModelPart } from '../../src/agents/provider.ts';
import { loadConfig } from '../../src/config.ts';
import { ResidentBytes } from '../../src/resident-bytes.ts';
import type { ContentBlock, MessageRecord } from '../../src/store/store.ts';
import type { TestApp } from '../helpers/app.ts';
import { createSession, send, upload, useSessionApp } from '../helpers/sessions.ts';

const budget = 2500;
/** Resident bytes that never take a file back: these tests are about the cache's own bound. */
const unbounded = () => new ResidentBytes({ maxBytes: Number.MAX_SAFE_INTEGER, rss: null });
/** The ids of the files read from the store, in order, since the last test began. */
const reads: string[] = [];

/** Counts the store's file reads; the app reads through the same store object. */
async function countReads(t: TestApp) {
  const read = t.store.readFileContent.bind(t.store);
  t.store.readFileContent = async (tenantId, id) => {
    reads.push(id);
    return read(tenantId, id);
  };
}

const t = useSessionApp({
  env: { PARLEY_MAX_TURN_FILE_BYTES: String(budget), PARLEY_FILE_CACHE_BYTES: '4000' },
  setUp: countReads,
});
beforeEach(() => {
  reads.length = 0;
});

const textFile = (bytes: number) => upload(t, Buffer.alloc(bytes, 'a'), 'notes.txt', 'text/plain');

const fileBlock = (file_id: string): ContentBlock => ({ type: 'file', file_id });
const message = (role: 'user' | 'assistant', ...content: ContentBlock[]): MessageRecord => ({
  id: `msg_${Math.random().toString(36).slice(2)}`,
  session_id: 'ses_test',
  role,
  content,
  metadata: null,
  created_at: new Date().toISOString(),
  turn_id: null,
  stop_reason: null,
  usage: null,
  tool_calls: null,
  author: null,
});

/** Sends `text` with the files in a new session of the app; returns the session and the scripted reply. */
async function sendFiles(text: string, ...fileIds: string[]) {
  const session = await createSession(t);
  const res = await send(t, session.id, { content: [{ type: 'text', text }, ...fileIds.map(fileBlock)] });
  assert.equal(res.statusCode, 201, res.body);
  return { sessionId: session.id, reply: String(res.json().agent_message.content[0].text) };
}

/** What the model sees of a part: its text, or its kind and size. */
const seen = (part: ModelPart) => (part.type === 'text' ? part.text : `${part.type} ${part.data.length}`);

describe('a history with more file bytes than the turn budget', () => {
  test('sends the newest files that fit, each once, and a placeholder for every older one, never reading those', async () => {
    const [oldSmall, oldLarge, recent, newest] = [
      await textFile(10),
      await textFile(1000),
      await textFile(1000),
      await textFile(1000),
    ];
    const history = [
      message('user', fileBlock(oldSmall), fileBlock(oldLarge)),
      message('assistant', { type: 'text', text: 'Two files.' }),
      message('user', fileBlock(recent), fileBlock(newest)),
      message('user', { type: 'text', text: 'And again:' }, fileBlock(newest)),
    ];
    const messages = await toModelMessages(t.store, 't1', history, {
      cache: new FileCache(10_000, unbounded()),
      budgetBytes: budget,
    });
    const leftOut = (id: string) =>
      `[file ${id} is left out: a turn attaches a limited size of files, the newest first]`;
    assert.deepEqual(
      messages.map((m) => m.content.map(seen)),
      [
        // 1000 + 1000 bytes fit 2500; the next 1000 does not, and the 10 bytes older than it are left out too.
        [leftOut(oldSmall), leftOut(oldLarge)],
        ['Two files.'],
        ['file 1000', 'file 1000'],
        ['And again:', 'file 1000'],
      ],
    );
    assert.deepEqual(reads, [newest, recent]);
  });

  test('a turn of the app sends a placeholder for what is over PARLEY_MAX_TURN_FILE_BYTES and does not read it', async () => {
    const [older, newer] = [await textFile(2000), await textFile(1000)];
    const { reply } = await sendFiles('Look:', older, newer);
    assert.match(reply, new RegExp(`\\[file ${older} is left out: [^\\]]*\\]`));
    assert.match(reply, /Attachments: 1\./);
    assert.deepEqual(reads, [newer]);
  });
});

describe('the file cache', () => {
  test('a second turn reads none of the files the first one read', async () => {
    const [one, two] = [await textFile(100), await textFile(200)];
    const { sessionId, reply } = await sendFiles('Two notes.', one, two);
    assert.match(reply, /Attachments: 2\./);
    assert.deepEqual(reads.toSorted(), [one, two].toSorted());

    reads.length = 0;
    const second = await send(t, sessionId, { content: 'What did they say?' });
    assert.equal(second.statusCode, 201, second.body);
    assert.deepEqual(reads, [], 'the second turn read files again');
  });

  test('never holds more than its bound: the least recently used go first, a file larger than the bound is not kept', () => {
    const cache = new FileCache(2500, unbounded());
    const bytes = (n: number) => Buffer.alloc(n);
    cache.set('t1', 'a', bytes(1000));
    cache.set('t1', 'b', bytes(1000));
    assert.ok(cache.get('t1', 'a'), 'a is used again, so b is now the least recently used');
    cache.set('t1', 'c', bytes(1000));
    assert.equal(cache.bytes, 2000);
    assert.deepEqual(
      ['a', 'b', 'c'].map((id) => cache.get('t1', id) !== undefined),
      [true, false, true],
    );
    cache.set('t1', 'huge', bytes(2501));
    assert.equal(cache.get('t1', 'huge'), undefined);
    assert.equal(cache.bytes, 2000);
    assert.equal(cache.get('t2', 'a'), undefined, 'another tenant does not see the entry');
  });

  test('across turns holding more file bytes than its bound, it stays within the bound', async () => {
    const cache = new FileCache(1500, unbounded());
    const files = [await textFile(1000), await textFile(1000), await textFile(1000)];
    for (const id of files) {
      await toModelMessages(t.store, 't1', [message('user', fileBlock(id))], { cache, budgetBytes: budget });
      assert.ok(cache.bytes <= 1500, `${cache.bytes} bytes cached`);
    }
    assert.equal(cache.bytes, 1000);
  });

  test('a cached file deleted since is no longer available, and leaves the cache', async () => {
    const cache = new FileCache(10_000, unbounded());
    const id = await textFile(100);
    const history = [message('user', fileBlock(id))];
    await toModelMessages(t.store, 't1', history, { cache, budgetBytes: budget });
    assert.equal(cache.bytes, 100);
    assert.ok(await t.store.deleteFile('t1', id));
    const [again] = await toModelMessages(t.store, 't1', history, { cache, budgetBytes: budget });
    assert.deepEqual(again?.content, [{ type: 'text', text: `[file ${id} is no longer available]` }]);
    assert.equal(cache.bytes, 0);
  });
});

test('by default a turn sends up to 32 MiB of files and a process caches up to 64 MiB', () => {
  assert.deepEqual(loadConfig({}).turnFiles, { budgetBytes: 32 * 1024 * 1024, cacheBytes: 64 * 1024 * 1024 });
});

// Idempotency-Key inside the actor layer: a send reads its key's record once, and a retry whose lookup
// raced the end of its first attempt is answered with that attempt's reply rather than a second one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from '../helpers/app.ts';
import { allMessages, createSession, send, sleep, useSessionApp } from '../helpers/sessions.ts';

const t = useSessionApp();

/** Counts the reads of Idempotency-Key records; `hold` is called inside each read, after it read. */
function watchKeyReads(app: TestApp, hold: () => Promise<unknown> = async () => {}) {
  const { store } = app;
  const read = store.getIdempotencyRecord.bind(store);
  const watch = {
    reads: 0,
    restore() {
      store.getIdempotencyRecord = read;
    },
  };
  store.getIdempotencyRecord = async (sessionId, key) => {
    watch.reads++;
    const record = await read(sessionId, key);
    await hold();
    return record;
  };
  return watch;
}

describe('Idempotency-Key in the session actor', () => {
  it('reads the key record once per send: a first use, then its replay', async () => {
    const s = await createSession(t);
    const watch = watchKeyReads(t);
    try {
      const first = await send(t, s.id, { content: 'once' }, { 'idempotency-key': 'k-once' });
      assert.equal(first.statusCode, 201, first.body);
      assert.equal(watch.reads, 1);
      const replay = await send(t, s.id, { content: 'once' }, { 'idempotency-key': 'k-once' });
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(watch.reads, 2);
      const next = await send(t, s.id, { content: 'twice' }, { 'idempotency-key': 'k-twice' });
      assert.equal(next.statusCode, 201, next.body);
      assert.equal(watch.reads, 3);
    } finally {
      watch.restore();
    }
  });

  it('replays, not repeats, a first attempt that finished between the retry’s lookup and its submission', async () => {
    const s = await createSession(t, 'slow');
    const headers = { 'idempotency-key': 'k-race' };
    let first: Promise<LightMyRequestResponse> | undefined;
    let holding = false;
    // The retry's lookup returns only once the first attempt has answered: too late to join it.
    const watch = watchKeyReads(t, async () => {
      if (!holding) return;
      holding = false;
      await first;
    });
    try {
      first = send(t, s.id, { content: 'a question' }, headers);
      while ((await allMessages(t, s.id)).length === 0) await sleep(2);
      holding = true;
      const retry = await send(t, s.id, { content: 'a question' }, headers);
      const answered = await first;
      assert.equal(answered.statusCode, 201, answered.body);
      assert.equal(retry.statusCode, 201, retry.body);
      assert.equal(retry.headers['idempotent-replayed'], 'true');
      assert.deepEqual(retry.json().agent_message, answered.json().agent_message);
      assert.deepEqual(
        (await allMessages(t, s.id)).map((m) => m.role),
        ['user', 'assistant'],
      );
    } finally {
      watch.restore();
    }
  });
});

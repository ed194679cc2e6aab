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

  /**
   * Holds the first attempt's keyed commit (the one `gate` picks) in flight, lets the retry's lookup read
   * the record as it stood before it, then lets the first attempt finish before that lookup returns: the
   * retry reaches the actor after the first attempt, with a lookup that is stale though no commit began
   * after it was read.
   */
  async function retryDuringKeyedCommit(
    sessionId: string,
    body: Record<string, unknown>,
    gate: (write: { idempotency?: unknown; idempotencyResponse?: unknown }) => boolean,
  ) {
    const { store } = t;
    const commit = store.commitSession.bind(store);
    const headers = { 'idempotency-key': `k-${gate.name}` };
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inFlight: () => void = () => {};
    const commitInFlight = new Promise<void>((resolve) => {
      inFlight = resolve;
    });
    let gated = false;
    store.commitSession = async (write) => {
      if (!gated && gate(write)) {
        gated = true;
        inFlight();
        await released;
      }
      return commit(write);
    };
    let first: Promise<LightMyRequestResponse> | undefined;
    let holding = false;
    const watch = watchKeyReads(t, async () => {
      if (!holding) return;
      holding = false;
      release();
      await first;
    });
    try {
      first = send(t, sessionId, body, headers);
      await commitInFlight;
      holding = true;
      const retry = await send(t, sessionId, body, headers);
      return { first: await first, retry };
    } finally {
      store.commitSession = commit;
      watch.restore();
    }
  }

  it('replays a first attempt whose reply was being committed while the retry read its key', async () => {
    const s = await createSession(t);
    const { first, retry } = await retryDuringKeyedCommit(
      s.id,
      { content: 'a question' },
      function replyCommit(write) {
        return write.idempotencyResponse !== undefined;
      },
    );
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.json().agent_message, first.json().agent_message);
    assert.deepEqual(
      (await allMessages(t, s.id)).map((m) => m.role),
      ['user', 'assistant'],
    );
  });

  it('stores an authored reply once when its retry read the key while it was being committed', async () => {
    const s = await createSession(t);
    const { first, retry } = await retryDuringKeyedCommit(
      s.id,
      { content: 'a hand-off', role: 'assistant' },
      function keyCommit(write) {
        return write.idempotency !== undefined;
      },
    );
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(
      (await allMessages(t, s.id)).map((m) => m.role),
      ['assistant'],
    );
  });
});

// The session actor host seen from outside: the per-session turn queue under concurrent sends,
// passivation and re-activation from the store, the LRU cap, idle passivation and expiry sweeps,
// fencing once another process owns a shard, and the runtime metrics.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SHARD_COUNT, shardOf } from '../../src/shards.ts';
import type { TestApp } from '../helpers/app.ts';
import {
  allMessages,
  assertError,
  buildSessionApp,
  client,
  createSession,
  getSession,
  type Message,
  send,
  sleep,
  textOf,
  turn,
  useSessionApp,
} from '../helpers/sessions.ts';

const t = useSessionApp();
const api = client(t);

/** The actor's state and context, as a comparable value. */
async function actorState(app: TestApp, sessionId: string) {
  const entry = await app.app.sessionHost.entry(sessionId);
  assert.ok(entry);
  const snapshot = entry.actor.getSnapshot();
  return { value: snapshot.value, context: snapshot.context, messages_count: entry.session.messages_count };
}

describe('turn queue', () => {
  it('serves 20 concurrent sends one turn at a time: 20 replies, strictly alternating, none lost; busy answers retried', async () => {
    const s = await createSession(t, 'slow');
    const texts = Array.from({ length: 20 }, (_, i) => `message number ${i}`);
    let busy = 0;
    const replies = await Promise.all(
      texts.map(async (text): Promise<Message> => {
        for (;;) {
          const res = await send(t, s.id, { content: text });
          if (res.statusCode === 201) return res.json().agent_message;
          assertError(res, 409, 'session_busy');
          assert.equal(res.headers['retry-after'], '1');
          busy += 1;
          await sleep(Number(res.headers['retry-after']) * 1000);
        }
      }),
    );
    assert.ok(busy > 0, 'at most 8 sends may wait, so some of 20 must have been refused');
    for (const [i, reply] of replies.entries()) {
      assert.equal(textOf(reply), `Hello! You said: "${texts[i]}".`);
    }

    const stored = await allMessages(t, s.id);
    assert.equal(stored.length, 40);
    for (const [i, m] of stored.entries()) {
      assert.equal(m.role, i % 2 === 0 ? 'user' : 'assistant', `message ${i}`);
    }
    for (let i = 0; i < 40; i += 2) {
      const [user, reply] = [stored[i] as Message, stored[i + 1] as Message];
      assert.equal(textOf(reply), `Hello! You said: "${textOf(user)}".`, `turn ${i / 2}`);
    }
    assert.deepEqual(
      stored
        .filter((m) => m.role === 'user')
        .map(textOf)
        .sort(),
      [...texts].sort(),
    );
    assert.deepEqual(
      stored
        .filter((m) => m.role === 'assistant')
        .map((m) => m.id)
        .sort(),
      replies.map((r) => r.id).sort(),
    );
    assert.equal((await getSession(t, s.id)).messages_count, 40);
  });
});

describe('passivation', () => {
  it('drops an idle actor and re-activates it from the store with identical state; a new send works', async () => {
    const host = t.app.sessionHost;
    const s = await createSession(t, 'demo', { context: { k: 'v' } });
    await turn(t, s.id, 'one');
    await turn(t, s.id, 'two');
    const before = await actorState(t, s.id);
    const read = await getSession(t, s.id);
    const resident = host.residentCount;
    assert.equal(host.passivate(s.id), true);
    assert.equal(host.residentCount, resident - 1);
    assert.equal(host.passivate(s.id), false, 'nothing left to passivate');

    assert.deepEqual(await getSession(t, s.id), read);
    assert.deepEqual(await actorState(t, s.id), before);
    assert.equal(host.residentCount, resident);
    assert.equal(textOf(await turn(t, s.id, 'three')), 'Hello! You said: "three". Context: k: "v".');
    assert.equal((await getSession(t, s.id)).messages_count, 6);
  });

  it('replays a finished Idempotency-Key after passivation without a second turn', async () => {
    const host = t.app.sessionHost;
    const s = await createSession(t);
    const first = await send(t, s.id, { content: 'once' }, { 'idempotency-key': 'passive-1' });
    assert.equal(host.passivate(s.id), true);
    const again = await send(t, s.id, { content: 'once' }, { 'idempotency-key': 'passive-1' });
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.json(), first.json());
    assert.equal((await getSession(t, s.id)).messages_count, 2);
  });

  it('keeps a closed session closed, answering terminate with the original closing and refusing sends', async () => {
    const host = t.app.sessionHost;
    const s = await createSession(t);
    await turn(t, s.id, 'bye');
    const closing = await api.post(`/v1/agents/sessions/${s.id}/terminate`, { reason: 'done' });
    assert.equal(closing.statusCode, 200);
    assert.equal(host.passivate(s.id), true);
    const again = await api.post(`/v1/agents/sessions/${s.id}/terminate`, { reason: 'later' });
    assert.equal(again.statusCode, 200);
    assert.deepEqual(again.json(), closing.json());
    assert.equal(host.passivate(s.id), true);
    assertError(await send(t, s.id, { content: 'hello?' }), 409, 'session_closed');
    const read = await getSession(t, s.id);
    assert.equal(read.status, 'closed');
    assert.equal(read.messages_count, 2);
  });

  it('keeps the warned inactivity state across passivation, and a user message clears it', async () => {
    const host = t.app.sessionHost;
    const s = await createSession(t);
    const entry = await host.entry(s.id);
    assert.ok(entry);
    // No route warns yet: warn in memory, then commit a step that keeps the warning (an agent message).
    entry.actor.send({ type: 'WARNED' });
    assert.equal((await send(t, s.id, { role: 'assistant', content: 'Still there?' })).statusCode, 201);
    assert.equal(host.passivate(s.id), true);
    const warned = await host.entry(s.id);
    assert.ok(warned?.actor.getSnapshot().matches({ active: { inactivity: 'warned' } }));
    await turn(t, s.id, 'yes, here');
    assert.equal(host.passivate(s.id), true);
    const cleared = await host.entry(s.id);
    assert.ok(cleared?.actor.getSnapshot().matches({ active: { inactivity: 'none' } }));
  });

  it('does not passivate an actor in the middle of a turn', async () => {
    const host = t.app.sessionHost;
    const s = await createSession(t, 'stally');
    await turn(t, s.id, 'warm up');
    const pending = send(t, s.id, { content: 'hold on [[stall]]' });
    await sleep(50);
    assert.equal(host.passivate(s.id), false);
    assertError(await pending, 504, 'agent_timeout');
    assert.equal(host.passivate(s.id), true);
  });

  it('keeps at most PARLEY_MAX_ACTORS resident actors, and every session stays usable', async () => {
    const capped = await buildSessionApp({ PARLEY_MAX_ACTORS: '2' });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const s = await createSession(capped);
        ids.push(s.id);
        await turn(capped, s.id, `hi ${i}`);
        assert.ok(capped.app.sessionHost.residentCount <= 2, `after session ${i}`);
      }
      for (const id of ids) {
        assert.equal(textOf(await turn(capped, id, 'again')), 'Hello! You said: "again".');
        assert.ok(capped.app.sessionHost.residentCount <= 2);
        assert.equal((await getSession(capped, id)).messages_count, 4);
      }
    } finally {
      await capped.close();
    }
  });

  it('answers a send to a new session while every resident actor is busy at the cap, instead of hanging', {}, async () => {
    const capped = await buildSessionApp({ PARLEY_MAX_ACTORS: '1' });
    try {
      const busy = await createSession(capped, 'stally');
      const fresh = await createSession(capped);
      await turn(capped, busy.id, 'warm up');
      const stalled = send(capped, busy.id, { content: 'hold on [[stall]]' });
      await sleep(30);
      const res = await Promise.race([
        send(capped, fresh.id, { content: 'hello' }),
        sleep(2000).then(() => null),
      ]);
      assert.ok(res, 'the send to the fresh session got no answer within 2 s');
      assert.equal(res.statusCode, 201, res.body);
      await stalled;
    } finally {
      await capped.close();
    }
  });

  it('passivates actors idle for PARLEY_ACTOR_IDLE_SECONDS on a sweep', async () => {
    const idle = await buildSessionApp({ PARLEY_ACTOR_IDLE_SECONDS: '1' });
    try {
      const s = await createSession(idle);
      await turn(idle, s.id, 'hello');
      const host = idle.app.sessionHost;
      assert.equal(host.residentCount, 1);
      await host.sweep();
      assert.equal(host.residentCount, 1, 'not idle long enough yet');
      await sleep(1100);
      await host.sweep();
      assert.equal(host.residentCount, 0);
      assert.equal(textOf(await turn(idle, s.id, 'back')), 'Hello! You said: "back".');
    } finally {
      await idle.close();
    }
  });
});

describe('expiry', () => {
  it('expires due sessions on a sweep, without any request touching them', async () => {
    const key = await t.createKey('sweeper');
    const c = client(t, key);
    const due = await createSession(t, 'short', {}, key);
    const touched = await createSession(t, 'short', {}, key);
    assert.equal((await send(t, touched.id, { content: 'hi' }, {}, key)).statusCode, 201);
    t.app.sessionHost.passivate(touched.id);
    const lasting = await createSession(t, 'demo', {}, key);
    await sleep(1100);
    await t.app.sessionHost.sweep();
    const expired = (await c.get('/v1/agents/sessions?status=expired')).json();
    assert.deepEqual(expired.items.map((x: { id: string }) => x.id).sort(), [due.id, touched.id].sort());
    const active = (await c.get('/v1/agents/sessions?status=active')).json();
    assert.deepEqual(
      active.items.map((x: { id: string }) => x.id),
      [lasting.id],
    );
  });

  it("has the live actor's lifetime equal the stored one after a turn, whose reply's activity arrives with its DONE", async () => {
    const s = await createSession(t);
    await turn(t, s.id, 'how long do I live?');
    const entry = await t.app.sessionHost.entry(s.id);
    const loaded = await t.store.loadSession(s.id);
    assert.ok(entry && loaded?.session.expires_at && loaded.snapshot);
    const live = entry.actor.getSnapshot().context.expiresAt;
    assert.equal(live, Date.parse(loaded.session.expires_at));
    assert.equal(JSON.parse(loaded.snapshot).context.expiresAt, live);
    assert.ok(live > Date.now(), 'the lifetime runs from the reply');
  });

  it("extends a session's life with every activity", async () => {
    const s = await createSession(t, 'short');
    await sleep(600);
    await turn(t, s.id, 'still here');
    await sleep(600);
    await turn(t, s.id, 'and now');
    assert.equal((await getSession(t, s.id)).status, 'active');
  });
});

describe('fencing', () => {
  it('answers 503 shard_moving and changes nothing once another process owns the shard', async () => {
    const s = await createSession(t);
    await turn(t, s.id, 'before');
    const passive = await createSession(t);
    await turn(t, passive.id, 'before');
    t.app.sessionHost.passivate(passive.id);
    const readBefore = [await getSession(t, s.id), await getSession(t, passive.id)];
    await t.store.claimShards('someone-else', [shardOf(s.id), shardOf(passive.id)]);

    for (const id of [s.id, passive.id]) {
      for (let attempt = 0; attempt < 2; attempt++) {
        const res = await send(t, id, { content: 'after' }, { 'idempotency-key': `fenced-${attempt}` });
        assertError(res, 503, 'shard_moving');
        assert.equal(res.headers['retry-after'], '1');
        assert.equal(await t.store.getIdempotencyRecord(id, `fenced-${attempt}`), null);
      }
      const closing = await api.post(`/v1/agents/sessions/${id}/terminate`, {});
      assertError(closing, 503, 'shard_moving');
    }
    assert.deepEqual([await getSession(t, s.id), await getSession(t, passive.id)], readBefore);
    for (const id of [s.id, passive.id]) {
      assert.deepEqual(
        (await allMessages(t, id)).map((m) => [m.role, textOf(m)]),
        [
          ['user', 'before'],
          ['assistant', 'Hello! You said: "before".'],
        ],
      );
    }
  });

  it('refuses to create a session, or run, on a shard it lost, without writing anything', async () => {
    const fenced = await buildSessionApp();
    try {
      const c = client(fenced);
      await createSession(fenced);
      await fenced.store.claimShards(
        'someone-else',
        Array.from({ length: SHARD_COUNT }, (_, i) => i),
      );
      for (const res of [
        await c.post('/v1/agents/demo/sessions', {}),
        await c.post('/v1/agents/demo/sessions', {}),
        await c.post('/v1/agents/demo/run', { messages: [{ content: 'hi' }] }),
      ]) {
        assertError(res, 503, 'shard_moving');
        assert.equal(res.headers['retry-after'], '1');
      }
      assert.equal((await c.get('/v1/agents/sessions')).json().items.length, 1);
    } finally {
      await fenced.close();
    }
  });
});

describe('metrics', () => {
  it('shows turns, activations, resident actors and turn and provider durations after a turn', async () => {
    const s = await createSession(t);
    await turn(t, s.id, 'count me');
    const res = await t.app.inject({ url: '/metrics' });
    assert.equal(res.statusCode, 200);
    const value = (pattern: RegExp) => {
      const match = pattern.exec(res.body);
      assert.ok(match, `${pattern} not in /metrics`);
      return Number(match[1]);
    };
    assert.ok(value(/^parley_turns_total\{outcome="replied"\} (\d+)/m) >= 1);
    assert.ok(value(/^parley_actor_activations_total (\d+)/m) >= 1);
    assert.equal(value(/^parley_actors_resident (\d+)/m), t.app.sessionHost.residentCount);
    assert.ok(value(/^parley_turn_duration_seconds_count (\d+)/m) >= 1);
    assert.ok(value(/^parley_provider_duration_seconds_count\{[^}]*outcome="ok"[^}]*\} (\d+)/m) >= 1);
  });
});

// Resuming a turn's stream (docs/guides/streaming.md#resuming-a-dropped-stream): `GET
// …/turns/{turn_id}/events` after Last-Event-ID or ?after=, on a real listening app, read on the wire with
// the tests' own SSE parser. A stream cut after its third event and resumed tells exactly the rest, live or
// replayed; every event of a finished turn is a place to resume from; a tool turn replays in the order it
// streamed live, in both families; bad event ids and unknown turns are refused before a stream starts.
import assert from 'node:assert/strict';
import { after, describe, type TestContext, test } from 'node:test';
import { Agent, request } from 'undici';
import { openConversation, publicPath } from '../../helpers/conversations.ts';
import { assertError, buildSessionApp, createSession, useSessionApp } from '../../helpers/sessions.ts';
import { placesOf, type SseEvent, StreamReader, seqOf } from '../../helpers/sse.ts';
import { inputValue, recordDirective, startToolReceiver, toolAgent } from '../../helpers/tool-receiver.ts';

const dispatcher = new Agent();
after(() => dispatcher.close());
let base: string;
const t = useSessionApp({
  agents: [
    { id: 'demo', name: 'Demo', instructions: 'Answer briefly.' },
    // 5 ms a word: a turn of forty words is still running when its third event has been read.
    { id: 'slow', scripted: { token_delay_ms: 5 } },
  ],
  setUp: async (app) => {
    base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  },
});

async function open(method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: unknown) {
  const res = await request(`${base}${path}`, {
    method,
    dispatcher,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return new StreamReader(res.statusCode, res.headers, res.body);
}

const events = (session: string) => `/v1/agents/sessions/${session}/turns`;
const longText = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

/** The test app's API key header (known once the app is built). */
const keyHeader = () => ({ 'x-api-key': t.apiKey });

/** A streamed turn of a new session of `agent` on the API-key route, read to its end. */
async function streamedTurn(agent: string, content: string) {
  const session = await createSession(t, agent);
  const live = await (
    await open('POST', `/v1/agents/sessions/${session.id}/messages/stream`, keyHeader(), {
      content,
    })
  ).all();
  return { session, live, turnId: String(live[0]?.data.turn_id) };
}

/** An app of its own whose agent `toolbot` calls a tool receiver, listening, with a session of it. */
async function toolApp(c: TestContext) {
  const receiver = await startToolReceiver(c);
  const app = await buildSessionApp({}, [toolAgent(receiver.url)]);
  c.after(() => app.close());
  const url = await app.app.listen({ port: 0, host: '127.0.0.1' });
  const headers = { 'x-api-key': app.apiKey };
  const created = await request(`${url}/v1/agents/toolbot/sessions`, {
    method: 'POST',
    dispatcher,
    headers: { ...headers, 'content-type': 'application/json' },
    body: '{}',
  });
  const { id } = (await created.body.json()) as { id: string };
  return { app, receiver, url, headers, id };
}

/** Checks that `resumed` tells exactly what `full` tells after `prefix`: nothing again, nothing missing. */
function assertRest(prefix: readonly SseEvent[], resumed: readonly SseEvent[], full: readonly SseEvent[]) {
  const last = seqOf(prefix.at(-1) as SseEvent);
  assert.ok(
    resumed.every((e) => seqOf(e) > last),
    `every resumed event follows ${last}`,
  );
  const seen = placesOf(prefix);
  const rest = placesOf(resumed);
  for (const place of rest.keys()) assert.ok(!seen.has(place), `place ${place} is told once`);
  assert.deepEqual(new Map([...seen, ...rest]), placesOf(full));
  assert.equal(resumed.at(-1)?.event, full.at(-1)?.event, 'the resumed stream ends as the turn did');
}

describe('a stream dropped after its third event', () => {
  test('resumed with Last-Event-ID while the turn runs, it gets exactly the remaining events', async () => {
    const headers = keyHeader();
    const session = await createSession(t, 'slow');
    const first = await open('POST', `/v1/agents/sessions/${session.id}/messages/stream`, headers, {
      content: longText,
    });
    assert.equal(first.status, 200);
    const prefix = (await first.until((e) => e.length >= 3)).slice(0, 3);
    first.body.destroy();
    const turnId = String(prefix[0]?.data.turn_id);
    assert.equal(prefix[0]?.event, 'turn.started');

    const resumed = await open('GET', `${events(session.id)}/${turnId}/events`, {
      ...headers,
      'last-event-id': String(prefix[2]?.id),
    });
    assert.equal(resumed.status, 200);
    assert.match(String(resumed.headers['content-type']), /^text\/event-stream/);
    const rest = await resumed.all();
    const full = await (await open('GET', `${events(session.id)}/${turnId}/events`, headers)).all();
    assert.equal(full[0]?.event, 'turn.started');
    assertRest(prefix, rest, full);
    assert.equal(full.at(-1)?.event, 'turn.completed');
  });
});

describe('a finished turn', () => {
  test('every one of its events is a place to resume from with ?after=, and after the last nothing follows', async () => {
    const headers = keyHeader();
    const { session, live, turnId } = await streamedTurn('demo', 'Hi there');
    for (let i = 0; i < live.length; i++) {
      const id = String(live[i]?.id);
      const res = await open(
        'GET',
        `${events(session.id)}/${turnId}/events?after=${encodeURIComponent(id)}`,
        headers,
      );
      assert.equal(res.status, 200, id);
      const rest = await res.all();
      if (i === live.length - 1) assert.deepEqual(rest, [], 'nothing after the last event');
      else assertRest(live.slice(0, i + 1), rest, live);
    }
  });

  test('without a position it is told whole, as it streamed', async () => {
    const headers = keyHeader();
    const { session, live } = await streamedTurn('demo', 'Once more');
    const replay = await (
      await open('GET', `${events(session.id)}/${String(live[0]?.data.turn_id)}/events`, headers)
    ).all();
    assert.deepEqual(placesOf(replay), placesOf(live));
    assert.deepEqual(
      replay.map((e) => e.id),
      live
        .filter((e) => e.event !== 'message.delta' || e === live.findLast((d) => d.event === 'message.delta'))
        .map((e) => e.id),
      'one delta with the whole text, under the last delta id',
    );
  });
});

describe('a tool turn', () => {
  test('replays in the order it streamed live: step text, tool events, then the rest of the reply', async (c) => {
    const { app, url, headers, id } = await toolApp(c);
    const content = `Two steps: ${recordDirective('a')} ${recordDirective('b')} [[tool@2:record {"value":"c"}]]`;
    const liveRes = await request(`${url}/v1/agents/sessions/${id}/messages/stream`, {
      method: 'POST',
      dispatcher,
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ content }),
    });
    const live = await new StreamReader(liveRes.statusCode, liveRes.headers, liveRes.body).all();
    const names = live.map((e) => e.event);
    assert.equal(names.filter((n) => n === 'tool.started').length, 3, names.join(' '));
    const turnId = String(live[0]?.data.turn_id);
    const replayRes = await request(`${url}/v1/agents/sessions/${id}/turns/${turnId}/events`, {
      dispatcher,
      headers,
    });
    const replay = await new StreamReader(replayRes.statusCode, replayRes.headers, replayRes.body).all();
    assert.deepEqual(placesOf(replay), placesOf(live));
    // From the middle of the tool events too.
    const middle = live.findIndex((e) => e.event === 'tool.completed');
    const restRes = await request(`${url}/v1/agents/sessions/${id}/turns/${turnId}/events`, {
      dispatcher,
      headers: { ...headers, 'last-event-id': String(live[middle]?.id) },
    });
    const rest = await new StreamReader(restRes.statusCode, restRes.headers, restRes.body).all();
    assertRest(live.slice(0, middle + 1), rest, live);

    // The public family, where the agent hides its tools: no tool events, and ids that count none.
    const { conversation, session_token: token } = await openConversation(app, 'toolbot');
    const auth = { authorization: `Bearer ${token}` };
    const pubLive = await (async () => {
      const res = await request(`${url}${publicPath(conversation.id, '/messages/stream')}`, {
        method: 'POST',
        dispatcher,
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ content: `Hidden: ${recordDirective('d')}` }),
      });
      return new StreamReader(res.statusCode, res.headers, res.body).all();
    })();
    assert.ok(pubLive.every((e) => !e.event.startsWith('tool.')));
    const pubTurn = String(pubLive[0]?.data.turn_id);
    const pubReplay = await (async () => {
      const res = await request(`${url}${publicPath(conversation.id, `/turns/${pubTurn}/events`)}`, {
        dispatcher,
        headers: { ...auth, 'last-event-id': String(pubLive[1]?.id) },
      });
      assert.equal(res.statusCode, 200);
      return new StreamReader(res.statusCode, res.headers, res.body).all();
    })();
    assertRest(pubLive.slice(0, 2), pubReplay, pubLive);
  });
});

describe('more than fits a stream buffer', () => {
  test('a turn whose events are larger than 16 KiB replays whole, as an idempotent replay and as a resume', async () => {
    const headers = keyHeader();
    const session = await createSession(t, 'demo');
    const path = `/v1/agents/sessions/${session.id}/messages/stream`;
    const body = { content: 'x'.repeat(20_000) };
    const key = { 'idempotency-key': 'large-1' };
    const live = await (await open('POST', path, { ...headers, ...key }, body)).all();
    assert.equal(live.at(-1)?.event, 'turn.completed');
    const replayed = await (await open('POST', path, { ...headers, ...key }, body)).all();
    // An idempotent replay tells usage null (no model was called now); everything else as it streamed.
    assert.deepEqual(placesOf(replayed.slice(0, -1)), placesOf(live.slice(0, -1)));
    assert.deepEqual(replayed.at(-1), { ...live.at(-1), data: { ...live.at(-1)?.data, usage: null } });
    const turnId = String(live[0]?.data.turn_id);
    const resumed = await (await open('GET', `${events(session.id)}/${turnId}/events`, headers)).all();
    assert.deepEqual(placesOf(resumed), placesOf(live));
  });
});

describe('a failed turn', () => {
  test('resumed on the process that ran it, it ends in its own error, and after that error nothing follows', async () => {
    const headers = keyHeader();
    const { session, live, turnId } = await streamedTurn('demo', '[[fail]]');
    const failed = live.at(-1);
    assert.equal(failed?.event, 'turn.failed');
    const rest = await (
      await open('GET', `${events(session.id)}/${turnId}/events`, {
        ...headers,
        'last-event-id': `${turnId}:0`,
      })
    ).all();
    assert.deepEqual(rest, [failed]);
    const none = await (
      await open('GET', `${events(session.id)}/${turnId}/events`, {
        ...headers,
        'last-event-id': String(failed?.id),
      })
    ).all();
    assert.deepEqual(none, []);
  });
});

describe('a resume of a running turn with nothing new yet', () => {
  test('is answered at once, and follows the turn when it goes on', async (c) => {
    const { receiver, url, headers, id } = await toolApp(c);
    receiver.hold();
    const called = receiver.nextRequest();
    const liveRes = await request(`${url}/v1/agents/sessions/${id}/messages/stream`, {
      method: 'POST',
      dispatcher,
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ content: `Hold on: ${recordDirective('held')}` }),
    });
    const live = new StreamReader(liveRes.statusCode, liveRes.headers, liveRes.body);
    const seen = await live.until((e) => e.some((x) => x.event === 'tool.started'));
    await called;
    const started = seen.find((e) => e.event === 'tool.started');
    const turnId = String(seen[0]?.data.turn_id);
    // The tool holds its answer: the resumed stream has nothing to send, and still answers now.
    const resumedRes = await request(`${url}/v1/agents/sessions/${id}/turns/${turnId}/events`, {
      dispatcher,
      headers: { ...headers, 'last-event-id': String(started?.id) },
    });
    assert.equal(resumedRes.statusCode, 200);
    const resumed = new StreamReader(resumedRes.statusCode, resumedRes.headers, resumedRes.body);
    await resumed.until(() => resumed.raw.includes(': resumed'));
    receiver.release();
    const rest = await resumed.all();
    const full = await live.all();
    assertRest(
      full.slice(0, full.indexOf(full.find((e) => e.id === started?.id) as SseEvent) + 1),
      rest,
      full,
    );
  });
});

describe('a chat turn (AI SDK)', () => {
  test('resumed as events while it runs, is followed live to its end', async () => {
    const session = await createSession(t, 'slow');
    const res = await request(`${base}/v1/agents/sessions/${session.id}/chat`, {
      method: 'POST',
      dispatcher,
      headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'chat-1',
        trigger: 'submit-message',
        messages: [{ id: 'm-1', role: 'user', parts: [{ type: 'text', text: longText }] }],
      }),
    });
    assert.equal(res.statusCode, 200);
    let raw = '';
    let turnId: string | undefined;
    for await (const chunk of res.body) {
      raw += chunk;
      turnId = /"turn_id":"(turn_[^"]+)"/.exec(raw)?.[1];
      if (turnId) break;
    }
    res.body.destroy();
    assert.ok(turnId, raw);
    const resumed = await (
      await open('GET', `${events(session.id)}/${turnId}/events`, { 'x-api-key': t.apiKey })
    ).all();
    assert.equal(resumed[0]?.event, 'turn.started');
    assert.equal(resumed.at(-1)?.event, 'turn.completed', JSON.stringify(resumed.at(-1)));
  });
});

describe('parallel tool calls answered out of order', () => {
  test('replay their results in the order they were committed and streamed, not in the order they were asked', async (c) => {
    const { receiver, url, headers, id } = await toolApp(c);
    // The first call's answer waits until the three others were answered.
    receiver.hold((r) => inputValue(r.body?.input) === 'a');
    const content = ['a', 'b', 'c', 'd'].map(recordDirective).join(' ');
    const liveRes = await request(`${url}/v1/agents/sessions/${id}/messages/stream`, {
      method: 'POST',
      dispatcher,
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ content }),
    });
    const reader = new StreamReader(liveRes.statusCode, liveRes.headers, liveRes.body);
    await reader.until((e) => e.filter((x) => x.event === 'tool.completed').length === 3);
    receiver.release();
    const live = await reader.all();
    const order = live.filter((e) => e.event === 'tool.completed').map((e) => JSON.stringify(e.data));
    assert.match(order.at(-1) ?? '', /"recorded":"a"/, 'the held call completed last');
    const turnId = String(live[0]?.data.turn_id);
    const replayRes = await request(`${url}/v1/agents/sessions/${id}/turns/${turnId}/events`, {
      dispatcher,
      headers,
    });
    const replay = await new StreamReader(replayRes.statusCode, replayRes.headers, replayRes.body).all();
    assert.deepEqual(placesOf(replay), placesOf(live));
  });
});

describe('refusals before a stream starts', () => {
  test('an unknown turn, or a turn of another session, is 404 turn_not_found', async () => {
    const headers = keyHeader();
    const { session, turnId } = await streamedTurn('demo', 'Hello');
    const other = await createSession(t, 'demo');
    for (const path of [
      `${events(session.id)}/turn_unknown/events`,
      `${events(other.id)}/${turnId}/events`,
    ]) {
      assertError(await t.app.inject({ method: 'GET', url: path, headers }), 404, 'turn_not_found');
    }
  });

  test('an event id that does not name the turn is 422 at the header or the query', async () => {
    const headers = keyHeader();
    const { session, turnId } = await streamedTurn('demo', 'Hello');
    const path = `${events(session.id)}/${turnId}/events`;
    for (const bad of ['turn_other:3', `${turnId}:x`, `${turnId}:-1`, `${turnId}`]) {
      const byHeader = await t.app.inject({
        method: 'GET',
        url: path,
        headers: { ...headers, 'last-event-id': bad },
      });
      assert.equal(byHeader.statusCode, 422, bad);
      assert.deepEqual(byHeader.json().detail[0].loc, ['header', 'last-event-id']);
      const byQuery = await t.app.inject({
        method: 'GET',
        url: `${path}?after=${encodeURIComponent(bad)}`,
        headers,
      });
      assert.equal(byQuery.statusCode, 422, bad);
      assert.deepEqual(byQuery.json().detail[0].loc, ['query', 'after']);
    }
  });
});

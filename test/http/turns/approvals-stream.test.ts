// Approvals as Server-Sent Events (docs/guides/approvals.md): a streamed send that pauses tells its approval
// requests and ends with turn.awaiting_approval; a streamed decision goes on after that pause under the same
// turn's ids; a decision that leaves calls waiting tells the pause again; the turn-events route replays a
// paused turn to its pause and a finished one whole, telling the same events under the same ids as the live
// streams did; a keyed retry of the paused send, and a decision repeated, stream what is stored.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { call, callsOf, pausedTurn, perStore, postgresMissing, turnsOf } from '../../helpers/approvals.ts';
import { assertError, client, createSession } from '../../helpers/sessions.ts';
import { parseSse, placesOf, type SseEvent, seqOf } from '../../helpers/sse.ts';

const pgMissing = await postgresMissing();
const sse = { accept: 'text/event-stream' };

/**
 * The events' places (placesOf), with turn.completed's usage taken out: a replay calls no model, and says so
 * with a null usage.
 */
const places = (events: readonly SseEvent[]) =>
  placesOf(
    events.map((e) => (e.event === 'turn.completed' ? { ...e, data: { ...e.data, usage: null } } : e)),
  );

/** The events' names, deltas in a row told as one. */
const namesOf = (events: readonly SseEvent[]) =>
  events.map((e) => e.event).filter((name, i, all) => name !== 'message.delta' || all[i - 1] !== name);

perStore('approvals streamed', pgMissing, (t) => {
  const streamSend = (sessionId: string, content: string, headers: Record<string, string> = {}) =>
    client(t).post(`/v1/agents/sessions/${sessionId}/messages/stream`, { content }, headers);

  it('a streamed send that pauses tells the approval requests and ends with turn.awaiting_approval', async () => {
    const s = await createSession(t, 'shop');
    const res = await streamSend(s.id, `${call('refund', 'r')} ${call('lookup', 'l')}`);
    assert.equal(res.statusCode, 200, res.body);
    const { events } = parseSse(res.body);
    assert.deepEqual(namesOf(events), [
      'turn.started',
      'message.delta',
      'tool.approval_requested',
      'tool.started',
      'tool.completed',
      'turn.awaiting_approval',
    ]);
    const requested = events.find((e) => e.event === 'tool.approval_requested')?.data as unknown as Record<
      string,
      unknown
    >;
    const awaiting = events.at(-1)?.data as unknown as { turn_id: string; approvals: { call_id: string }[] };
    assert.deepEqual(Object.keys(requested).sort(), [
      'approver',
      'call_id',
      'expires_at',
      'input',
      'tool',
      'turn_id',
    ]);
    assert.equal(requested.call_id, awaiting.approvals[0]?.call_id);
    assert.deepEqual((await turnsOf(t, s.id).session()).json().pending_approvals, awaiting.approvals);
  });

  it('a streamed decision goes on after the pause it decided, and the replayed turn tells the same, place by place', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const first = parseSse(
      (await streamSend(s.id, `${call('refund', 'r')} ${call('lookup', 'l')}`)).body,
    ).events;
    const pause = first.at(-1) as SseEvent;
    const { turn_id, approvals } = pause.data as unknown as {
      turn_id: string;
      approvals: { call_id: string }[];
    };
    const res = await turns.decide(turn_id, [{ call_id: approvals[0]?.call_id, approved: true }], sse);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/event-stream/);
    const second = parseSse(res.body).events;
    assert.deepEqual(namesOf(second), [
      'tool.started',
      'tool.completed',
      'message.delta',
      'message.completed',
      'turn.completed',
    ]);
    assert.equal(seqOf(second[0] as SseEvent), seqOf(pause) + 1, 'the ids go on from the pause');
    assert.equal(callsOf(t.receiver, s.id, 'refund').length, 1);

    const replayed = parseSse((await turns.events(turn_id)).body).events;
    assert.deepEqual(places(replayed), places([...first, ...second]));
    // Resumed after the pause, the same continuation.
    const resumed = parseSse((await turns.events(turn_id, pause.id)).body).events;
    assert.deepEqual(places(resumed), places(second));
    // The decision again: what followed the pause, replayed.
    const again = await turns.decide(turn_id, [{ call_id: approvals[0]?.call_id, approved: true }], sse);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(places(parseSse(again.body).events), places(second));
  });

  it('a streamed decision that leaves calls waiting tells the pause again, listing what still waits', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const first = parseSse(
      (await streamSend(s.id, `${call('refund', 'r')} ${call('email', 'e')}`)).body,
    ).events;
    const pause = first.at(-1) as SseEvent;
    const { turn_id, approvals } = pause.data as unknown as {
      turn_id: string;
      approvals: { call_id: string; tool: string }[];
    };
    const email = approvals.find((a) => a.tool === 'email');
    assert.ok(email);
    const res = await turns.decide(turn_id, [{ call_id: email.call_id, approved: true }], sse);
    const events = parseSse(res.body).events;
    assert.deepEqual(namesOf(events), ['turn.awaiting_approval']);
    assert.equal(events[0]?.id, pause.id);
    const again = events[0]?.data as unknown as { approvals: { tool: string }[] } | undefined;
    const left = again?.approvals.map((a) => a.tool);
    assert.deepEqual(left, ['refund']);
  });

  it('replays a paused turn up to its pause, and nothing after it', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const live = parseSse((await streamSend(s.id, call('refund', 'r'))).body).events;
    const pause = live.at(-1) as SseEvent;
    const replay = parseSse((await turns.events(pause.data.turn_id)).body).events;
    assert.deepEqual(placesOf(replay), placesOf(live));
    const after = await turns.events(pause.data.turn_id, pause.id);
    assert.equal(after.statusCode, 200);
    assert.deepEqual(parseSse(after.body).events, []);
  });

  it('streams a keyed retry of the paused send as the stored turn, to its pause', async () => {
    const s = await createSession(t, 'shop');
    const key = { 'idempotency-key': 'k-stream-paused' };
    const live = parseSse((await streamSend(s.id, call('refund', 'r'), key)).body).events;
    const retry = await streamSend(s.id, call('refund', 'r'), key);
    assert.equal(retry.statusCode, 200, retry.body);
    assert.deepEqual(placesOf(parseSse(retry.body).events), placesOf(live));
    assert.equal(callsOf(t.receiver, s.id).length, 0);
  });

  it('a streamed decision whose turn waits again ends with the new pause', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(`${call('refund', 'a')} ${call('email', 'b', 2)}`));
    const res = await turns.decide(turn.id, [{ call_id: turn.approvals[0]?.call_id, approved: true }], sse);
    const events = parseSse(res.body).events;
    assert.deepEqual(namesOf(events), [
      'tool.started',
      'tool.completed',
      'message.delta',
      'tool.approval_requested',
      'turn.awaiting_approval',
    ]);
  });

  it('answers a refused streamed decision as JSON, before any event', async () => {
    const s = await createSession(t, 'shop');
    const turn = pausedTurn(await turnsOf(t, s.id).send(call('refund', 'r')));
    const res = await turnsOf(t, s.id).decide(turn.id, [{ call_id: 'call_nope', approved: true }], sse);
    assertError(res, 409, 'approval_not_pending');
  });
});

// Cancel over HTTP (docs/guides/approvals.md#cancel), on SQLite and PostgreSQL: a running turn's model call is
// aborted and what it wrote so far is its reply (stop_reason cancelled), its stream ends with turn.cancelled,
// a send's own caller gets that reply; a tool call in flight finishes and is kept, and the model is not asked
// again; cancelling a finished turn answers it as it is; an unknown turn is 404.
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Agent, request } from 'undici';
import { call, callsOf, pausedTurn, perStore, postgresMissing, turnsOf } from '../../helpers/approvals.ts';
import { assertError, client, createSession, textOf } from '../../helpers/sessions.ts';
import { StreamReader } from '../../helpers/sse.ts';
import { waitFor } from '../../helpers/wait.ts';

const pgMissing = await postgresMissing();
const dispatcher = new Agent();
after(() => dispatcher.close());

/** A long message: the slow agent echoes it a word every 25 ms, several seconds in all. */
const longText = `Please tell me a long story: ${'about the sea and the ships that sail on it '.repeat(12)}`;

const bases = new WeakMap<FastifyInstance, string>();
async function baseOf(app: FastifyInstance): Promise<string> {
  const known = bases.get(app);
  if (known) return known;
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  bases.set(app, base);
  return base;
}

perStore('cancelling a turn', pgMissing, (t) => {
  /** A streamed send over a listening socket, read as it comes. */
  async function stream(sessionId: string, content: string): Promise<StreamReader> {
    const res = await request(`${await baseOf(t.app)}/v1/agents/sessions/${sessionId}/messages/stream`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', 'x-api-key': t.apiKey },
      body: JSON.stringify({ content }),
    });
    return new StreamReader(res.statusCode, res.headers, res.body);
  }

  it('stops a streamed turn: the text so far is its reply, and its stream ends with turn.cancelled', async () => {
    const s = await createSession(t, 'shop-slow');
    const reader = await stream(s.id, longText);
    const started = await reader.until((events) => events.some((e) => e.event === 'message.delta'));
    const turnId = started[0]?.data.turn_id ?? '';
    const res = await turnsOf(t, s.id).cancel(turnId);
    assert.equal(res.statusCode, 200, res.body);
    const { agent_message: reply, turn } = res.json();
    assert.deepEqual(turn, { id: turnId, status: 'cancelled', approvals: [] });
    assert.equal(reply.stop_reason, 'cancelled');
    const text = textOf(reply);
    assert.ok(text.length > 0 && text.length < 200, text);
    const events = await reader.all();
    const names = events.map((e) => e.event);
    assert.deepEqual(names.slice(-2), ['message.completed', 'turn.cancelled']);
    assert.deepEqual(events.at(-2)?.data.message, reply);
    const streamed = events
      .flatMap((e) => (e.event === 'message.delta' ? [e.data.delta?.text ?? ''] : []))
      .join('');
    assert.equal(streamed, text, 'the reply is what the stream told');
    // Stored as it was answered; the session takes turns again; a second cancel changes nothing.
    const messages = (await client(t).get(`/v1/agents/sessions/${s.id}/messages`)).json().items;
    assert.deepEqual(messages.at(-1), reply);
    const again = await turnsOf(t, s.id).cancel(turnId);
    assert.deepEqual(again.json(), res.json());
    assert.equal((await turnsOf(t, s.id).send('short')).statusCode, 201);
  });

  it("answers the send's own caller with the cancelled reply", async () => {
    const s = await createSession(t, 'shop-slow');
    const sending = turnsOf(t, s.id).send(longText);
    let turnId: string | undefined;
    // The turn's id is the user message's, once stored (the store shows it; the routes do not).
    await waitFor('the turn started', async () => {
      turnId = (await t.store.recentMessages(s.id, 1, 1_000_000))[0]?.turn_id ?? undefined;
      return turnId !== undefined;
    });
    const res = await turnsOf(t, s.id).cancel(turnId ?? '');
    const sent = await sending;
    assert.equal(sent.statusCode, 201, sent.body);
    assert.equal(sent.json().agent_message.stop_reason, 'cancelled');
    assert.deepEqual(res.json().agent_message, sent.json().agent_message);
  });

  it('lets a tool call in flight finish and keeps its result, then asks the model nothing more', async () => {
    const s = await createSession(t, 'shop-slow');
    const isOurs = (r: { body: { session_id: string } | null }) => r.body?.session_id === s.id;
    t.receiver.hold(isOurs);
    const reader = await stream(s.id, `${call('lookup', 'in-flight')} then more`);
    const inFlight = await t.receiver.nextRequest(isOurs);
    const turnId = inFlight.body?.turn_id ?? '';
    const cancelling = turnsOf(t, s.id).cancel(turnId);
    await waitFor('the cancel reached the turn', () => true);
    t.receiver.release();
    const res = await cancelling;
    assert.equal(res.statusCode, 200, res.body);
    const reply = res.json().agent_message;
    assert.equal(reply.stop_reason, 'cancelled');
    assert.deepEqual(
      reply.tool_calls.map((c: { name: string; status: string }) => [c.name, c.status]),
      [['lookup', 'ok']],
    );
    assert.equal(textOf(reply), 'Let me use lookup.');
    const names = (await reader.all()).map((e) => e.event);
    assert.deepEqual(names.slice(-4), [
      'tool.started',
      'tool.completed',
      'message.completed',
      'turn.cancelled',
    ]);
    assert.equal(callsOf(t.receiver, s.id).length, 1);
  });

  it('ends a paused turn: its waiting calls denied (reason cancelled), never sent', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const turn = pausedTurn(await turns.send(`${call('refund', 'r')} ${call('lookup', 'l')}`));
    const res = await turns.cancel(turn.id);
    assert.equal(res.statusCode, 200, res.body);
    const reply = res.json().agent_message;
    assert.equal(reply.stop_reason, 'cancelled');
    const byName = Object.fromEntries(
      reply.tool_calls.map((c: { name: string; output: unknown }) => [c.name, c.output]),
    );
    assert.deepEqual(byName.refund, { error: 'denied', by: 'operator', reason: 'cancelled' });
    assert.deepEqual(byName.lookup, { recorded: 'l' });
    assert.deepEqual((await turns.session()).json().pending_approvals, []);
    assertError(
      await turns.decide(turn.id, [{ call_id: turn.approvals[0]?.call_id, approved: true }]),
      409,
      'approval_not_pending',
    );
    assert.deepEqual(
      callsOf(t.receiver, s.id).map((r) => r.body?.tool),
      ['lookup'],
    );
  });

  it('answers a finished turn as it is, changing nothing, and an unknown turn 404', async () => {
    const s = await createSession(t, 'shop');
    const turns = turnsOf(t, s.id);
    const sent = await turns.send('hello');
    const turnId = (await t.store.recentMessages(s.id, 1, 1_000_000))[0]?.turn_id ?? '';
    const res = await turns.cancel(turnId);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), {
      agent_message: sent.json().agent_message,
      turn: { id: turnId, status: 'completed', approvals: [] },
    });
    assertError(await turns.cancel('turn_unknown'), 404, 'turn_not_found');
    const stranger = await t.createKey('t3');
    assertError(await turnsOf(t, s.id, stranger).cancel(turnId), 404, 'session_not_found');
  });
});

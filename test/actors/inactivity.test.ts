// Inactivity as a state of the session actor: the warning marks it warned (in memory and in the stored
// snapshot), a user's message clears that, an inactivity step waits behind a running turn, and a closing
// final step leaves a closed snapshot that a restart restores.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openConversation } from '../helpers/conversations.ts';
import { allMessages, sleep, textOf, useSessionApp } from '../helpers/sessions.ts';

const t = useSessionApp();

async function inactivityState(sessionId: string) {
  const entry = await t.app.sessionHost.entry(sessionId);
  assert.ok(entry);
  const value = entry.actor.getSnapshot().value;
  return typeof value === 'object' && 'active' in value ? value.active : value;
}

async function storedInactivity(sessionId: string) {
  const loaded = await t.store.loadSession(sessionId);
  assert.ok(loaded?.snapshot);
  const { value } = JSON.parse(loaded.snapshot);
  return typeof value === 'object' && 'active' in value ? value.active.inactivity : value;
}

describe('inactivity in the session actor', () => {
  it('marks the session warned after a warning and clears it when the user writes again', async () => {
    const c = await openConversation(t);
    assert.equal((await c.pub.post('/inactivity', { step: 'warning' })).statusCode, 200);
    assert.deepEqual(await inactivityState(c.id), { turn: 'idle', inactivity: 'warned' });
    assert.equal(await storedInactivity(c.id), 'warned');

    assert.equal((await c.pub.post('/messages', { content: 'still here' })).statusCode, 201);
    assert.deepEqual(await inactivityState(c.id), { turn: 'idle', inactivity: 'none' });
    assert.equal(await storedInactivity(c.id), 'none');
  });

  it('keeps the warned state across passivation: the stored snapshot is what comes back', async () => {
    const c = await openConversation(t);
    await c.pub.post('/inactivity', { step: 'warning' });
    assert.ok(t.app.sessionHost.passivate(c.id));
    assert.deepEqual(await inactivityState(c.id), { turn: 'idle', inactivity: 'warned' });
  });

  it('runs an inactivity step after the turn in progress, so the warning follows the reply', async () => {
    const c = await openConversation(t, 'slow');
    const sending = c.pub.post('/messages', { content: 'a long question about many things' });
    await sleep(5);
    const warning = await c.pub.post('/inactivity', { step: 'warning' });
    assert.equal(warning.statusCode, 200, warning.body);
    assert.equal((await sending).statusCode, 201);
    const messages = await allMessages(t, c.id);
    assert.deepEqual(
      messages.map((m) => m.role),
      ['user', 'assistant', 'assistant'],
    );
    const warningMessage = messages[2];
    assert.ok(warningMessage);
    assert.equal(textOf(warningMessage), 'Are you still there? This conversation will close soon.');
  });

  it('stores a closed snapshot with the final message, restored closed after passivation', async () => {
    const c = await openConversation(t);
    const res = await c.pub.post('/inactivity', { step: 'final' });
    assert.equal(res.json().conversation_status, 'closed');
    assert.equal(await storedInactivity(c.id), 'closed');
    t.app.sessionHost.passivate(c.id);
    assert.equal(await inactivityState(c.id), 'closed');
    const again = await c.pub.post('/messages', { content: 'hello?' });
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().error.code, 'session_closed');
  });
});

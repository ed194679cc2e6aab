// An expiry found due while a turn runs waits behind the turn; when it comes to run, the turn has moved the
// session's lifetime on, and the session stays active.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allMessages,
  createSession,
  getSession,
  send,
  testAgents,
  useSessionApp,
} from '../helpers/sessions.ts';
import { waitFor } from '../helpers/wait.ts';

const t = useSessionApp({
  agents: [
    ...testAgents,
    /** Lives three seconds after its last activity; a reply of ten words takes longer than that. */
    { id: 'short-drawl', session_ttl: 3, scripted: { token_delay_ms: 400 } },
  ],
});

describe('an expiry behind a turn', () => {
  it('does not expire a session found due while a turn longer than its lifetime ran, once the turn has stored its reply', async () => {
    const s = await createSession(t, 'short-drawl');
    const entry = await t.app.sessionHost.entry(s.id);
    assert.ok(entry);
    const reply = send(t, s.id, { content: 'a b c d e f g h' });
    await waitFor('the turn to start', () =>
      entry.actor.getSnapshot().matches({ active: { turn: 'running' } }),
    );
    // The lifetime the turn's user message gave the session has passed while the model still writes.
    await waitFor('the lifetime to pass', () => Date.now() >= entry.actor.getSnapshot().context.expiresAt);
    assert.ok(
      entry.actor.getSnapshot().matches({ active: { turn: 'running' } }),
      'the turn is still running',
    );
    const expiry = t.app.sessionHost.expireIfDue(s.id);
    assert.equal((await reply).statusCode, 201);
    await expiry;
    assert.equal((await getSession(t, s.id)).status, 'active');
    assert.equal((await allMessages(t, s.id)).length, 2);
  });
});

// Routes declare the session they act on; a route that names one in its path without declaring it is
// refused when it is registered, since in cluster mode it would not be forwarded to the session's owner.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { onConversation, onSession, requireDeclaredSessions } from '../../../src/http/server/route-config.ts';

function appWithCheck() {
  const app = Fastify();
  requireDeclaredSessions(app);
  return app;
}

describe('declared sessions', () => {
  it('refuses a route on :session_id that does not declare config.session', () => {
    const app = appWithCheck();
    assert.throws(
      () => app.get('/v1/agents/sessions/:session_id/notes', async () => ({})),
      /:session_id but does not declare config\.session/,
    );
  });

  it('refuses a route whose declared session is another parameter than the one its path names', () => {
    const app = appWithCheck();
    assert.throws(
      () => app.get('/conversations/:conversation_id/notes', { config: onSession }, async () => ({})),
      /:conversation_id/,
    );
  });

  it('accepts declared routes and routes that name no session', async () => {
    const app = appWithCheck();
    app.get('/v1/agents/sessions/:session_id/notes', { config: onSession }, async () => ({}));
    app.get('/conversations/:conversation_id/notes', { config: onConversation }, async () => ({}));
    app.get('/v1/agents/users/:user_id', async () => ({}));
    await app.ready();
    await app.close();
  });
});

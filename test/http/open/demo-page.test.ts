// What the /demo page says and sets (demo-page.ts): which agent answers and how to try a model, the widget's
// greeting, feedback button and launcher, and POST /demo/conversation, the widget's next conversation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { demoPage } from '../../../src/http/open/demo-page.ts';
import { useTestApp } from '../../helpers/app.ts';
import { publicClient } from '../../helpers/conversations.ts';

/** The attributes of the page's <parley-chat>. */
function chatAttributes(html: string): Record<string, string> {
  const tag = /<parley-chat([^>]*)>/.exec(html)?.[1] ?? '';
  return Object.fromEntries([...tag.matchAll(/([a-z-]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
}

describe('the demo page', () => {
  const t = useTestApp({ env: { PARLEY_DEMO: 'true' } });

  it("says the agent is the built-in scripted one and how to try a model, and sets the widget's extras", async () => {
    const res = await t.app.inject({ url: '/demo' });
    assert.match(res.body, /Parley's built-in scripted one<\/strong>: it repeats what/);
    assert.match(res.body, /<code>PARLEY_DEMO=true<\/code>/);
    const attributes = chatAttributes(res.body);
    assert.equal(attributes.feedback, 'button');
    assert.ok(attributes.greeting);
    assert.doesNotMatch(res.body, /<parley-chat[^>]* launcher/);
    const bubble = await t.app.inject({ url: '/demo?launcher=true' });
    assert.match(bubble.body, /<parley-chat[^>]* launcher open>/);
  });

  it("starts the widget's next conversation with POST /demo/conversation", async () => {
    const res = await t.app.inject({ method: 'POST', url: '/demo/conversation' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['cache-control'], 'no-store');
    const { conversation_id, session_token } = res.json();
    const conversation = await publicClient(t, conversation_id, session_token).get('');
    assert.equal(conversation.json().agent_id, 'demo');
    assert.equal(conversation.json().status, 'active');
  });
});

describe('the demo page on a model', () => {
  it('names the provider every message calls, escaped', () => {
    const html = demoPage(
      { 'conversation-id': 'ses_1', token: 't' },
      { provider: 'openai', launcher: false },
    );
    assert.match(
      html,
      /<code>demo<\/code> agent on\n<code>openai<\/code><\/strong>: every message is a call/,
    );
    assert.doesNotMatch(html, /built-in scripted/);
  });
});

// GET /widget.js (the bundled <parley-chat>, its ETag and CORS), GET /demo and POST /demo/token (PARLEY_DEMO),
// and when the demo is on by default.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { demoKeyCount } from '../../src/http/demo-routes.ts';
import { useTestApp } from '../helpers/app.ts';
import { publicClient, startConversation } from '../helpers/conversations.ts';

/** The attributes of the page's <parley-chat>. */
function chatAttributes(html: string): Record<string, string> {
  const tag = /<parley-chat([^>]*)>/.exec(html)?.[1] ?? '';
  return Object.fromEntries([...tag.matchAll(/([a-z-]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
}

describe('GET /widget.js', () => {
  const t = useTestApp();

  it('serves the bundled element as a module any origin may load, under 30 KB', async () => {
    const res = await t.app.inject({ url: '/widget.js' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(res.headers['access-control-allow-origin'], '*');
    assert.match(String(res.headers.etag), /^"[\w-]+"$/);
    assert.match(res.body, /customElements\.define\("parley-chat"/);
    assert.doesNotMatch(res.body, /from\s*["']@parley\/client["']/, 'the client is bundled in');
    assert.ok(res.body.length < 30 * 1024, `${res.body.length} bytes`);
  });

  it('sends it gzipped to a client that takes gzip, under an ETag of its own', async () => {
    const plain = await t.app.inject({ url: '/widget.js' });
    const res = await t.app.inject({
      url: '/widget.js',
      headers: { 'accept-encoding': 'gzip, deflate, br' },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-encoding'], 'gzip');
    assert.equal(res.headers.vary, 'accept-encoding');
    assert.notEqual(res.headers.etag, plain.headers.etag);
    assert.equal(gunzipSync(res.rawPayload).toString('utf8'), plain.body);
    const refused = await t.app.inject({ url: '/widget.js', headers: { 'accept-encoding': 'gzip;q=0, br' } });
    assert.equal(refused.headers['content-encoding'], undefined);
    assert.equal(refused.body, plain.body);
  });

  it('answers 304 to the ETag it gave, and the same bytes again otherwise', async () => {
    const first = await t.app.inject({ url: '/widget.js' });
    const etag = String(first.headers.etag);
    const again = await t.app.inject({ url: '/widget.js', headers: { 'if-none-match': etag } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    const other = await t.app.inject({ url: '/widget.js', headers: { 'if-none-match': '"other"' } });
    assert.equal(other.statusCode, 200);
    assert.equal(other.body, first.body);
  });
});

describe('GET /demo', () => {
  const t = useTestApp({ env: { PARLEY_DEMO: 'true' } });

  it('mints a new conversation of the demo tenant and its token at each load', async () => {
    const [a, b] = await Promise.all([t.app.inject({ url: '/demo' }), t.app.inject({ url: '/demo' })]);
    assert.equal(a.statusCode, 200);
    assert.equal(a.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(a.headers['cache-control'], 'no-store');
    assert.match(a.body, /<script type="module" src="\/widget\.js"><\/script>/);
    const first = chatAttributes(a.body);
    const second = chatAttributes(b.body);
    assert.ok(first['conversation-id'] && first.token);
    assert.notEqual(first['conversation-id'], second['conversation-id']);
    const conversation = await publicClient(t, first['conversation-id'], first.token).get('');
    assert.equal(conversation.statusCode, 200);
    assert.equal(conversation.json().agent_id, 'demo');
    assert.equal((await t.store.getSession('demo', first['conversation-id']))?.agent_id, 'demo');
    // One signing key for every page, of the demo agent only, which the start-up warning does not count.
    const keys = await t.store.listApiKeys('demo');
    assert.deepEqual(
      keys.map((k) => [k.prefix, k.agents]),
      [['(demo page)', ['demo']]],
    );
    assert.equal(await demoKeyCount(t.store), 1);
  });

  it('passes the inactivity delays of its query to the element', async () => {
    const res = await t.app.inject({ url: '/demo?inactivity_warning_after=30&inactivity_final_after=60' });
    const attributes = chatAttributes(res.body);
    assert.equal(attributes['inactivity-warning-after'], '30');
    assert.equal(attributes['inactivity-final-after'], '60');
    assert.equal((await t.app.inject({ url: '/demo?inactivity_final_after=-1' })).statusCode, 422);
  });

  it('refreshes the token of a demo conversation, and of no other tenant', async () => {
    const page = chatAttributes((await t.app.inject({ url: '/demo' })).body);
    const id = page['conversation-id'] ?? '';
    const res = await t.app.inject({ method: 'POST', url: '/demo/token', payload: { conversation_id: id } });
    assert.equal(res.statusCode, 200);
    const { session_token } = res.json();
    assert.equal((await publicClient(t, id, session_token).get('')).statusCode, 200);

    const other = await startConversation(t);
    const refused = await t.app.inject({
      method: 'POST',
      url: '/demo/token',
      payload: { conversation_id: other.conversation.id },
    });
    assert.equal(refused.statusCode, 404);
    assert.equal(refused.json().error.code, 'conversation_not_found');
  });

  it('keeps its routes out of the OpenAPI document', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    for (const path of ['/demo', '/demo/token', '/widget.js']) assert.equal(doc.paths[path], undefined, path);
  });
});

describe('PARLEY_DEMO off', () => {
  const t = useTestApp({ env: { PARLEY_DEMO: 'false' } });

  it('serves no demo page, and the widget still', async () => {
    assert.equal((await t.app.inject({ url: '/demo' })).statusCode, 404);
    assert.equal((await t.app.inject({ method: 'POST', url: '/demo/token', payload: {} })).statusCode, 404);
    assert.equal((await t.app.inject({ url: '/widget.js' })).statusCode, 200);
  });
});

describe('PARLEY_DEMO', () => {
  it('is on for one SQLite process and off with DATABASE_URL or REDIS_URL, unless set', () => {
    const redis = { REDIS_URL: 'redis://127.0.0.1:6379', PARLEY_NODE_URL: 'http://127.0.0.1:3001' };
    const postgres = { DATABASE_URL: 'postgres://127.0.0.1/parley' };
    assert.equal(loadConfig({}).demo, true);
    assert.equal(loadConfig(postgres).demo, false);
    assert.equal(loadConfig(redis).demo, false);
    assert.equal(loadConfig({ ...postgres, PARLEY_DEMO: 'true' }).demo, true);
    assert.equal(loadConfig({ PARLEY_DEMO: 'false' }).demo, false);
    assert.equal(loadConfig({ PARLEY_DEMO: ' ' }).demo, true);
    assert.throws(
      () => loadConfig({ PARLEY_DEMO: 'yes' }),
      (err) => err instanceof ConfigError && /PARLEY_DEMO/.test(err.message),
    );
  });
});

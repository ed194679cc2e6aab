// GET /demo and POST /demo/token: the page and its headers, the demo key made once, the token refresh that
// takes the conversation's newest token, the limits per address and across every client (a page for a
// browser), and when the page is served: by default only on loopback with a scripted `demo` agent.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { buildApp } from '../../../src/app.ts';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import {
  DEMO_PAGES_PER_MINUTE,
  DEMO_TENANT,
  DEMO_TOKENS_PER_MINUTE,
  demoKeyCount,
  ensureDemoKey,
} from '../../../src/http/open/demo.ts';
import { SqliteStore } from '../../../src/store/sqlite/store.ts';
import type { Store } from '../../../src/store/store.ts';
import { type TestApp, useTestApp } from '../../helpers/app.ts';
import { publicClient, startConversation } from '../../helpers/conversations.ts';
import { killLeftoverChildren, startService, tempDir } from '../../helpers/process.ts';

after(killLeftoverChildren);

/** The attributes of the page's <parley-chat>. */
function chatAttributes(html: string): Record<string, string> {
  const tag = /<parley-chat([^>]*)>/.exec(html)?.[1] ?? '';
  return Object.fromEntries([...tag.matchAll(/([a-z-]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
}

/** Loads the page (from `remoteAddress`) and returns its conversation id and token. */
async function loadPage(t: TestApp, remoteAddress = '127.0.0.1') {
  const res = await t.app.inject({ url: '/demo', remoteAddress });
  assert.equal(res.statusCode, 200, res.body);
  const attributes = chatAttributes(res.body);
  return { id: attributes['conversation-id'] ?? '', token: attributes.token ?? '' };
}

/** POST /demo/token for `id`, showing `token` (none when undefined). */
const refresh = (t: TestApp, id: string, token?: string, remoteAddress = '127.0.0.1') =>
  t.app.inject({
    method: 'POST',
    url: '/demo/token',
    remoteAddress,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    payload: { conversation_id: id },
  });

/** A CSP header as its directives. */
const directives = (csp: unknown) =>
  new Map(
    String(csp)
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name = '', ...sources]) => [name, sources]),
  );

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

  it('sends a CSP that allows only the widget, its own inline blocks, this origin and upload previews', async () => {
    const res = await t.app.inject({ url: '/demo' });
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['referrer-policy'], 'no-referrer');
    const csp = directives(res.headers['content-security-policy']);
    assert.deepEqual(csp.get('default-src'), ["'none'"]);
    assert.deepEqual(csp.get('frame-ancestors'), ["'none'"]);
    assert.deepEqual(csp.get('base-uri'), ["'none'"]);
    assert.deepEqual(csp.get('form-action'), ["'none'"]);
    assert.deepEqual(csp.get('connect-src'), ["'self'"]);
    assert.deepEqual(csp.get('img-src'), ["'self'", 'blob:']);
    // The inline script and style are allowed by their hashes, and are the page's only inline blocks.
    const hashes = (directive: string) => (csp.get(directive) ?? []).filter((s) => s.startsWith("'sha256-"));
    const { createHash } = await import('node:crypto');
    const hashOf = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    const inline = (tag: string) =>
      [...res.body.matchAll(new RegExp(`<${tag}(?![^>]*\\ssrc=)[^>]*>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) =>
        hashOf(m[1] ?? ''),
      );
    assert.deepEqual(inline('script'), hashes('script-src'));
    assert.deepEqual(
      csp.get('script-src')?.filter((s) => !s.startsWith("'sha256-")),
      ["'self'"],
    );
    assert.deepEqual(inline('style'), csp.get('style-src'));
  });

  it('passes the inactivity delays of its query to the element', async () => {
    const res = await t.app.inject({ url: '/demo?inactivity_warning_after=30&inactivity_final_after=60' });
    const attributes = chatAttributes(res.body);
    assert.equal(attributes['inactivity-warning-after'], '30');
    assert.equal(attributes['inactivity-final-after'], '60');
    assert.equal((await t.app.inject({ url: '/demo?inactivity_final_after=-1' })).statusCode, 422);
  });

  it('makes the demo key once when many loads find it revoked at the same time', async () => {
    for (const key of await t.store.listApiKeys(DEMO_TENANT)) await t.store.revokeApiKey(key.id);
    const pages = await Promise.all(
      Array.from({ length: 8 }, (_, i) => t.app.inject({ url: '/demo', remoteAddress: `198.51.100.${i}` })),
    );
    assert.deepEqual(
      pages.map((p) => p.statusCode),
      Array(8).fill(200),
    );
    assert.equal(await demoKeyCount(t.store), 1);
    for (const page of pages) {
      const attributes = chatAttributes(page.body);
      const id = attributes['conversation-id'] ?? '';
      assert.equal((await publicClient(t, id, attributes.token ?? '').get('')).statusCode, 200);
    }
  });

  it('keeps its routes out of the OpenAPI document', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    for (const path of ['/demo', '/demo/token', '/widget.js']) assert.equal(doc.paths[path], undefined, path);
  });
});

describe('POST /demo/token', () => {
  const t = useTestApp({ env: { PARLEY_DEMO: 'true', PARLEY_TOKEN_TTL: '1' } });

  it('refreshes with the newest token only, and the one it gives is the newest from then on', async () => {
    const page = await loadPage(t);
    const first = await refresh(t, page.id, page.token);
    assert.equal(first.statusCode, 200, first.body);
    const next = first.json().session_token;
    assert.equal((await publicClient(t, page.id, next).get('')).statusCode, 200);
    // The page's own token is no longer the newest: it refreshes nothing (it still opens the conversation).
    const stale = await refresh(t, page.id, page.token);
    assert.equal(stale.statusCode, 401);
    assert.equal(stale.json().error.code, 'session_token_invalid');
    assert.equal((await refresh(t, page.id, next)).statusCode, 200);
  });

  it('refuses a request without a token, with a token of another conversation or tenant, or a forged one', async () => {
    const page = await loadPage(t);
    const other = await loadPage(t);
    const none = await refresh(t, page.id);
    assert.equal(none.statusCode, 401);
    assert.equal(none.json().error.code, 'unauthorized');
    const elsewhere = await refresh(t, page.id, other.token);
    assert.equal(elsewhere.statusCode, 403);
    assert.equal(elsewhere.json().error.code, 'forbidden');
    // A conversation of another tenant, with its own token: not the demo's to refresh.
    const started = await startConversation(t);
    const foreign = await refresh(t, started.conversation.id, started.session_token);
    assert.equal(foreign.statusCode, 403);
    const forged = await refresh(t, page.id, `${page.token.slice(0, -4)}AAAA`);
    assert.equal(forged.statusCode, 401);
    assert.equal(forged.json().error.code, 'session_token_invalid');
    // None of those took the page's place: its token still refreshes.
    assert.equal((await refresh(t, page.id, page.token)).statusCode, 200);
  });

  it('refreshes with the newest token after it has expired, the way the page needs it', async () => {
    const page = await loadPage(t);
    const [, claims = ''] = page.token.split('.');
    const { exp } = JSON.parse(Buffer.from(claims, 'base64url').toString());
    // The token's own expiry is the condition (the server checks it to the second).
    while (Date.now() < (exp + 1) * 1000) await new Promise((r) => setTimeout(r, 50));
    assert.equal((await publicClient(t, page.id, page.token).get('')).statusCode, 401);
    assert.equal((await refresh(t, page.id, page.token)).statusCode, 200);
  });

  it('refuses a conversation that is closed, and one that does not exist', async () => {
    const page = await loadPage(t);
    const fresh = (await refresh(t, page.id, page.token)).json().session_token;
    assert.equal((await publicClient(t, page.id, fresh).post('/terminate', {})).statusCode, 200);
    const closed = await refresh(t, page.id, fresh);
    assert.equal(closed.statusCode, 409);
    assert.equal(closed.json().error.code, 'session_closed');
    const gone = await refresh(t, 'ses_unknown', fresh);
    assert.equal(gone.statusCode, 403);
  });
});

describe('the demo routes from one address', () => {
  const t = useTestApp({ env: { PARLEY_DEMO: 'true' } });

  it(`serve ${DEMO_PAGES_PER_MINUTE} pages a minute, then 429 rate_limited with Retry-After and no conversation`, async () => {
    const load = (remoteAddress: string) => t.app.inject({ url: '/demo', remoteAddress });
    for (let i = 0; i < DEMO_PAGES_PER_MINUTE; i++) assert.equal((await load('192.0.2.1')).statusCode, 200);
    const refused = await load('192.0.2.1');
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().error.code, 'rate_limited');
    assert.ok(Number(refused.headers['retry-after']) >= 1, String(refused.headers['retry-after']));
    const stored = await t.store.listSessions(DEMO_TENANT, {}, { limit: 100, offset: 0 });
    assert.equal(stored.items.length, DEMO_PAGES_PER_MINUTE);
    // A browser is shown a page that says so, with the same status and Retry-After, and the page headers.
    const browser = await t.app.inject({
      url: '/demo',
      remoteAddress: '192.0.2.1',
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
    });
    assert.equal(browser.statusCode, 429);
    assert.equal(browser.headers['content-type'], 'text/html; charset=utf-8');
    assert.ok(Number(browser.headers['retry-after']) >= 1);
    assert.match(browser.body, /<h1>The demo is busy<\/h1>/);
    assert.match(browser.body, /Try again in a minute\./);
    assert.equal(browser.headers['x-content-type-options'], 'nosniff');
    assert.deepEqual(directives(browser.headers['content-security-policy']).get('frame-ancestors'), [
      "'none'",
    ]);
    // Another address has a budget of its own.
    assert.equal((await load('192.0.2.2')).statusCode, 200);
  });

  it(`refresh ${DEMO_TOKENS_PER_MINUTE} tokens a minute, then 429 rate_limited with Retry-After`, async () => {
    const page = await loadPage(t, '192.0.2.3');
    const { id } = page;
    let { token } = page;
    for (let i = 0; i < DEMO_TOKENS_PER_MINUTE; i++) {
      const res = await refresh(t, id, token, '192.0.2.4');
      assert.equal(res.statusCode, 200);
      token = res.json().session_token;
    }
    const refused = await refresh(t, id, token, '192.0.2.4');
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().error.code, 'rate_limited');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
  });
});

describe('the conversations every client together starts', () => {
  const t = useTestApp({ env: { PARLEY_DEMO: 'true', PARLEY_DEMO_CONVERSATIONS_PER_HOUR: '3' } });

  it('are at most PARLEY_DEMO_CONVERSATIONS_PER_HOUR an hour, whatever the addresses, then 429 with Retry-After', async () => {
    for (const address of ['192.0.2.20', '192.0.2.21', '192.0.2.22']) await loadPage(t, address);
    const refused = await t.app.inject({ url: '/demo', remoteAddress: '192.0.2.23' });
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().error.code, 'rate_limited');
    assert.deepEqual(
      { ...refused.json().error.context, retry_after_seconds: undefined },
      { cap: 'demo_conversations', limit: 3, window_seconds: 3600, retry_after_seconds: undefined },
    );
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 3600, String(retryAfter));
    assert.equal((await t.store.listSessions(DEMO_TENANT, {}, { limit: 100, offset: 0 })).items.length, 3);
    const browser = await t.app.inject({
      url: '/demo',
      remoteAddress: '192.0.2.24',
      headers: { accept: 'text/html' },
    });
    assert.equal(browser.statusCode, 429);
    assert.match(browser.body, /So many demo conversations were started this hour/);
  });
});

describe('demo conversations past PARLEY_DEMO_RETENTION_SECONDS', () => {
  const t = useTestApp({ env: { PARLEY_DEMO: 'true', PARLEY_DEMO_RETENTION_SECONDS: '1' } });

  it('are deleted by the sweep with their messages and files; other tenants keep theirs', async () => {
    const other = await startConversation(t);
    const page = await loadPage(t);
    const pub = publicClient(t, page.id, page.token);
    assert.equal((await pub.post('/messages', { content: 'Hello' })).statusCode, 201);
    const upload = await pub.upload('some notes', 'notes.txt', 'text/plain');
    assert.equal(upload.statusCode, 201);
    const created = (await t.store.getSession(DEMO_TENANT, page.id))?.created_at ?? '';
    // The retention's own end is the condition (the store's contract tests its bound).
    while (Date.now() <= Date.parse(created) + 1000) await new Promise((r) => setTimeout(r, 50));
    await t.app.sessionHost.sweep();
    assert.equal(await t.store.getSession(DEMO_TENANT, page.id), null);
    assert.equal(await t.store.getFile(DEMO_TENANT, upload.json().id), null);
    assert.equal((await pub.get('')).statusCode, 404);
    assert.ok(await t.store.getSession('t1', other.conversation.id), "another tenant's conversation is kept");
  });
});

describe('two processes on one database', () => {
  const t = useTestApp({ env: { PARLEY_DEMO: 'true' } });
  let second: Awaited<ReturnType<typeof buildApp>> | undefined;
  let secondStore: SqliteStore | undefined;
  after(async () => {
    await second?.close();
    await secondStore?.close();
  });

  it('that make the demo tenant and key at the same time both hand out tokens that work', async () => {
    secondStore = new SqliteStore(join(t.dataDir, 'parley.db'));
    second = await buildApp(
      loadConfig({ PARLEY_DATA_DIR: t.dataDir, LOG_LEVEL: 'silent', PARLEY_DEMO: 'true' }),
      { store: secondStore },
    );
    // Both processes make the demo tenant and key at the same time (each store is one process's connection):
    // one key stands, the oldest, whichever made it.
    const stores = [t.store, secondStore];
    const keys = await Promise.all(
      Array.from({ length: 8 }, (_, i) => ensureDemoKey(stores[i % 2] as Store)),
    );
    assert.equal(new Set(keys).size, 1, 'every process hands out tokens of one key');
    assert.equal((await t.store.listTenants()).filter((x) => x.id === DEMO_TENANT).length, 1);
    // Then pages from each, the first process's before the second starts: one node each (no Redis), the
    // second's start claims every shard and fences the first out.
    const page = (app: typeof second, i: number) =>
      app?.inject({ url: '/demo', remoteAddress: `203.0.113.${i}` });
    const first = await Promise.all([0, 2, 4, 6].map((i) => page(t.app, i)));
    const pages = [...first, ...(await Promise.all([1, 3, 5, 7].map((i) => page(second, i))))];
    for (const page of pages) {
      assert.equal(page?.statusCode, 200);
      const attributes = chatAttributes(page?.body ?? '');
      const id = attributes['conversation-id'] ?? '';
      assert.equal((await publicClient(t, id, attributes.token ?? '').get('')).statusCode, 200);
    }
  });
});

describe('the real service', () => {
  it('listening on 0.0.0.0 without PARLEY_DEMO serves no demo page', async (ctx) => {
    const service = await startService({ dataDir: await tempDir(ctx), env: { HOST: '0.0.0.0' } });
    ctx.after(() => service.stop());
    assert.equal((await fetch(`${service.url}/demo`)).status, 404);
    const started = service.logs().find((r) => String(r.msg).endsWith(' started'));
    assert.equal(started?.demo, undefined, service.stdout());
  });

  it('listening on 127.0.0.1 serves it with its headers, and refreshes only with the newest token', async (ctx) => {
    const service = await startService({ dataDir: await tempDir(ctx) });
    ctx.after(() => service.stop());
    const page = await fetch(`${service.url}/demo`);
    assert.equal(page.status, 200);
    assert.match(String(page.headers.get('content-security-policy')), /frame-ancestors 'none'/);
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    const attributes = chatAttributes(await page.text());
    const tokenOf = (authorization?: string) =>
      fetch(`${service.url}/demo/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ conversation_id: attributes['conversation-id'] }),
      });
    assert.equal((await tokenOf()).status, 401);
    const other = chatAttributes(await (await fetch(`${service.url}/demo`)).text());
    assert.equal((await tokenOf(`Bearer ${other.token}`)).status, 403);
    assert.equal((await tokenOf(`Bearer ${attributes.token}`)).status, 200);
    assert.equal((await tokenOf(`Bearer ${attributes.token}`)).status, 401, 'no longer the newest');
  });

  it('with PARLEY_DEMO=true on 0.0.0.0 serves it, and warns at start that anyone reaching it may use it', async (ctx) => {
    const service = await startService({
      dataDir: await tempDir(ctx),
      env: { HOST: '0.0.0.0', PARLEY_DEMO: 'true', LOG_LEVEL: 'info' },
    });
    ctx.after(() => service.stop());
    assert.equal((await fetch(`${service.url}/demo`)).status, 200);
    const warnings = service
      .logs()
      .filter((r) => r.level === 40 && String(r.msg).includes('PARLEY_DEMO=true'));
    assert.equal(warnings.length, 1, service.stdout());
    assert.match(String(warnings[0]?.msg), /anyone who reaches 0\.0\.0\.0:\d+ may start conversations/);
  });

  it('does not serve it by default when the demo agent calls a model, and warns when told to', async (ctx) => {
    const dataDir = await tempDir(ctx);
    const agents = join(dataDir, 'agents.json');
    const demo = { id: 'demo', provider: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1', model: 'm' };
    await writeFile(agents, JSON.stringify({ agents: [demo] }));
    const byDefault = await startService({ dataDir, env: { PARLEY_AGENTS_FILE: agents } });
    assert.equal((await fetch(`${byDefault.url}/demo`)).status, 404);
    await byDefault.stop();
    const told = await startService({ dataDir, env: { PARLEY_AGENTS_FILE: agents, PARLEY_DEMO: 'true' } });
    ctx.after(() => told.stop());
    assert.equal((await fetch(`${told.url}/demo`)).status, 200);
    const warning = told.logs().find((r) => r.level === 40 && String(r.msg).includes('PARLEY_DEMO=true'));
    assert.match(
      String(warning?.msg),
      /each demo send is a call to the openai-compatible model/,
      told.stdout(),
    );
  });
});

describe('PARLEY_DEMO on, with a catalogue that has no demo agent', () => {
  it('serves nothing under /demo and says so in one warning at start', async (ctx) => {
    const dataDir = await tempDir(ctx);
    const agents = join(dataDir, 'agents.json');
    await writeFile(agents, JSON.stringify({ agents: [{ id: 'support', scripted: {} }] }));
    const service = await startService({
      dataDir,
      env: { PARLEY_AGENTS_FILE: agents, PARLEY_DEMO: 'true', LOG_LEVEL: 'warn' },
    });
    ctx.after(() => service.stop());
    assert.equal((await fetch(`${service.url}/demo`)).status, 404);
    const token = await fetch(`${service.url}/demo/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ conversation_id: 'ses_x' }),
    });
    assert.equal(token.status, 404);
    const warnings = service
      .logs()
      .filter((r) => r.level === 40 && typeof r.msg === 'string' && r.msg.includes('PARLEY_DEMO'));
    assert.equal(warnings.length, 1, service.stdout());
    assert.match(String(warnings[0]?.msg), /no agent "demo"/);
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
  it('defaults to serving only for one SQLite process on loopback; true and false say so whatever else', () => {
    const redis = { REDIS_URL: 'redis://127.0.0.1:6379', PARLEY_NODE_URL: 'http://127.0.0.1:3001' };
    const postgres = { DATABASE_URL: 'postgres://127.0.0.1/parley' };
    const serve = (env: Record<string, string>) => loadConfig(env).demo.serve;
    assert.equal(serve({}), 'default');
    assert.equal(serve({ HOST: 'localhost' }), 'default');
    assert.equal(serve({ HOST: '::1' }), 'default');
    assert.equal(serve({ HOST: '0.0.0.0' }), 'off');
    assert.equal(serve({ HOST: '::' }), 'off');
    assert.equal(serve({ HOST: '192.168.1.20' }), 'off');
    assert.equal(serve(postgres), 'off');
    assert.equal(serve(redis), 'off');
    assert.equal(serve({ ...postgres, PARLEY_DEMO: 'true' }), 'on');
    assert.equal(serve({ HOST: '0.0.0.0', PARLEY_DEMO: 'true' }), 'on');
    assert.equal(serve({ PARLEY_DEMO: 'false' }), 'off');
    assert.equal(serve({ PARLEY_DEMO: ' ' }), 'default');
    assert.throws(
      () => loadConfig({ PARLEY_DEMO: 'yes' }),
      (err) => err instanceof ConfigError && /PARLEY_DEMO/.test(err.message),
    );
  });
});

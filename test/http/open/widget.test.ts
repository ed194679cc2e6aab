// GET /widget.js (the bundled <parley-chat>, its ETag and CORS, a failed build, esbuild's helper process),
// GET /demo and POST /demo/token (PARLEY_DEMO: their rate limits, the demo key made once), and when the demo is
// on by default or has no agent to show.
import assert from 'node:assert/strict';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { buildApp } from '../../../src/app.ts';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import {
  DEMO_PAGES_PER_MINUTE,
  DEMO_TENANT,
  DEMO_TOKENS_PER_MINUTE,
  demoKeyCount,
} from '../../../src/http/open/demo.ts';
import { WIDGET_RETRY_MS, widgetRoutes } from '../../../src/http/open/widget.ts';
import { registerErrorHandling } from '../../../src/http/server/error-handler.ts';
import { SqliteStore } from '../../../src/store/sqlite/store.ts';
import { makeTempDir, useTestApp } from '../../helpers/app.ts';
import { publicClient, startConversation } from '../../helpers/conversations.ts';
import { killLeftoverChildren, startService, tempDir } from '../../helpers/process.ts';

after(killLeftoverChildren);

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
    // The budget of a small embed (about 30 KB today): a framework or a second copy of the client breaks it.
    assert.ok(res.body.length < 40 * 1024, `${res.body.length} bytes`);
  });

  it("exports the client beside the element: every runtime export of @parley/client but ParleyClient (an API key's)", async () => {
    const res = await t.app.inject({ url: '/widget.js' });
    const exported = [...res.body.matchAll(/export\s*\{([^}]*)\}/g)].flatMap((m) =>
      (m[1] ?? '').split(',').map((entry) =>
        entry
          .trim()
          .split(/\s+as\s+/)
          .at(-1),
      ),
    );
    const client = Object.keys(await import('#client')).filter((name) => name !== 'ParleyClient');
    assert.deepEqual(exported.sort(), ['ParleyChat', ...client].sort());
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

  it('compares If-None-Match weakly: W/ before the ETag it gave, in a list, or * is a 304', async () => {
    const etag = String((await t.app.inject({ url: '/widget.js' })).headers.etag);
    for (const known of [`W/${etag}`, `"other", W/${etag}`, '*']) {
      const res = await t.app.inject({ url: '/widget.js', headers: { 'if-none-match': known } });
      assert.equal(res.statusCode, 304, known);
    }
    // The plain representation's tag does not name the gzipped one.
    const gzip = await t.app.inject({
      url: '/widget.js',
      headers: { 'if-none-match': `W/${etag}`, 'accept-encoding': 'gzip' },
    });
    assert.equal(gzip.statusCode, 200);
  });

  it("stops esbuild's helper process once the bundle is built", async () => {
    assert.equal((await t.app.inject({ url: '/widget.js' })).statusCode, 200);
    // The helper is this process's child while a build runs; it goes on its own once stopped.
    await waitFor(async () => (await liveChildren('esbuild')).length === 0, 'the esbuild helper exits');
  });
});

describe('GET /widget.js when the bundle cannot be built', () => {
  it('answers 503 service_unavailable with Retry-After and CORS, and builds again only after that time', async (ctx) => {
    const dir = await makeTempDir('parley-widget-');
    ctx.after(() => rm(dir, { recursive: true, force: true }));
    const entry = join(dir, 'index.ts');
    await writeFile(entry, 'export const broken = ;\n');
    let clock = 1_000_000;
    const app = Fastify({ logger: false }).withTypeProvider<ZodTypeProvider>();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    registerErrorHandling(app);
    await app.register(widgetRoutes, { entry, now: () => clock });
    ctx.after(() => app.close());

    const failed = await app.inject({ url: '/widget.js' });
    assert.equal(failed.statusCode, 503);
    assert.equal(failed.json().error.code, 'service_unavailable');
    assert.equal(failed.headers['retry-after'], String(WIDGET_RETRY_MS / 1000));
    assert.equal(failed.headers['access-control-allow-origin'], '*');
    assert.equal(failed.headers['cache-control'], 'no-store');

    // Mended now, but not built again before the time the 503 gave: still 503, with the time left.
    await writeFile(entry, 'export const mended = "it builds";\n');
    clock += 10_000;
    const early = await app.inject({ url: '/widget.js' });
    assert.equal(early.statusCode, 503);
    assert.equal(early.headers['retry-after'], String(WIDGET_RETRY_MS / 1000 - 10));
    assert.equal(early.headers['access-control-allow-origin'], '*');

    clock += WIDGET_RETRY_MS;
    const built = await app.inject({ url: '/widget.js' });
    assert.equal(built.statusCode, 200);
    assert.match(built.body, /it builds/);
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
    // Another address has a budget of its own.
    assert.equal((await load('192.0.2.2')).statusCode, 200);
  });

  it(`refresh ${DEMO_TOKENS_PER_MINUTE} tokens a minute, then 429 rate_limited with Retry-After`, async () => {
    const page = chatAttributes((await t.app.inject({ url: '/demo', remoteAddress: '192.0.2.3' })).body);
    const refresh = () =>
      t.app.inject({
        method: 'POST',
        url: '/demo/token',
        remoteAddress: '192.0.2.4',
        payload: { conversation_id: page['conversation-id'] },
      });
    for (let i = 0; i < DEMO_TOKENS_PER_MINUTE; i++) assert.equal((await refresh()).statusCode, 200);
    const refused = await refresh();
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().error.code, 'rate_limited');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
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
      {
        store: secondStore,
      },
    );
    const apps = [t.app, second];
    const pages = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        apps[i % 2]?.inject({ url: '/demo', remoteAddress: `203.0.113.${i}` }),
      ),
    );
    assert.equal((await t.store.listTenants()).filter((x) => x.id === DEMO_TENANT).length, 1);
    for (const page of pages) {
      assert.equal(page?.statusCode, 200);
      const attributes = chatAttributes(page?.body ?? '');
      const id = attributes['conversation-id'] ?? '';
      assert.equal((await publicClient(t, id, attributes.token ?? '').get('')).statusCode, 200);
    }
  });
});

describe('PARLEY_DEMO on, with a catalogue that has no demo agent', () => {
  it('serves nothing under /demo and says so in one warning at start', async (ctx) => {
    const dataDir = await tempDir(ctx);
    const agents = join(dataDir, 'agents.json');
    await writeFile(agents, JSON.stringify({ agents: [{ id: 'support', scripted: {} }] }));
    const service = await startService({ dataDir, env: { PARLEY_AGENTS_FILE: agents, LOG_LEVEL: 'warn' } });
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

/** Polls `check` until it holds (10 s at most), for a condition another process brings about. */
async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** This process's children named `name` that are running (not zombies), from /proc. */
async function liveChildren(name: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid …
    const match = /^\d+ \((.*)\) (\S) (\d+)/.exec(stat);
    if (match?.[1] === name && match[2] !== 'Z' && Number(match[3]) === process.pid)
      found.push(Number(entry));
  }
  return found;
}

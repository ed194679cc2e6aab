// GET /widget.js: the bundled <parley-chat>, its ETag and CORS, a failed build, esbuild's helper process. The
// demo page that uses it is tested in demo.test.ts.
import assert from 'node:assert/strict';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { WIDGET_RETRY_MS, widgetRoutes } from '../../../src/http/open/widget.ts';
import { registerErrorHandling } from '../../../src/http/server/error-handler.ts';
import { makeTempDir, useTestApp } from '../../helpers/app.ts';
import { killLeftoverChildren } from '../../helpers/process.ts';

after(killLeftoverChildren);

describe('GET /widget.js', () => {
  const t = useTestApp();

  it('serves the bundled element as a module any origin may load, under 64 KiB and 20 KiB gzipped', async () => {
    const res = await t.app.inject({ url: '/widget.js' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(res.headers['access-control-allow-origin'], '*');
    assert.match(String(res.headers.etag), /^"[\w-]+"$/);
    assert.match(res.body, /customElements\.define\("parley-chat"/);
    assert.doesNotMatch(res.body, /from\s*["']@parley\/client["']/, 'the client is bundled in');
    // The budget of a small embed. What a visitor downloads is the gzipped module: about 18.6 KB (55.7 KB
    // minified) with approvals, Stop, the live conversation stream, Markdown, strings, dark mode and the
    // launcher. The Markdown renderer is our own (some 2 KB, building nodes, never HTML): a full renderer and a
    // sanitiser would not fit, nor would a framework (React and its DOM are some 140 KB minified) or a second
    // copy of the client.
    assert.ok(res.body.length < 64 * 1024, `${res.body.length} bytes`);
    const zipped = gzipSync(res.body).length;
    assert.ok(zipped < 20 * 1024, `${zipped} bytes gzipped`);
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

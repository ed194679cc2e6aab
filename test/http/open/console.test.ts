// GET /console and /console.js: the operator console's page (no inline script or style, a strict policy, no
// secret in it) and its bundled module (the client inside, ETag and gzip, a failed build answered 503). What
// it does in a browser is test/browser/console.test.ts.
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { CONSOLE_CSP, consoleRoutes } from '../../../src/http/open/console.ts';
import { WIDGET_RETRY_MS } from '../../../src/http/open/widget.ts';
import { registerErrorHandling } from '../../../src/http/server/error-handler.ts';
import { makeTempDir, useTestApp } from '../../helpers/app.ts';
import { killLeftoverChildren } from '../../helpers/process.ts';

after(killLeftoverChildren);

describe('GET /console and /console.js', () => {
  const t = useTestApp();

  it('serves the page with a policy that allows only this origin’s module and requests, and no inline code', async () => {
    const res = await t.app.inject({ url: '/console' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(res.headers['content-security-policy'], CONSOLE_CSP);
    assert.equal(
      CONSOLE_CSP,
      "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; script-src 'self'; connect-src 'self'",
    );
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['referrer-policy'], 'no-referrer');
    assert.match(res.body, /<script type="module" src="\/console.js"><\/script>/);
    assert.doesNotMatch(
      res.body,
      /<script>|<script type="module">|<style|\sstyle=|\son\w+=/i,
      'nothing inline',
    );
    assert.doesNotMatch(res.body, /key_|pk_|sk_/, 'no key in the page');
  });

  it('serves the module with the client bundled in, under an ETag, 304 for the same tag', async () => {
    const res = await t.app.inject({ url: '/console.js' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(res.headers['access-control-allow-origin'], undefined, 'for this origin only');
    assert.doesNotMatch(res.body, /from\s*["']@parley\/client["']/);
    assert.match(res.body, /\/v1\/agents\/sessions/);
    const etag = String(res.headers.etag);
    assert.match(etag, /^"[\w-]+"$/);
    const again = await t.app.inject({ url: '/console.js', headers: { 'if-none-match': etag } });
    assert.equal(again.statusCode, 304);
    const zipped = await t.app.inject({ url: '/console.js', headers: { 'accept-encoding': 'gzip' } });
    assert.equal(zipped.headers['content-encoding'], 'gzip');
    assert.notEqual(zipped.headers.etag, etag);
    assert.equal(gunzipSync(zipped.rawPayload).toString('utf8'), res.body);
  });

  it('answers 503 service_unavailable with Retry-After when the module does not build, and builds again after', async (ctx) => {
    const dir = await makeTempDir('parley-console-');
    ctx.after(() => rm(dir, { recursive: true, force: true }));
    const entry = join(dir, 'index.ts');
    await writeFile(entry, 'export const broken = ;\n');
    let clock = 1_000_000;
    const app = Fastify({ logger: false }).withTypeProvider<ZodTypeProvider>();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    registerErrorHandling(app);
    await app.register(consoleRoutes, { entry, now: () => clock });
    ctx.after(() => app.close());

    const failed = await app.inject({ url: '/console.js' });
    assert.equal(failed.statusCode, 503);
    assert.equal(failed.json().error.code, 'service_unavailable');
    assert.equal(failed.headers['retry-after'], String(WIDGET_RETRY_MS / 1000));
    assert.equal(failed.headers['cache-control'], 'no-store');
    await writeFile(entry, 'export const mended = "it builds";\n');
    clock += 10_000;
    assert.equal((await app.inject({ url: '/console.js' })).statusCode, 503);
    clock += WIDGET_RETRY_MS;
    const built = await app.inject({ url: '/console.js' });
    assert.equal(built.statusCode, 200);
    assert.match(built.body, /it builds/);
    // The page itself never depends on the build.
    assert.equal((await app.inject({ url: '/console' })).statusCode, 200);
  });
});

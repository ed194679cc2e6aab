// @parley/client in a real Chromium, from another origin than the API (CORS): bundled by esbuild for the browser
// (no Node built-ins), it streams a turn that a real proxy cuts after its 3rd event, resumes it through the
// preflighted resume route, and reports a 422 as a ParleyError with its detail.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { useApp } from '../helpers/app.ts';
import { browserSkip, useBrowser } from '../helpers/browser.ts';
import { forward, startProxy } from '../helpers/http-proxy.ts';
import { buildSessionApp } from '../helpers/sessions.ts';
import { baseUrl, clientAgents, keyClient, LONG, listen } from './helpers.ts';

const entry = fileURLToPath(new URL('../../packages/client/src/index.ts', import.meta.url));

describe('the client in a browser', { skip: browserSkip }, () => {
  const browser = useBrowser();
  const t = useApp(() => buildSessionApp({ PARLEY_CORS_ORIGINS: '*' }, clientAgents), listen);

  it('streams and resumes a cut turn across origins, and throws ParleyError with the 422 detail', async (ctx) => {
    const bundle = await build({
      entryPoints: [entry],
      bundle: true,
      platform: 'browser',
      format: 'iife',
      globalName: 'Parley',
      write: false,
    });
    const proxy = await startProxy(baseUrl(t), (req) =>
      req.url.endsWith('/messages/stream') ? { kind: 'cut-after-events', events: 3 } : forward,
    );
    ctx.after(() => proxy.close());
    const started = await keyClient(t).createConversation('drawl');
    const page = await browser.page(ctx);
    // The page's origin is the app's port; the API is the proxy's: every call is cross-origin.
    await page.goto(`${baseUrl(t)}/healthz`);
    await page.addScriptTag({ content: bundle.outputFiles[0]?.text ?? '' });
    const seen = (await page.evaluate(
      `(async ({ base, id, token, text }) => {
        const conv = new Parley.ParleyConversation({ baseUrl: base, conversationId: id, token });
        const events = [];
        for await (const e of conv.stream(text)) events.push({ event: e.event, id: e.id, text: e.data.delta?.text ?? '' });
        const reply = (await conv.messages()).items[1];
        const error = await conv.feedback({ score: 42 }).catch((e) => ({ name: e.name, status: e.status, detail: e.detail }));
        return { events, reply: reply.content[0].text, error };
      })(${JSON.stringify({ base: proxy.url, id: started.conversation.id, token: started.session_token, text: LONG })})`,
    )) as {
      events: { event: string; id: string; text: string }[];
      reply: string;
      error: { name: string; status: number; detail: { loc: string[] }[] };
    };

    assert.equal(seen.events[0]?.event, 'turn.started');
    assert.equal(seen.events.at(-1)?.event, 'turn.completed');
    assert.equal(seen.events.map((e) => e.text).join(''), seen.reply);
    const resumes = proxy.requests.filter((r) => r.method === 'GET' && r.url.includes('/events?after='));
    assert.equal(resumes.length, 1, JSON.stringify(proxy.requests.map((r) => `${r.method} ${r.url}`)));
    assert.ok(
      proxy.requests.some((r) => r.method === 'OPTIONS'),
      'the calls were preflighted',
    );
    assert.deepEqual(seen.error, {
      name: 'ParleyError',
      status: 422,
      detail: [seen.error.detail[0]],
    });
    assert.deepEqual(seen.error.detail[0]?.loc, ['body', 'score']);
  });
});

// @parley/client in a real Chromium, from another origin than the API (CORS): bundled by esbuild for the browser
// (no Node built-ins), it streams a turn that a real proxy cuts after its 3rd event, resumes it through the
// preflighted resume route, and reports a 422 as a ParleyError with its detail. And as /widget.js serves it,
// beside <parley-chat>, to a plain page that uses both.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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

  it('serves a plain page the widget and the client in one module, /widget.js: the element, a streamed turn and ParleyError from one bundle', async (ctx) => {
    const started = await keyClient(t).createConversation('demo');
    const page = await browser.page(ctx);
    const loaded: string[] = [];
    page.on('request', (request) => {
      if (request.resourceType() === 'script') loaded.push(new URL(request.url()).pathname);
    });
    const settings = { base: baseUrl(t), id: started.conversation.id, token: started.session_token };
    // The embedding page, served from an origin of its own: every call it makes is cross-origin.
    const html = `<!doctype html>
      <parley-chat conversation-id="${settings.id}" token="${settings.token}"></parley-chat>
      <script type="module">
        import { newIdempotencyKey, ParleyChat, ParleyConversation, ParleyError } from '${settings.base}/widget.js';
        const conversation = new ParleyConversation({ baseUrl: '${settings.base}', conversationId: '${settings.id}', token: '${settings.token}' });
        let text = '';
        for await (const e of conversation.stream('Hello from the page', { idempotencyKey: newIdempotencyKey() })) {
          if (e.event === 'message.delta') text += e.data.delta.text;
        }
        const error = await conversation.feedback({ score: 42 }).catch((e) => e);
        window.seen = {
          text,
          upgraded: document.querySelector('parley-chat') instanceof ParleyChat,
          defined: customElements.get('parley-chat') === ParleyChat,
          error: error instanceof ParleyError ? error.status : String(error),
        };
      </script>`;
    const embedder = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end(html),
    );
    await new Promise<void>((resolve) => embedder.listen(0, '127.0.0.1', resolve));
    ctx.after(() => new Promise<void>((resolve) => embedder.close(() => resolve())));
    await page.goto(`http://127.0.0.1:${(embedder.address() as AddressInfo).port}/`);
    await page.waitForFunction('window.seen !== undefined');
    const seen = (await page.evaluate('window.seen')) as Record<string, unknown>;
    assert.deepEqual(seen, { text: seen.text, upgraded: true, defined: true, error: 422 });
    assert.match(String(seen.text), /You said: "Hello from the page"/);
    // The element opened its conversation with its own attributes, beside the page's calls.
    await page.waitForFunction(
      `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`,
    );
    assert.deepEqual(loaded, ['/widget.js'], 'one module holds both');
  });
});

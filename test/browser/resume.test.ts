// A reply whose connection drops mid-stream, in a real Chromium: a TCP proxy between the browser and the app
// cuts the event stream after its first delta, the widget's client resumes the turn from the last event id,
// and the reply is shown whole and exactly once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { browserSkip, RECORD_REPLY_STATES, useBrowser, useDemoApp, waitInPage } from '../helpers/browser.ts';
import { startCuttingProxy } from '../helpers/cutting-proxy.ts';

describe('a dropped reply stream', { skip: browserSkip }, () => {
  const browser = useBrowser();
  const demo = useDemoApp({ delayMs: 60 });

  it('is resumed, and the whole reply appears exactly once', async (t) => {
    const proxy = await startCuttingProxy(demo.port);
    t.after(() => proxy.close());
    const page = await browser.page(t);
    // The page, the module and the API all go through the proxy (the widget's API is the module's origin).
    await page.goto(`${proxy.url}/demo`);
    const chat = page.locator('parley-chat');
    const input = page.getByRole('textbox', { name: 'Message' });
    await waitInPage(
      page,
      `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`,
    );
    await page.evaluate(RECORD_REPLY_STATES);

    await input.fill('resume me please');
    await input.press('Enter');
    await chat.locator('.msg.assistant:not([data-streaming])').waitFor();

    assert.ok(proxy.cut, 'the proxy cut the stream');
    assert.ok(
      proxy.requests.some((line) =>
        /^GET \/v1\/public\/agents\/conversations\/[^/]+\/turns\/[^/]+\/events/.test(line),
      ),
      `the turn was resumed: ${JSON.stringify(proxy.requests)}`,
    );
    const reply = 'Hello! You said: "resume me please". Context: page: "demo".';
    const shown = await chat.locator('.msg.assistant .text').allTextContents();
    assert.deepEqual(shown, [reply]);
    assert.equal(await chat.locator('[role="alert"]').textContent(), '');
    // Never more than the reply at any moment: each text the bubble held on the way is a prefix of it.
    const states = (await page.evaluate('window.__replyStates')) as string[];
    assert.ok(states.length > 1, JSON.stringify(states));
    for (const state of states) assert.ok(reply.startsWith(state), `${JSON.stringify(state)} is a prefix`);
  });
});

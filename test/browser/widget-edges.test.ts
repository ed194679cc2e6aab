// <parley-chat> where things go wrong, in a real Chromium against a real listening app: a send whose answer is
// lost, an attachment chosen while a send waits for uploads, a chip removed mid-upload, the element moved in the
// page mid-reply or removed, ending the chat mid-reply, and inactivity delays beyond what a timer can hold.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page, Request } from 'playwright-core';
import { browserSkip, useBrowser, useDemoApp, waitInPage } from '../helpers/browser.ts';
import { publicClient } from '../helpers/conversations.ts';
import { solidPng } from '../helpers/png.ts';

const READY = `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`;
const SHADOW = `document.querySelector('parley-chat').shadowRoot`;

/** A promise with its resolve, to hold a routed request until the test lets it go. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

async function openDemo(page: Page, url: string) {
  await page.goto(`${url}/demo`);
  await waitInPage(page, READY);
  const chat = page.locator('parley-chat');
  const input = page.getByRole('textbox', { name: 'Message' });
  const id = (await chat.getAttribute('conversation-id')) ?? '';
  const token = (await chat.getAttribute('token')) ?? '';
  return { chat, input, id, token };
}

interface StoredMessage {
  role: string;
  content: { type: string; text?: string; file_id?: string }[];
}

describe('the widget, when things go wrong', { skip: browserSkip }, () => {
  const browser = useBrowser();
  const demo = useDemoApp({ delayMs: 60 });

  const stored = async (id: string, token: string): Promise<StoredMessage[]> =>
    (await publicClient(demo, id, token).get('/messages')).json().items;

  it('sends a message whose answer was lost again under the same Idempotency-Key: stored once; a new message has a new key', async (t) => {
    const page = await browser.page(t);
    const { chat, input, id, token } = await openDemo(page, demo.url);
    const keys: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/messages/stream')) keys.push(request.headers()['idempotency-key'] ?? '');
    });
    // The first send reaches the server, which stores the message and replies; the browser never hears it
    // (a phone entering a tunnel), nor any attempt after, until the widget gives up and says so.
    let reached = false;
    await page.route('**/messages/stream', async (route) => {
      if (!reached) {
        reached = true;
        await route.fetch();
      }
      await route.abort('failed');
    });
    await input.fill('Did this arrive?');
    await input.press('Enter');
    await waitInPage(page, `${SHADOW}.querySelector('[role=alert]').textContent !== ''`, {
      timeout: 30_000,
    });
    assert.equal(await input.inputValue(), 'Did this arrive?', 'the draft is given back');
    const lost = new Set(keys);
    assert.equal(lost.size, 1, `one key for every attempt: ${JSON.stringify(keys)}`);

    // Sent again as it is: the same key, so the server answers with the turn it already ran.
    await page.unroute('**/messages/stream');
    await input.press('Enter');
    await chat.locator('.msg.assistant:not([data-streaming])').waitFor();
    assert.match(
      (await chat.locator('.msg.assistant .text').textContent()) ?? '',
      /You said: "Did this arrive\?"/,
    );
    assert.equal(keys.at(-1), [...lost][0]);
    assert.deepEqual(
      (await stored(id, token)).map((m) => m.role),
      ['user', 'assistant'],
    );
    assert.equal(await chat.locator('.msg.user').count(), 1);

    await waitInPage(page, READY);
    await input.fill('And this one?');
    await input.press('Enter');
    await chat.locator('.msg.assistant:not([data-streaming])').nth(1).waitFor();
    assert.notEqual(keys.at(-1), [...lost][0], 'a new message, a new key');
    assert.equal((await stored(id, token)).length, 4);
  });

  it('keeps an attachment chosen while a send waits for its uploads for the next message', async (t) => {
    const page = await browser.page(t);
    const { chat, input, id, token } = await openDemo(page, demo.url);
    const held = deferred();
    let uploads = 0;
    await page.route('**/files', async (route) => {
      if (++uploads === 1) await held.promise;
      await route.continue();
    });
    const bodies: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/messages/stream')) bodies.push(request.postData() ?? '');
    });
    const picker = page.locator('parley-chat input[type=file]');
    await picker.setInputFiles({
      name: 'first.png',
      mimeType: 'image/png',
      buffer: solidPng(8, 8, [1, 2, 3]),
    });
    await input.fill('Two files');
    await input.press('Enter');
    // The send waits for first.png's upload; meanwhile the user picks another file.
    await waitInPage(page, `${SHADOW}.querySelector('[part=send-button]').disabled`);
    await picker.setInputFiles({ name: 'second.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') });
    await chat.locator('.pending .chip[data-state="ready"]', { hasText: 'second.txt' }).waitFor();
    held.resolve();
    await chat.locator('.msg.assistant:not([data-streaming])').waitFor();
    assert.equal(await chat.locator('[role="alert"]').textContent(), '');
    const first = JSON.parse(bodies[0] ?? '{}') as StoredMessage;
    assert.deepEqual(
      first.content.map((b) => b.type),
      ['text', 'image'],
    );
    assert.match(first.content[1]?.file_id ?? '', /\S/);
    // second.txt is still in the composer: it goes with the next message.
    assert.deepEqual(await chat.locator('.pending .chip').allTextContents(), ['second.txt×']);

    await waitInPage(page, READY);
    await input.fill('The other one');
    await input.press('Enter');
    await chat.locator('.msg.assistant:not([data-streaming])').nth(1).waitFor();
    const second = JSON.parse(bodies[1] ?? '{}') as StoredMessage;
    assert.deepEqual(
      second.content.map((b) => b.type),
      ['text', 'file'],
    );
    const messages = await stored(id, token);
    assert.deepEqual(
      messages.filter((m) => m.role === 'user').map((m) => m.content.map((b) => b.type)),
      [
        ['text', 'image'],
        ['text', 'file'],
      ],
    );
  });

  it("stops a chip's upload when the chip is removed, and says nothing of it", async (t) => {
    const page = await browser.page(t);
    const { chat, id, token } = await openDemo(page, demo.url);
    const held = deferred();
    t.after(() => held.resolve());
    await page.route('**/files', async (route) => {
      await held.promise;
      await route.continue().catch(() => {});
    });
    const failed = page.waitForEvent('requestfailed', {
      predicate: (request: Request) => request.url().endsWith('/files'),
      timeout: 10_000,
    });
    await page
      .locator('parley-chat input[type=file]')
      .setInputFiles({ name: 'never.txt', mimeType: 'text/plain', buffer: Buffer.from('never') });
    await chat.locator('.pending .chip[data-state="uploading"]').waitFor();
    await chat.getByRole('button', { name: 'Remove never.txt' }).click();
    const request = await failed;
    assert.match(request.failure()?.errorText ?? '', /abort/i);
    assert.equal(await chat.locator('.pending .chip').count(), 0);
    assert.equal(await chat.locator('[role="alert"]').textContent(), '');
    const files = (await publicClient(demo, id, token).get('/files')).json();
    assert.deepEqual(files.items, []);
  });

  it('revokes the local URLs of the images it showed once removed from the page', async (t) => {
    const page = await browser.page(t);
    const { chat, input } = await openDemo(page, demo.url);
    await page
      .locator('parley-chat input[type=file]')
      .setInputFiles({ name: 'dot.png', mimeType: 'image/png', buffer: solidPng(8, 8, [9, 9, 9]) });
    await chat.locator('.pending .chip[data-state="ready"]').waitFor();
    await input.fill('A dot');
    await input.press('Enter');
    const src = (await chat.locator('.msg.user img').getAttribute('src')) ?? '';
    assert.match(src, /^blob:/);
    // Loaded as an image, as the page's policy allows blob: URLs for images only.
    const read = `new Promise((resolve) => {
      const probe = new Image();
      probe.onload = () => resolve('readable');
      probe.onerror = () => resolve('revoked');
      probe.src = ${JSON.stringify(src)};
    })`;
    assert.equal(await page.evaluate(read), 'readable');
    await page.evaluate(`document.querySelector('parley-chat').remove()`);
    assert.equal(await page.evaluate(read), 'revoked');
  });

  it('ends the chat mid-reply: the log is no longer busy and the end is told once', async (t) => {
    const page = await browser.page(t);
    const { chat, input } = await openDemo(page, demo.url);
    await page.evaluate(
      `window.__closed = 0; document.querySelector('parley-chat').addEventListener('parley-closed', () => window.__closed++)`,
    );
    await input.fill('A fairly long message, so that the reply takes a while to arrive');
    await input.press('Enter');
    await chat.locator('.msg.assistant[data-streaming]').waitFor();
    await chat.getByRole('button', { name: 'End chat' }).click();
    await chat.getByRole('button', { name: 'End', exact: true }).click();
    await chat.getByText('This conversation has ended.').waitFor();
    assert.equal(
      await page.evaluate(`${SHADOW}.querySelector('[role=log]').getAttribute('aria-busy')`),
      null,
    );
    assert.equal(await page.evaluate('window.__closed'), 1);
  });

  it('takes an inactivity delay longer than a timer holds as the longest it holds, not as "now"', async (t) => {
    const page = await browser.page(t);
    const { chat, input, id, token } = await openDemo(page, demo.url);
    // 40 days: more than 2^31-1 ms, which setTimeout would fire at once.
    await page.evaluate(`(() => {
      const chat = document.querySelector('parley-chat');
      chat.setAttribute('inactivity-warning-after', '3000000');
      chat.setAttribute('inactivity-final-after', '3456000');
    })()`);
    await input.fill('Still open?');
    await input.press('Enter');
    await chat.locator('.msg.assistant:not([data-streaming])').waitFor();
    await waitInPage(page, READY);
    assert.deepEqual(
      (await stored(id, token)).map((m) => m.role),
      ['user', 'assistant'],
    );
    assert.equal((await publicClient(demo, id, token).get('')).json().status, 'active');
    assert.equal(await chat.locator('[role="status"]').textContent(), '');
  });

  describe('with a slower agent', () => {
    // A word every 150 ms: the reply is still arriving when the widget has moved and reloaded.
    const slow = useDemoApp({ delayMs: 150 });

    it('moved in the page mid-reply, reloads the conversation and shows the reply once, no longer busy', async (t) => {
      const page = await browser.page(t);
      const { chat, input } = await openDemo(page, slow.url);
      const resumes: string[] = [];
      page.on('request', (request) => {
        if (/\/turns\/[^/]+\/events/.test(request.url())) resumes.push(request.url());
      });
      await input.fill('Move me while you answer, please');
      await input.press('Enter');
      await chat.locator('.msg.assistant[data-streaming]').waitFor();
      // As a framework would: the element is disconnected, then connected elsewhere.
      await page.evaluate(`(() => {
        const chat = document.querySelector('parley-chat');
        const box = document.createElement('div');
        document.body.append(box);
        box.append(chat);
      })()`);
      const reply = 'Hello! You said: "Move me while you answer, please". Context: page: "demo".';
      await chat.locator('.msg.assistant:not([data-streaming])').waitFor();
      await waitInPage(page, READY);
      assert.deepEqual(await chat.locator('.msg:not(.greeting) .text').allTextContents(), [
        'Move me while you answer, please',
        reply,
      ]);
      assert.equal(
        await page.evaluate(`${SHADOW}.querySelector('[role=log]').getAttribute('aria-busy')`),
        null,
      );
      assert.equal(await chat.locator('[role="alert"]').textContent(), '');
      assert.equal(resumes.length, 1, 'the turn was followed again from its start');
      assert.equal(new URL(resumes[0] ?? '').searchParams.get('after'), null);
    });
  });
});

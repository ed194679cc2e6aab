// <parley-chat> following its conversation's event stream, in a real Chromium against a real listening app: an
// operator's replies (posted with the API key) appearing within a second with the operator's name, the handoff
// and handback said in the log, a send while people answer shown once, the stream followed again after its
// connection is cut (with Last-Event-ID), and one stream per open widget, closed when it goes.
import assert from 'node:assert/strict';
import { createServer, type Server, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { browserSkip, useBrowser, useDemoApp, waitInPage } from '../helpers/browser.ts';
import { waitFor } from '../helpers/wait.ts';

const READY = `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`;

async function openDemo(page: Page, url: string) {
  await page.goto(`${url}/demo`);
  await waitInPage(page, READY);
  const chat = page.locator('parley-chat');
  const input = page.getByRole('textbox', { name: 'Message' });
  const id = (await chat.getAttribute('conversation-id')) ?? '';
  return { chat, input, id };
}

/** The ids of the messages the widget shows, in order (the greeting has none). */
const shownIds = (page: Page) =>
  page.evaluate(
    `[...document.querySelector('parley-chat').shadowRoot.querySelectorAll('.msg[data-id]')].map((el) => el.dataset.id)`,
  ) as Promise<string[]>;

describe('the widget, following its conversation', { skip: browserSkip }, () => {
  const browser = useBrowser();
  const demo = useDemoApp({ delayMs: 20 });
  let operatorKey = '';
  before(async () => {
    operatorKey = await demo.createKey('demo');
  });
  /** A call of the server-side family, as the integrator's back office makes it. */
  const asOperator = async (path: string, body: Record<string, unknown> = {}) => {
    const res = await demo.app.inject({
      method: 'POST',
      url: `/v1/agents/sessions/${path}`,
      headers: { 'x-api-key': operatorKey },
      payload: body,
    });
    assert.ok(res.statusCode < 300, res.body);
    return res.json();
  };
  const operatorSays = (id: string, content: string) =>
    asOperator(`${id}/messages`, { role: 'assistant', content, author: { id: 'op_7', name: 'Dana' } });

  it("shows an operator's reply within a second with their name, says when people take over and give back, and shows nothing twice", async (t) => {
    const page = await browser.page(t);
    const { chat, input, id } = await openDemo(page, demo.url);
    await input.fill('Hello');
    await input.press('Enter');
    await chat.locator('.msg.assistant[data-id]:not(.greeting)').waitFor();

    await asOperator(`${id}/handoff`, { reason: 'asks for a person' });
    await chat.locator('.event', { hasText: 'A person takes over this conversation' }).waitFor();

    await operatorSays(id, 'I am **Dana**, I can help.');
    const reply = chat.locator('.msg.assistant[data-operator]');
    await reply.waitFor({ timeout: 1000 });
    assert.equal(await reply.locator('.author').textContent(), 'Dana');
    assert.equal(await reply.locator('strong').textContent(), 'Dana');

    // A send while people answer: stored, shown once, no reply awaited.
    await input.fill('Thanks, my order is A-1');
    await input.press('Enter');
    await waitInPage(
      page,
      `document.querySelector('parley-chat').shadowRoot.querySelectorAll('.msg.user[data-id]').length === 2`,
    );
    assert.equal(await chat.locator('.typing .dots').count(), 0);
    assert.equal(await chat.locator('[role="alert"]').textContent(), '');
    await waitInPage(page, READY);

    await asOperator(`${id}/handback`);
    await chat.locator('.event', { hasText: 'The agent answers again.' }).waitFor();
    await input.fill('And now?');
    await input.press('Enter');
    await chat.getByText('You said: "And now?"').waitFor();
    // A last operator message after everything else: once it is shown, the stream has told all before it.
    await operatorSays(id, 'Anything else?');
    await chat.getByText('Anything else?').waitFor();

    const ids = await shownIds(page);
    assert.equal(new Set(ids).size, ids.length, `no message twice: ${JSON.stringify(ids)}`);
    const stored = await demo.app.inject({
      url: `/v1/agents/sessions/${id}/messages?limit=100`,
      headers: { 'x-api-key': operatorKey },
    });
    assert.deepEqual(
      ids,
      stored.json().items.map((m: { id: string }) => m.id),
    );
  });

  it("marks the launcher when an operator's reply arrives while the panel is closed", async (t) => {
    const page = await browser.page(t);
    await page.goto(`${demo.url}/demo?launcher=true`);
    await waitInPage(page, READY);
    const id = (await page.locator('parley-chat').getAttribute('conversation-id')) ?? '';
    await page.getByRole('button', { name: 'Close the chat' }).click();
    await operatorSays(id, 'Are you still there?');
    const marked = page.getByRole('button', { name: 'Open the chat: new messages' });
    await marked.waitFor();
    await marked.click();
    await page.locator('parley-chat').getByText('Are you still there?').waitFor();
    await page.getByRole('button', { name: 'Close the chat' }).click();
    await page.getByRole('button', { name: 'Open the chat', exact: true }).waitFor();
  });

  describe('behind a connection that can be cut', () => {
    let proxy: Server | undefined;
    const sockets = new Set<Socket>();
    let proxyUrl = '';
    before(async () => {
      // A TCP relay to the app: cutting its sockets drops the widget's stream as a network failure would.
      proxy = createServer((client) => {
        const upstream = new Socket();
        upstream.connect(demo.port, '127.0.0.1');
        client.pipe(upstream).pipe(client);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => {});
        }
      });
      await new Promise<void>((resolve) => proxy?.listen(0, '127.0.0.1', resolve));
      const address = proxy.address();
      if (!address || typeof address === 'string') throw new Error('the proxy has no port');
      proxyUrl = `http://127.0.0.1:${address.port}`;
    });
    after(() => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
    });

    it('follows the stream again with Last-Event-ID after its connection is cut, missing nothing', async (t) => {
      const page = await browser.page(t);
      const resumedAfter: string[] = [];
      page.on('request', (request) => {
        const last = request.headers()['last-event-id'];
        if (request.url().endsWith('/events') && last) resumedAfter.push(last);
      });
      const { chat, id } = await openDemo(page, proxyUrl);
      await operatorSays(id, 'First');
      await chat.getByText('First').waitFor();

      for (const s of sockets) s.destroy();
      await operatorSays(id, 'Second, while the connection was down');
      await chat.getByText('Second, while the connection was down').waitFor();
      assert.ok(resumedAfter.length > 0, 'the stream was followed again after the last event id');
      const ids = await shownIds(page);
      assert.equal(new Set(ids).size, ids.length, `no message twice: ${JSON.stringify(ids)}`);
      assert.equal(await chat.locator('.msg[data-operator]').count(), 2);
    });
  });

  it('opens one stream per widget, and closes it when the element leaves the page or the conversation ends', async (t) => {
    const page = await browser.page(t);
    const streams: string[] = [];
    const closed: string[] = [];
    page.on('request', (r) => r.url().endsWith('/events') && streams.push(r.url()));
    page.on('requestfailed', (r) => r.url().endsWith('/events') && closed.push('failed'));
    page.on('requestfinished', (r) => r.url().endsWith('/events') && closed.push('finished'));
    const { chat, input } = await openDemo(page, demo.url);
    await input.fill('Hello');
    await input.press('Enter');
    await chat.getByText('You said: "Hello"').waitFor();
    assert.equal(streams.length, 1, 'one stream, kept across the turn');

    // Ended: the server's session.closed ends the stream.
    await chat.getByRole('button', { name: 'End chat' }).click();
    await chat.getByRole('button', { name: 'End', exact: true }).click();
    await chat.getByText('This conversation has ended.').waitFor();
    await waitFor('the ended conversation closes its stream', () => closed.length === 1);

    // A new page's widget, removed from the page: its stream is aborted.
    const second = await browser.page(t);
    const secondClosed: string[] = [];
    second.on('requestfailed', (r) => r.url().endsWith('/events') && secondClosed.push(r.url()));
    const opened: string[] = [];
    second.on('request', (r) => r.url().endsWith('/events') && opened.push(r.url()));
    await openDemo(second, demo.url);
    await waitFor('the widget opens its stream', () => opened.length === 1);
    await second.evaluate(`document.querySelector('parley-chat').remove()`);
    await waitFor('the removed widget closes its stream', () => secondClosed.length === 1);
    assert.equal(opened.length, 1);
  });
});

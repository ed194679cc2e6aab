// The /demo page in a real Chromium under its Content-Security-Policy: a streamed reply, an image upload,
// feedback, terminate, the keyboard, the inactivity steps, the token refresh; the widget is the bundled
// /widget.js talking to a real listening app.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  browserSkip,
  RECORD_REPLY_STATES,
  recordCspViolations,
  useBrowser,
  useDemoApp,
  waitInPage,
} from '../helpers/browser.ts';
import { publicClient } from '../helpers/conversations.ts';
import { solidPng } from '../helpers/png.ts';

const ARTIFACTS = join(import.meta.dirname, '../../test-artifacts');

describe('the widget', { skip: browserSkip }, () => {
  const browser = useBrowser();

  describe('on the demo page', () => {
    const demo = useDemoApp({ delayMs: 40 });

    it('streams a reply, sends an image, takes feedback and ends the conversation, its CSP refusing nothing', async (t) => {
      const page = await browser.page(t);
      const violations = await recordCspViolations(page);
      await page.goto(`${demo.url}/demo`);
      const chat = page.locator('parley-chat');
      const input = page.getByRole('textbox', { name: 'Message' });
      await input.waitFor();
      await waitInPage(
        page,
        `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`,
      );
      await page.evaluate(RECORD_REPLY_STATES);

      await input.fill('Hello widget');
      await input.press('Enter');
      const firstReply = chat.locator('.msg.assistant:not([data-streaming])').first();
      await firstReply.waitFor();
      const reply = 'Hello! You said: "Hello widget". Context: page: "demo".';
      assert.equal((await firstReply.locator('.text').textContent())?.trim(), reply);
      const states = (await page.evaluate('window.__replyStates')) as string[];
      assert.ok(states.length > 1, `the reply grew over more than one delta: ${JSON.stringify(states)}`);
      for (const state of states) assert.ok(reply.startsWith(state), `${JSON.stringify(state)} is a prefix`);

      // An image: uploaded when chosen, shown as an image, sent as an image block.
      await page.locator('parley-chat input[type=file]').setInputFiles({
        name: 'dot.png',
        mimeType: 'image/png',
        buffer: solidPng(96, 64, [240, 160, 40]),
      });
      await chat.locator('.pending .chip[data-state="ready"]').waitFor();
      await input.fill('See this');
      await input.press('Enter');
      await chat.locator('.msg.user img[alt="dot.png"]').waitFor();
      await chat.getByText('Attachments: 1.').waitFor();
      const id = await chat.getAttribute('conversation-id');
      const token = await chat.getAttribute('token');
      assert.ok(id && token);
      const messages = (await publicClient(demo, id, token).get('/messages')).json();
      const sent = messages.items.find((m: { role: string; content: { type: string }[] }) =>
        m.content.some((b) => b.type === 'image'),
      );
      assert.deepEqual(
        sent.content.map((b: { type: string }) => b.type),
        ['text', 'image'],
      );

      // Feedback: asked for with the header's button (the page sets feedback="button"), 0–10 and a comment.
      await chat.getByRole('button', { name: 'Rate this conversation' }).click();
      await chat.getByRole('radio', { name: '9' }).check();
      await chat.getByPlaceholder('Comment (optional)').fill('Quick and clear');
      await chat.getByRole('button', { name: 'Send feedback' }).click();
      await chat.getByText('Thank you!').waitFor();
      const feedback = await demo.store.getFeedback(id);
      assert.equal(feedback?.score, 9);
      assert.equal(feedback?.comment, 'Quick and clear');

      // Terminate, confirmed: the conversation is closed and the widget says so.
      await chat.getByRole('button', { name: 'End chat' }).click();
      await chat.getByRole('button', { name: 'End', exact: true }).click();
      await chat.getByText('This conversation has ended.').waitFor();
      assert.equal(await input.isDisabled(), true);
      assert.equal((await publicClient(demo, id, token).get('')).json().status, 'closed');

      await mkdir(ARTIFACTS, { recursive: true });
      const shot = join(ARTIFACTS, 'demo.png');
      await rm(shot, { force: true });
      await page.screenshot({ path: shot, fullPage: true });
      assert.ok(existsSync(shot), 'the screenshot is saved');
      // The widget's styles, the page's inline blocks, the API and the image preview all passed the policy.
      assert.deepEqual(await violations(), []);
    });

    it('sends on Enter, adds a line on Shift+Enter, and keeps the messages in a polite log', async (t) => {
      const page = await browser.page(t);
      await page.goto(`${demo.url}/demo`);
      const chat = page.locator('parley-chat');
      const log = page.getByRole('log');
      await log.waitFor();
      assert.equal(await log.getAttribute('aria-live'), 'polite');
      const input = page.getByRole('textbox', { name: 'Message' });
      await waitInPage(
        page,
        `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`,
      );
      await input.focus();
      await page.keyboard.type('line one');
      await page.keyboard.press('Shift+Enter');
      await page.keyboard.type('line two');
      assert.equal(await input.inputValue(), 'line one\nline two');
      assert.equal(await chat.locator('.msg.user').count(), 0);

      await page.keyboard.press('Enter');
      await chat.locator('.msg.user').waitFor();
      assert.equal((await chat.locator('.msg.user .text').textContent()) ?? '', 'line one\nline two');
      assert.equal(await input.inputValue(), '');
      await chat.getByText('You said: "line one').waitFor();
      // Focus stays in the message box, ready for the next one.
      assert.equal(
        await page.evaluate(`document.querySelector('parley-chat').shadowRoot.activeElement?.id`),
        'parley-input',
      );
    });

    it('sends the inactivity warning, then the final message, and shows the conversation closed', async (t) => {
      const page = await browser.page(t);
      await page.goto(`${demo.url}/demo?inactivity_warning_after=0.3&inactivity_final_after=1`);
      const chat = page.locator('parley-chat');
      await chat.getByText('This conversation has ended.').waitFor();
      const said = await chat.locator('.msg.assistant .text').allTextContents();
      assert.equal(said.length, 2, JSON.stringify(said));
      assert.match(said[0] ?? '', /still there/i);
      assert.equal(await page.getByRole('textbox', { name: 'Message' }).isDisabled(), true);
    });
  });

  describe('with an agent that shows its tool calls', () => {
    let tool: Server | undefined;
    const demo = useDemoApp({
      delayMs: 10,
      agent: async () => {
        // A real HTTP tool on loopback: every call is an order found and shipped.
        tool = createServer((req, res) => {
          req.resume().on('end', () => {
            res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"shipped"}');
          });
        });
        await new Promise<void>((resolve) => tool?.listen(0, '127.0.0.1', resolve));
        const address = tool.address();
        if (!address || typeof address === 'string') throw new Error('the tool has no port');
        return {
          expose_tools: true,
          tools: [
            {
              name: 'lookup',
              description: 'Looks an order up',
              input_schema: { type: 'object', properties: { value: { type: 'string' } } },
              url: `http://127.0.0.1:${address.port}/lookup`,
            },
          ],
        };
      },
    });
    after(() => new Promise<void>((resolve) => (tool ? tool.close(() => resolve()) : resolve())));

    it('shows each tool step of the turn, then the reply', async (t) => {
      const page = await browser.page(t);
      await page.goto(`${demo.url}/demo`);
      const chat = page.locator('parley-chat');
      const input = page.getByRole('textbox', { name: 'Message' });
      await waitInPage(
        page,
        `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`,
      );
      await input.fill('Where is my order? [[tool:lookup {"value":"A-1"}]]');
      await input.press('Enter');
      await chat.locator('.tool[data-status="ok"]').waitFor();
      assert.equal(await chat.locator('.tool').textContent(), 'Used lookup');
      const reply = chat.locator('.msg.assistant:not([data-streaming]) .text');
      await reply.waitFor();
      assert.match((await reply.textContent()) ?? '', /Tools: lookup ok \{"status":"shipped"\}\./);
    });
  });

  describe('with session tokens that last a second', () => {
    const demo = useDemoApp({ delayMs: 0, env: { PARLEY_TOKEN_TTL: '1' } });

    it('asks the page for a fresh token once the first has expired, and goes on', async (t) => {
      const page = await browser.page(t);
      const refreshes: string[] = [];
      page.on('request', (request) => {
        if (request.url().endsWith('/demo/token')) refreshes.push(request.method());
      });
      await page.goto(`${demo.url}/demo`);
      const chat = page.locator('parley-chat');
      const input = page.getByRole('textbox', { name: 'Message' });
      await waitInPage(
        page,
        `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`,
      );
      // The condition is the token's own expiry (its `exp`, which the server checks to the second).
      await waitInPage(
        page,
        `(() => {
        const token = document.querySelector('parley-chat').getAttribute('token');
        const claims = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
        return Date.now() >= (claims.exp + 1) * 1000;
      })()`,
      );
      await input.fill('still here');
      await input.press('Enter');
      await chat.getByText('You said: "still here"').waitFor();
      assert.deepEqual(refreshes.slice(0, 1), ['POST']);
      assert.equal(await chat.locator('[role="alert"]').textContent(), '');
    });
  });
});

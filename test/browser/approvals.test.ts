// <parley-chat> with approvals and cancel, in a real Chromium against a real listening app whose `demo` agent
// has a tool that waits for the user's approval (a real HTTP receiver): the card shows the tool and a readable
// summary of its input, Approve runs the call once and the reply appears, Deny never runs it, a reload shows
// the waiting call again, and the Stop button cancels a slow turn, keeping its text marked as stopped.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { browserSkip, useBrowser, useDemoApp, waitInPage } from '../helpers/browser.ts';
import { publicClient } from '../helpers/conversations.ts';
import { startToolReceiver, type ToolReceiver } from '../helpers/tool-receiver.ts';
import { waitFor } from '../helpers/wait.ts';

const READY = `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`;
/** Where the screenshot of the approval card is kept (git-ignored test output). */
const ARTIFACTS = join(import.meta.dirname, '../../test-artifacts');

/** The scripted model asks for send_invoice with this input when a message holds the directive. */
const INVOICE = { order: 'A-1042', email: 'ada@example.com', amount: 25, note: 'x'.repeat(200) };
const ASK = `Please send my invoice [[tool:send_invoice ${JSON.stringify(INVOICE)}]]`;

describe('the widget with approvals and cancel', { skip: browserSkip }, () => {
  const browser = useBrowser();
  let receiver: ToolReceiver | undefined;
  const cleanups: (() => unknown)[] = [];
  after(async () => {
    for (const fn of cleanups) await fn();
  });
  const demo = useDemoApp({
    // Slow enough for a long reply to be stopped half-way, on a loaded machine too.
    delayMs: 60,
    agent: async () => {
      receiver = await startToolReceiver({ after: (fn) => void cleanups.push(fn as () => unknown) });
      return {
        tools: [
          {
            name: 'send_invoice',
            description: 'Emails the invoice of an order.',
            input_schema: { type: 'object', properties: { order: { type: 'string' } } },
            url: `${receiver.url}/send_invoice`,
            approval: 'user',
          },
        ],
      };
    },
  });

  async function openDemo(page: Page) {
    await page.goto(`${demo.url}/demo`);
    await waitInPage(page, READY);
    const chat = page.locator('parley-chat');
    const id = (await chat.getAttribute('conversation-id')) ?? '';
    const token = (await chat.getAttribute('token')) ?? '';
    return { chat, input: page.getByRole('textbox', { name: 'Message' }), id, token };
  }

  const callsOf = (conversationId: string) =>
    (receiver?.requests ?? []).filter((r) => r.body?.session_id === conversationId);

  it('shows the tool and a readable summary of its input; Approve runs the call once and the reply appears', async (t) => {
    const page = await browser.page(t);
    const { chat, input, id } = await openDemo(page);
    await input.fill(ASK);
    await input.press('Enter');
    const card = chat.getByRole('group', { name: 'Allow send invoice?' });
    await card.waitFor();
    const lines = await card.locator('dt, dd').allTextContents();
    assert.deepEqual(lines.slice(0, 6), ['order', 'A-1042', 'email', 'ada@example.com', 'amount', '25']);
    assert.ok((lines[7] ?? '').length <= 80 && (lines[7] ?? '').endsWith('…'), 'a long value is cut');
    assert.equal(await card.textContent().then((text) => text?.includes('{')), false, 'no raw JSON');
    await mkdir(ARTIFACTS, { recursive: true });
    await card.screenshot({ path: join(ARTIFACTS, 'approval-card.png') });
    await chat.locator('.chat').screenshot({ path: join(ARTIFACTS, 'approval-widget.png') });
    assert.deepEqual(callsOf(id), [], 'nothing runs before the decision');
    // While the turn waits, the send button is Stop, and a decision is the way on.
    assert.equal(await chat.getByRole('button', { name: 'Stop the reply' }).isEnabled(), true);

    // The decision is held on its way: both buttons are disabled meanwhile.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/approvals', async (route) => {
      await held;
      await route.continue();
    });
    const approve = card.getByRole('button', { name: 'Approve send invoice' });
    await approve.click();
    await waitInPage(
      page,
      `[...document.querySelector('parley-chat').shadowRoot.querySelectorAll('.approval button')].every((b) => b.disabled)`,
    );
    release();
    await chat.locator('.msg.assistant .text', { hasText: 'Tools: send_invoice ok' }).waitFor();
    await card.getByText('Approved').waitFor();
    const reply = (await chat.locator('.msg.assistant .text').allTextContents()).join('');
    assert.match(reply, /Tools: send_invoice ok/);
    assert.equal(callsOf(id).length, 1, 'the approved call ran once');
    await sendButton(chat).waitFor();
    assert.equal(await input.isDisabled(), false);
    await chat.locator('.chat').screenshot({ path: join(ARTIFACTS, 'approval-decided.png') });
  });

  it('Deny never runs the call: the model is told, and its reply appears', async (t) => {
    const page = await browser.page(t);
    const { chat, input, id, token } = await openDemo(page);
    await input.fill(ASK);
    await input.press('Enter');
    const card = chat.getByRole('group', { name: 'Allow send invoice?' });
    await card.getByRole('button', { name: 'Deny send invoice' }).click();
    await card.getByText('Denied').waitFor();
    await chat.locator('.msg.assistant .text', { hasText: 'Tools: send_invoice error' }).waitFor();
    await sendButton(chat).waitFor();
    assert.match(
      (await chat.locator('.msg.assistant .text').allTextContents()).join(''),
      /send_invoice error/,
    );
    const stored = (await publicClient(demo, id, token).get('/messages')).json().items;
    assert.equal(stored.length, 2);
    assert.deepEqual(callsOf(id), []);
  });

  it('Stop while a call waits cancels the turn: the call never runs, its card says so, and the text so far stays', async (t) => {
    const page = await browser.page(t);
    const { chat, input, id, token } = await openDemo(page);
    await input.fill(ASK);
    await input.press('Enter');
    const card = chat.getByRole('group', { name: 'Allow send invoice?' });
    await card.waitFor();
    await chat.getByRole('button', { name: 'Stop the reply' }).click();
    await card.getByText('Not run').waitFor();
    assert.equal(await card.getByRole('button').count(), 0);
    const stopped = chat.locator('.msg.assistant[data-stopped]');
    await stopped.waitFor();
    await sendButton(chat).waitFor();
    const stored = (await publicClient(demo, id, token).get('/messages')).json().items;
    assert.equal(stored.length, 2);
    assert.equal(stored[1].stop_reason, 'cancelled');
    const storedText = stored[1].content.map((b: { text?: string }) => b.text ?? '').join('');
    assert.equal((await stopped.locator('.text').allTextContents()).join(''), storedText);
    assert.deepEqual(callsOf(id), []);
    assert.deepEqual((await publicClient(demo, id, token).get('')).json().pending_approvals, []);
  });

  it('shows the waiting call again after a reload, and goes on when approved there', async (t) => {
    const page = await browser.page(t);
    const { chat, input, id } = await openDemo(page);
    await input.fill(ASK);
    await input.press('Enter');
    await chat.getByRole('group', { name: 'Allow send invoice?' }).waitFor();
    // The demo page mints a new conversation at each load: the reload keeps this one in the page's URL.
    const token = (await chat.getAttribute('token')) ?? '';
    await page.reload();
    await reopen(page, id, token);
    const card = chat.getByRole('group', { name: 'Allow send invoice?' });
    await card.getByRole('button', { name: 'Approve send invoice' }).click();
    await chat.locator('.msg.assistant .text', { hasText: 'Tools: send_invoice ok' }).waitFor();
    assert.equal(callsOf(id).length, 1);
  });

  it('shows the waiting call in another tab that opens the conversation, and goes on when approved there', async (t) => {
    const first = await browser.page(t);
    const { chat, input, id, token } = await openDemo(first);
    await input.fill(ASK);
    await input.press('Enter');
    await chat.getByRole('group', { name: 'Allow send invoice?' }).waitFor();
    // Another tab (its storage its own) opens the same conversation: the record's pending approval names the
    // turn, which it follows.
    const other = await browser.page(t);
    await other.goto(`${demo.url}/demo`);
    await reopen(other, id, token);
    const otherChat = other.locator('parley-chat');
    const card = otherChat.getByRole('group', { name: 'Allow send invoice?' });
    await card.getByRole('button', { name: 'Approve send invoice' }).click();
    await otherChat.locator('.msg.assistant .text', { hasText: 'Tools: send_invoice ok' }).waitFor();
    assert.equal(callsOf(id).length, 1);
  });

  it('after a reload, goes past a pause decided elsewhere meanwhile and shows the call the turn waits for now', async (t) => {
    const page = await browser.page(t);
    const { chat, input, id, token } = await openDemo(page);
    // Two steps, each with a call to approve.
    const second = JSON.stringify({ order: 'A-2000' });
    await input.fill(`${ASK} [[tool@2:send_invoice ${second}]]`);
    await input.press('Enter');
    const firstCard = chat.getByRole('group', { name: 'Allow send invoice?' });
    await firstCard.waitFor();
    const callId = (await firstCard.getAttribute('data-call-id')) ?? '';
    // The tab remembers its turn for a reload: the turn's id, which the test decides with from outside.
    const remembered = await page.evaluate(() =>
      Object.keys(sessionStorage).map((key) => sessionStorage.getItem(key) ?? ''),
    );
    const turnId: string = JSON.parse(remembered.find((v) => v.includes('turn_')) ?? '{}').turnId;
    await page.reload();
    const decided = await publicClient(demo, id, token).post(`/turns/${turnId}/approvals`, {
      decisions: [{ call_id: callId, approved: true }],
    });
    assert.equal(decided.statusCode, 202, decided.body);
    await reopen(page, id, token);
    // The first call's card is gone; the second's waits, and goes on when approved.
    const card = chat.getByRole('group', { name: 'Allow send invoice?' });
    await waitFor(
      'the second call is shown',
      async () => (await card.locator('dd').first().textContent()) === 'A-2000',
    );
    assert.equal(await card.count(), 1);
    await card.getByRole('button', { name: 'Approve send invoice' }).click();
    await chat.locator('.msg.assistant .text', { hasText: 'Tools: send_invoice ok' }).waitFor();
    await sendButton(chat).waitFor();
    assert.equal(callsOf(id).length, 2);
  });

  it('turns Send into Stop while a turn runs: Stop cancels a slow turn, and its text stays, marked as stopped', async (t) => {
    const page = await browser.page(t);
    const { chat, input, id, token } = await openDemo(page);
    const long = `Tell me a long story ${'about the sea and the ships that sail on it '.repeat(8)}`;
    await input.fill(long);
    await input.press('Enter');
    await waitInPage(
      page,
      `(document.querySelector('parley-chat').shadowRoot.querySelector('.msg.assistant[data-streaming] .text')?.textContent ?? '').length > 20`,
    );
    await chat.getByRole('button', { name: 'Stop the reply' }).click();
    const stopped = chat.locator('.msg.assistant[data-stopped]');
    await stopped.waitFor();
    await sendButton(chat).waitFor();
    const shown = (await stopped.locator('.text').allTextContents()).join('');
    assert.ok(shown.length > 0 && shown.length < long.length, shown);
    assert.match((await stopped.textContent()) ?? '', /Stopped$/);
    await mkdir(ARTIFACTS, { recursive: true });
    await chat.locator('.chat').screenshot({ path: join(ARTIFACTS, 'stopped-reply.png') });
    let stored: { role: string; stop_reason: string | null; content: { text?: string }[] }[] = [];
    await waitFor('the cancelled reply is stored', async () => {
      stored = (await publicClient(demo, id, token).get('/messages')).json().items;
      return stored.length === 2;
    });
    assert.equal(stored[1]?.stop_reason, 'cancelled');
    assert.equal(stored[1]?.content.map((b) => b.text ?? '').join(''), shown);
    // The conversation takes the next message.
    await input.fill('Thanks');
    await input.press('Enter');
    await waitFor('the next reply', async () => (await chat.locator('.msg.assistant').count()) === 2);
  });
});

/** The composer's button while it sends (not Stop). */
const sendButton = (chat: Locator) => chat.locator('button[part="send-button"]', { hasText: /^Send$/ });

/** Points the reloaded demo page's widget at the conversation it showed before (the demo mints a new one per load). */
async function reopen(page: Page, id: string, token: string): Promise<void> {
  await waitInPage(page, READY);
  await page.locator('parley-chat').evaluate(
    (el, [conversation, fresh]) => {
      el.setAttribute('conversation-id', conversation ?? '');
      el.setAttribute('token', fresh ?? '');
    },
    [id, token],
  );
}

// The operator console (/console) in a real Chromium against a real listening app: the operator signs in with
// an API key, sees a conversation an end user started through the public family, opens it, takes it over and
// replies (the end user's messages show the operator as author), sees the user's next message arrive live,
// hands back and the agent answers again; approves and denies calls waiting for the operator; cancels a
// paused turn; terminates. Screenshots light and dark at 390 and 1280 px, and axe finds no violation in either.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { axeViolations, describeViolations } from '../helpers/axe.ts';
import { browserSkip, recordCspViolations, useBrowser, useDemoApp } from '../helpers/browser.ts';
import { publicClient, startConversation } from '../helpers/conversations.ts';
import { startToolReceiver, type ToolReceiver } from '../helpers/tool-receiver.ts';
import { waitFor } from '../helpers/wait.ts';

const ARTIFACTS = join(import.meta.dirname, '../../test-artifacts');

/** The first `count` events of a conversation event stream, exactly as the server wrote them. */
async function readEvents(url: string, apiKey: string, count: number): Promise<string> {
  const res = await fetch(url, { headers: { 'x-api-key': apiKey } });
  assert.ok(res.body, 'a stream');
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of res.body) {
    text += decoder.decode(chunk, { stream: true });
    const events = text.split('\n\n').filter((block) => /^id: /m.test(block));
    // Leaving the loop cancels the body, which closes the connection.
    if (events.length >= count) return `${events.slice(0, count).join('\n\n')}\n\n`;
  }
  throw new Error(`the stream ended before ${count} events`);
}
const refund = (value: string) => `Refund please [[tool:refund ${JSON.stringify({ value })}]]`;

describe('the operator console', { skip: browserSkip }, () => {
  const browser = useBrowser();
  let receiver: ToolReceiver | undefined;
  const cleanups: (() => unknown)[] = [];
  after(async () => {
    for (const fn of cleanups) await fn();
  });
  const app = useDemoApp({
    delayMs: 0,
    agent: async () => {
      receiver = await startToolReceiver({ after: (fn) => void cleanups.push(fn as () => unknown) });
      return {
        name: 'Demo',
        handoff: { enabled: true, user_can_request: true },
        tools: [
          {
            name: 'refund',
            description: 'Refunds an order.',
            input_schema: { type: 'object', properties: { value: { type: 'string' } } },
            url: `${receiver.url}/refund`,
            approval: 'operator',
          },
        ],
      };
    },
  });

  /** A conversation started by the integrator, and its end user's requests (the session token). */
  async function conversation() {
    const started = await startConversation(app, 'demo');
    const user = publicClient(app, started.conversation.id, started.session_token);
    return { id: started.conversation.id, user };
  }

  async function signIn(page: Page) {
    await page.goto(`${app.url}/console`);
    await page.getByLabel('API key').fill(app.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
  }

  async function open(page: Page, id: string) {
    await page.locator(`button.session[data-id="${id}"]`).click();
    await page.getByRole('heading', { name: `Session ${id}` }).waitFor();
  }

  const transcript = (page: Page) => page.getByRole('log', { name: 'Conversation' });

  it('takes a conversation over, replies as an operator, follows the user live and hands it back', async (t) => {
    const page = await browser.page(t);
    const violations = await recordCspViolations(page);
    const { id, user } = await conversation();
    assert.equal((await user.post('/messages', { content: 'Hello there' })).statusCode, 201);
    await signIn(page);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('parley-console-key')), app.apiKey);
    await open(page, id);
    assert.equal(await page.evaluate('document.activeElement.id'), 'session-title', 'focus on the session');
    await transcript(page).getByText('Hello there', { exact: true }).waitFor();
    await transcript(page).getByText('You said: "Hello there".').waitFor();

    await page.getByRole('button', { name: 'Take over' }).click();
    await page.getByRole('button', { name: 'Hand back' }).waitFor();
    // The list, filtered to what people handle, shows it.
    await page.getByLabel('Handled by').selectOption('humans');
    await page.locator(`button.session[data-id="${id}"] .badge.humans`).waitFor();
    await page.getByLabel('Your name, shown to the user with your replies').fill('Dana');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.getByLabel('Reply as Dana').fill('Dana here: your refund is on its way.');
    await page.getByRole('button', { name: 'Send reply' }).click();
    await transcript(page).getByText('Dana here: your refund is on its way.').waitFor();
    const seen = (await user.get('/messages')).json().items as { role: string; author: unknown }[];
    assert.deepEqual(seen.at(-1)?.author, { id: 'op_dana', name: 'Dana' });
    assert.equal(seen.at(-1)?.role, 'assistant');

    // The user's next message arrives in the console through the event stream, without a reload.
    assert.equal((await user.post('/messages', { content: 'Thank you, Dana!' })).statusCode, 201);
    await transcript(page).getByText('Thank you, Dana!').waitFor();
    // And is read out: the page's live region says it.
    await page.locator('[aria-live="polite"]', { hasText: 'User: Thank you, Dana!' }).waitFor();

    await page.getByRole('button', { name: 'Hand back' }).click();
    await page.getByRole('button', { name: 'Take over' }).waitFor();
    assert.equal((await user.post('/messages', { content: 'Is the agent back?' })).statusCode, 201);
    await transcript(page).getByText('You said: "Is the agent back?".').waitFor();
    assert.deepEqual(await violations(), []);
  });

  it('follows the conversation again after its stream breaks, from the last event id, each message once', async (t) => {
    const page = await browser.page(t);
    const { id, user } = await conversation();
    assert.equal((await user.post('/messages', { content: 'Before the break' })).statusCode, 201);
    // The first connection is served the session's first two events as the server sent them, then ends.
    const path = `/v1/agents/sessions/${id}/events`;
    const firstTwo = await readEvents(`${app.url}${path}`, app.apiKey, 2);
    const lastEventIds: (string | undefined)[] = [];
    await page.route(`**${path}`, async (route, request) => {
      lastEventIds.push(request.headers()['last-event-id']);
      if (lastEventIds.length === 1) {
        await route.fulfill({ status: 200, contentType: 'text/event-stream', body: firstTwo });
      } else await route.continue();
    });
    await signIn(page);
    await open(page, id);
    await transcript(page).getByText('You said: "Before the break".').waitFor();
    await waitFor('a second connection', () => lastEventIds.length >= 2);
    assert.deepEqual(lastEventIds.slice(0, 2), [undefined, '2']);
    assert.equal((await user.post('/messages', { content: 'After the break' })).statusCode, 201);
    await transcript(page).getByText('You said: "After the break".').waitFor();
    const shown = await transcript(page)
      .locator('li.msg')
      .evaluateAll((items) => items.map((i) => i.getAttribute('data-id')));
    assert.equal(shown.length, 4);
    assert.equal(new Set(shown).size, 4, 'no message twice');
  });

  it('approves one call and denies another, each waiting for the operator', async (t) => {
    const page = await browser.page(t);
    await signIn(page);
    // Started after the sign-in: the list shows it by reading its first page again.
    const { id, user } = await conversation();
    await open(page, id);
    assert.equal((await user.post('/messages', { content: refund('order 1') })).statusCode, 202);
    await page.getByRole('button', { name: 'Approve refund' }).click();
    await waitFor('the approved call to run', () =>
      (receiver?.requests ?? []).some((r) => r.body?.session_id === id),
    );
    await transcript(page).getByText('Tool refund answered').waitFor();
    await page.getByRole('heading', { name: 'Waiting for a decision' }).waitFor({ state: 'detached' });

    assert.equal((await user.post('/messages', { content: refund('order 2') })).statusCode, 202);
    await page.getByRole('button', { name: 'Deny refund' }).click();
    await transcript(page).getByText('Tool refund failed').waitFor();
    const calls = (receiver?.requests ?? []).filter((r) => r.body?.session_id === id);
    assert.equal(calls.length, 1, 'the denied call never ran');
  });

  it('cancels a paused turn, then terminates the session', async (t) => {
    const page = await browser.page(t);
    const { id, user } = await conversation();
    await signIn(page);
    await open(page, id);
    assert.equal((await user.post('/messages', { content: refund('order 3') })).statusCode, 202);
    await page.getByRole('button', { name: 'Approve refund' }).waitFor();
    await page.getByRole('button', { name: 'Cancel turn' }).click();
    await transcript(page).getByText('The turn was cancelled').waitFor();
    await page.getByRole('button', { name: 'Approve refund' }).waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'Terminate…' }).click();
    await page.getByRole('button', { name: 'Confirm terminate' }).click();
    await transcript(page).getByText('The session was closed').waitFor();
    const session = (await user.get('')).json();
    assert.equal(session.status, 'closed');
    assert.equal(await page.getByRole('button', { name: 'Hand back' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Take over' }).isDisabled(), true);
  });

  it('opens on the session list when the address names no session it can read (a hand-edited hash)', async (t) => {
    const page = await browser.page(t);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await signIn(page);
    await page.goto(`${app.url}/console#/sessions/%E0%A4%A`);
    await page.reload();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    assert.deepEqual(errors, []);
  });

  it('loads older sessions by cursor with Load more, each once, and works from the keyboard', async (t) => {
    const page = await browser.page(t);
    for (let i = 0; i < 21; i++) await startConversation(app, 'demo');
    await signIn(page);
    const sessions = page.locator('button.session');
    await waitFor('the first page', async () => (await sessions.count()) === 20);
    const more = page.getByRole('button', { name: 'Load more' });
    await more.focus();
    await page.keyboard.press('Enter');
    await waitFor('the next page', async () => (await sessions.count()) > 20);
    const ids = await sessions.evaluateAll((buttons) => buttons.map((b) => b.getAttribute('data-id')));
    assert.equal(new Set(ids).size, ids.length, 'no session twice');
    assert.equal(
      await page.evaluate('document.activeElement.dataset.id'),
      ids[20],
      'focus on the first loaded',
    );
    // Enter on a session opens it, and the heading takes the focus.
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Session ${ids[20]}` }).waitFor();
    assert.equal(await page.evaluate('document.activeElement.id'), 'session-title');
  });

  for (const colorScheme of ['light', 'dark'] as const) {
    it(`has no axe violation and is screenshotted in ${colorScheme} at 390 and 1280 px`, async (t) => {
      const page = await browser.page(t);
      await page.emulateMedia({ colorScheme });
      const { id, user } = await conversation();
      await user.post('/messages', { content: 'Where is my order?' });
      await user.post('/messages', { content: refund('order 4') });
      await page.setViewportSize({ width: 1280, height: 900 });
      await signIn(page);
      assert.deepEqual(await axeViolations(page).then(describeViolations), '');
      await open(page, id);
      await page.getByRole('button', { name: 'Approve refund' }).waitFor();
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, `console-${colorScheme}-1280.png`), fullPage: true });
      assert.equal(describeViolations(await axeViolations(page)), '');
      await page.setViewportSize({ width: 390, height: 844 });
      await page.getByRole('button', { name: 'Approve refund' }).waitFor();
      await page.screenshot({ path: join(ARTIFACTS, `console-${colorScheme}-390.png`), fullPage: true });
      assert.equal(describeViolations(await axeViolations(page)), '');
      const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
      assert.ok(width <= 390, `nothing wider than the screen (${width} px)`);
      await page.getByRole('button', { name: '← All sessions' }).click();
      await page.getByRole('heading', { name: 'Sessions' }).waitFor();
      await page.screenshot({ path: join(ARTIFACTS, `console-${colorScheme}-390-list.png`), fullPage: true });
      assert.equal(describeViolations(await axeViolations(page)), '');
    });
  }
});

// A person in the conversation, end to end in two Chromium pages against one listening app: the end user chats
// in /demo's widget; an operator signs in to /console, finds that conversation, takes it over and replies; the
// reply appears in the widget within a second with the operator's name; the user's answer appears in the
// console; the operator hands back and the agent answers the user again, in both pages.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { browserSkip, recordCspViolations, useBrowser, useDemoApp, waitInPage } from '../helpers/browser.ts';

const READY = `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`;

describe('an operator and an end user in one conversation', { skip: browserSkip }, () => {
  const browser = useBrowser();
  const demo = useDemoApp({ delayMs: 10 });
  let operatorKey = '';
  before(async () => {
    // The demo page's conversations belong to the tenant `demo`: the operator's key is one of that tenant.
    operatorKey = await demo.createKey('demo');
  });

  async function userPage(page: Page) {
    await page.goto(`${demo.url}/demo`);
    await waitInPage(page, READY);
    const chat = page.locator('parley-chat');
    const input = page.getByRole('textbox', { name: 'Message' });
    const say = async (text: string) => {
      await input.fill(text);
      await input.press('Enter');
    };
    return { chat, say, id: (await chat.getAttribute('conversation-id')) ?? '' };
  }

  async function consolePage(page: Page) {
    await page.goto(`${demo.url}/console`);
    await page.getByLabel('API key').fill(operatorKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    return page.getByRole('log', { name: 'Conversation' });
  }

  it('takes over from the console, replies into the open widget within a second, and hands back to the agent', async (t) => {
    const widgetPage = await browser.page(t);
    const consoleTab = await browser.page(t);
    const violations = [await recordCspViolations(widgetPage), await recordCspViolations(consoleTab)];

    const user = await userPage(widgetPage);
    await user.say('Hello, I need help with an order');
    await user.chat.getByText('You said: "Hello, I need help with an order"').waitFor();

    const transcript = await consolePage(consoleTab);
    // The conversation the widget started is in the list (newest first): the operator opens it.
    await consoleTab.locator(`button.session[data-id="${user.id}"]`).click();
    await consoleTab.getByRole('heading', { name: `Session ${user.id}` }).waitFor();
    await transcript.getByText('Hello, I need help with an order', { exact: true }).waitFor();

    await consoleTab.getByRole('button', { name: 'Take over' }).click();
    await consoleTab.getByRole('button', { name: 'Hand back' }).waitFor();
    await user.chat.locator('.event', { hasText: 'A person takes over this conversation' }).waitFor();
    await consoleTab.getByLabel('Your name, shown to the user with your replies').fill('Dana');
    await consoleTab.getByRole('button', { name: 'Save name' }).click();
    await consoleTab.getByLabel('Reply as Dana').fill('Dana here: which order is it?');
    const sent = Date.now();
    await consoleTab.getByRole('button', { name: 'Send reply' }).click();
    const reply = user.chat.locator('.msg.assistant[data-operator]', {
      hasText: 'Dana here: which order is it?',
    });
    await reply.waitFor({ timeout: 1000 });
    const waited = Date.now() - sent;
    assert.ok(waited < 1000, `the reply took ${waited} ms to reach the widget`);
    assert.equal(await reply.locator('.author').textContent(), 'Dana');

    // The user's answer reaches the console live; no model answers it while people handle the conversation.
    await user.say('Order A-1042, thank you Dana');
    await transcript.getByText('Order A-1042, thank you Dana').waitFor();
    assert.equal(await user.chat.getByText('You said: "Order A-1042').count(), 0);

    await consoleTab.getByRole('button', { name: 'Hand back' }).click();
    await consoleTab.getByRole('button', { name: 'Take over' }).waitFor();
    await user.chat.locator('.event', { hasText: 'The agent answers again.' }).waitFor();
    await user.say('Is the agent back?');
    await user.chat.getByText('You said: "Is the agent back?"').waitFor();
    await transcript.getByText('You said: "Is the agent back?".').waitFor();

    for (const recorded of violations) assert.deepEqual(await recorded(), []);
  });
});

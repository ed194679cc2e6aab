// How <parley-chat> looks and speaks, in a real Chromium on the /demo page: an agent's Markdown shown safely,
// the typing indicator, dark mode and the theme attribute, the page's strings, the feedback form only when
// asked for or at the end (the newest reply still in sight on a phone), the launcher bubble, the greeting and
// the times, a new conversation after the end; screenshots light and dark at phone and desktop widths, and
// axe-core finding nothing on /demo in either scheme.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { axeViolations, describeViolations } from '../helpers/axe.ts';
import { browserSkip, useBrowser, useDemoApp, waitInPage } from '../helpers/browser.ts';

const ARTIFACTS = join(import.meta.dirname, '../../test-artifacts');
const READY = `!document.querySelector('parley-chat').shadowRoot.querySelector('textarea').disabled`;

async function openDemo(page: Page, url: string, query = '') {
  await page.goto(`${url}/demo${query}`);
  await waitInPage(page, READY);
  const chat = page.locator('parley-chat');
  const input = page.getByRole('textbox', { name: 'Message' });
  return { chat, input };
}

/** The computed background of the widget's panel. */
const panelBackground = (page: Page) =>
  page.evaluate(
    `getComputedStyle(document.querySelector('parley-chat').shadowRoot.querySelector('.chat')).backgroundColor`,
  );

/** Runs `js` on the element (`el` in it), in the page. */
const onChat = (page: Page, js: string) =>
  page.evaluate(`(() => { const el = document.querySelector('parley-chat'); ${js}; })()`);

describe('the widget, as people see it', { skip: browserSkip }, () => {
  const browser = useBrowser();
  const demo = useDemoApp({ delayMs: 5 });

  it("shows the agent's Markdown as formatting, and HTML or javascript: links in it as text, never as markup", async (t) => {
    const page = await browser.page(t);
    const { chat, input } = await openDemo(page, demo.url);
    const said = [
      '**bold** and *italic* and `code`, [a site](https://example.com/a) and [bad](javascript:alert(1))',
      '- one',
      '- two',
      '```',
      '<b>not bold</b>',
      '```',
      '<img src=x onerror="window.pwned=1"> <script>window.pwned=2</script>',
    ].join('\n');
    await input.fill(said);
    await input.press('Enter');
    const reply = chat.locator('.msg.assistant[data-id]').last();
    await reply.locator('ul').waitFor();
    assert.equal(await reply.locator('strong').first().textContent(), 'bold');
    assert.equal(await reply.locator('em').textContent(), 'italic');
    assert.equal(await reply.locator('p code').textContent(), 'code');
    assert.deepEqual(await reply.locator('li').allTextContents(), ['one', 'two']);
    assert.equal(await reply.locator('pre code').textContent(), '<b>not bold</b>');
    const links = reply.locator('a');
    assert.equal(await links.count(), 1, 'only the https link is a link');
    assert.equal(await links.getAttribute('href'), 'https://example.com/a');
    assert.equal(await links.getAttribute('target'), '_blank');
    assert.match((await links.getAttribute('rel')) ?? '', /\bnoopener\b/);
    assert.equal(await reply.locator('img, script, b').count(), 0, 'no element from the text');
    const text = (await reply.textContent()) ?? '';
    assert.ok(text.includes('[bad](javascript:alert(1))'), text);
    assert.ok(text.includes('<img src=x onerror="window.pwned=1">'), text);
    assert.equal(await page.evaluate('window.pwned'), undefined);
  });

  it('shows times on messages and the greeting first', async (t) => {
    const page = await browser.page(t);
    const { chat, input } = await openDemo(page, demo.url);
    assert.match((await chat.locator('.msg.greeting').textContent()) ?? '', /Hello! Ask me anything/);
    await input.fill('What time is it?');
    await input.press('Enter');
    await chat.locator('.msg.assistant[data-id] time').waitFor();
    assert.match((await chat.locator('.msg.user time').getAttribute('datetime')) ?? '', /^\d{4}-\d\d-\d\dT/);
  });

  it('takes its strings from the strings attribute and property', async (t) => {
    const page = await browser.page(t);
    const { chat, input } = await openDemo(page, demo.url);
    await onChat(page, `el.setAttribute('strings', '{"send":"Envoyer","placeholder":"Écrivez…"}')`);
    await chat.getByRole('button', { name: 'Envoyer' }).waitFor();
    assert.equal(await input.getAttribute('placeholder'), 'Écrivez…');
    await onChat(page, `el.strings = { endChat: 'Terminer', message: 'Votre message' }`);
    await chat.getByRole('button', { name: 'Terminer' }).waitFor();
    await page.getByRole('textbox', { name: 'Votre message' }).waitFor();
    // The property replaces the strings: Send is English again.
    await chat.getByRole('button', { name: 'Send' }).waitFor();
  });

  it('is dark where the system asks for it unless theme says otherwise', async (t) => {
    const page = await browser.page(t);
    await page.emulateMedia({ colorScheme: 'dark' });
    await openDemo(page, demo.url);
    assert.equal(await panelBackground(page), 'rgb(22, 25, 29)');
    await onChat(page, `el.setAttribute('theme', 'light')`);
    assert.equal(await panelBackground(page), 'rgb(255, 255, 255)');
    await page.emulateMedia({ colorScheme: 'light' });
    await onChat(page, `el.setAttribute('theme', 'dark')`);
    assert.equal(await panelBackground(page), 'rgb(22, 25, 29)');
    // An integrator's custom property wins.
    await onChat(page, `el.style.setProperty('--parley-bg', '#102030')`);
    assert.equal(await panelBackground(page), 'rgb(16, 32, 48)');
  });

  it('offers feedback only when asked for, keeping the newest reply in sight at 390 px', async (t) => {
    const page = await browser.page(t);
    await page.setViewportSize({ width: 390, height: 844 });
    const { chat, input } = await openDemo(page, demo.url);
    for (const text of ['One', 'Two', 'Three']) {
      await input.fill(text);
      await input.press('Enter');
      await chat.getByText(`You said: "${text}"`).waitFor();
    }
    assert.equal(await chat.locator('form.feedback').count(), 0, 'not offered on its own');
    await chat.getByRole('button', { name: 'Rate this conversation' }).click();
    await chat.locator('form.feedback').waitFor();
    const newest = await chat.locator('.msg.assistant').last().boundingBox();
    const log = await chat.locator('.log').boundingBox();
    const form = await chat.locator('form.feedback').boundingBox();
    assert.ok(newest && log && form);
    assert.ok(
      newest.y >= log.y && newest.y + newest.height <= log.y + log.height + 1,
      'the reply is in the log',
    );
    assert.ok(newest.y + newest.height <= form.y, 'the form is below the reply, not over it');
    assert.ok(log.y + log.height <= form.y + 1, 'the form does not cover the log');
  });

  it('offers feedback at the end with feedback="end", and starts a new conversation from the page', async (t) => {
    const page = await browser.page(t);
    const { chat } = await openDemo(page, demo.url);
    await onChat(page, `el.setAttribute('feedback', 'end')`);
    assert.equal(await chat.getByRole('button', { name: 'Rate this conversation' }).count(), 0);
    const first = await chat.getAttribute('conversation-id');
    await chat.getByRole('button', { name: 'End chat' }).click();
    await chat.getByRole('button', { name: 'End', exact: true }).click();
    await chat.locator('form.feedback').waitFor();
    await chat.getByRole('button', { name: 'Start a new conversation' }).click();
    // The input may still be enabled from the old conversation for a moment: the new one's id is the sign.
    await waitInPage(
      page,
      `document.querySelector('parley-chat').getAttribute('conversation-id') !== ${JSON.stringify(first)}`,
    );
    await waitInPage(page, READY);
    const second = await chat.getAttribute('conversation-id');
    assert.ok(second && second !== first, 'a new conversation');
    assert.equal(await chat.locator('.msg').count(), 1, 'only the greeting');
    const input = page.getByRole('textbox', { name: 'Message' });
    await input.fill('Hi again');
    await input.press('Enter');
    await chat.getByText('You said: "Hi again"').waitFor();
  });

  it('opens and closes as a launcher bubble, by mouse and keyboard, Escape closing it', async (t) => {
    const page = await browser.page(t);
    await openDemo(page, demo.url, '?launcher=true');
    const launcher = page.getByRole('button', { name: 'Close the chat' });
    assert.equal(await launcher.getAttribute('aria-expanded'), 'true');
    await launcher.click();
    const open = page.getByRole('button', { name: 'Open the chat' });
    assert.equal(await open.getAttribute('aria-expanded'), 'false');
    assert.equal(await page.getByRole('textbox', { name: 'Message' }).isVisible(), false);
    await open.focus();
    await page.keyboard.press('Enter');
    await waitInPage(
      page,
      `document.querySelector('parley-chat').shadowRoot.activeElement?.id === 'parley-input'`,
    );
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Open the chat' }).waitFor();
    assert.equal(await page.getByRole('textbox', { name: 'Message' }).isVisible(), false);
    assert.equal(
      await page.evaluate(`document.querySelector('parley-chat').shadowRoot.activeElement?.className`),
      'launcher',
    );
  });
});

// An app of its own: /demo takes 10 loads a minute from one address.
describe('the widget in light and dark', { skip: browserSkip }, () => {
  const browser = useBrowser();
  const demo = useDemoApp({ delayMs: 5 });

  it('is saved as screenshots light and dark at 390 and 1280 px (and as a launcher), and axe finds nothing on /demo in either', async (t) => {
    await mkdir(ARTIFACTS, { recursive: true });
    for (const scheme of ['light', 'dark'] as const) {
      for (const width of [390, 1280]) {
        const page = await browser.page(t);
        await page.emulateMedia({ colorScheme: scheme });
        await page.setViewportSize({ width, height: 900 });
        const { chat, input } = await openDemo(page, demo.url);
        await input.fill('Show me **Markdown**:\n- a list\n- with `code`');
        await input.press('Enter');
        await chat.locator('.msg.assistant[data-id] li').first().waitFor();
        await page.screenshot({ path: join(ARTIFACTS, `widget-${scheme}-${width}.png`), fullPage: true });
        if (width === 1280) {
          const violations = await axeViolations(page);
          assert.deepEqual(violations, [], `${scheme}: ${describeViolations(violations)}`);
        }
      }
      // The launcher's panel, open over the page on a phone.
      const page = await browser.page(t);
      await page.emulateMedia({ colorScheme: scheme });
      await page.setViewportSize({ width: 390, height: 844 });
      await openDemo(page, demo.url, '?launcher=true');
      await page.screenshot({ path: join(ARTIFACTS, `widget-launcher-${scheme}-390.png`) });
      const violations = await axeViolations(page);
      assert.deepEqual(violations, [], `launcher, ${scheme}: ${describeViolations(violations)}`);
    }
  });
});

describe('the widget awaiting a slow reply', { skip: browserSkip }, () => {
  const browser = useBrowser();
  const demo = useDemoApp({ delayMs: 400 });

  it('shows a typing indicator, announced politely, until the first words arrive', async (t) => {
    const page = await browser.page(t);
    const { chat, input } = await openDemo(page, demo.url);
    await input.fill('Take your time');
    await input.press('Enter');
    const typing = chat.locator('.typing');
    await typing.locator('.dots').waitFor();
    assert.equal(await typing.getAttribute('aria-live'), 'polite');
    assert.equal(await typing.textContent(), 'The agent is writing…');
    await chat.locator('.msg.assistant[data-streaming]').waitFor();
    assert.equal(await typing.textContent(), '');
  });
});

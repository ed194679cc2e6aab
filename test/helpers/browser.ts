// Browser tests: Debian's Chromium (never a downloaded browser) driven by playwright-core, one launch per test
// file and a fresh context per test; and a real listening app serving /demo on a `demo` agent that streams one
// word at a time, so that a reply arrives over several deltas.
import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { buildTestApp, makeTempDir, type TestApp } from './app.ts';

export const CHROMIUM = '/usr/bin/chromium';

/**
 * Why the browser tests cannot run here, or null when they can. Outside CI a missing browser skips them with
 * this reason; under CI=true it is not given, so the launch fails and so do the tests.
 */
export const browserSkip: string | false =
  !existsSync(CHROMIUM) && process.env.CI !== 'true'
    ? `${CHROMIUM} is missing (apt-get install chromium); browser tests skipped`
    : false;

export interface BrowserHandle {
  /** A page in a new context of the file's browser; the context is closed when the test ends. */
  page(t: { after(fn: () => Promise<void>): void }): Promise<Page>;
}

/** The file's browser: launched in a before() hook, closed in an after() hook. */
export function useBrowser(): BrowserHandle {
  let browser: Browser | undefined;
  before(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing (apt-get install chromium). Under CI=true that is a failure.`);
    }
    // Root (as in CI's container) cannot use Chromium's sandbox.
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  });
  after(() => browser?.close());
  return {
    async page(t) {
      if (!browser) throw new Error('the browser is launched in a before() hook');
      const context: BrowserContext = await browser.newContext();
      t.after(() => context.close());
      return context.newPage();
    },
  };
}

export interface DemoApp extends TestApp {
  /** `http://127.0.0.1:<port>` of the listening app. */
  url: string;
  port: number;
}

export interface DemoAppOptions {
  /** The pause before each word of the `demo` agent's reply. */
  delayMs?: number;
  /** More fields of the `demo` agent (tools, expose_tools, …), read in the before() hook that builds the app. */
  agent?: () => Promise<Record<string, unknown>>;
  /** More environment of the app. */
  env?: Record<string, string>;
}

/** The app with PARLEY_DEMO on, listening on a loopback port; its `demo` agent says a word every `delayMs`. */
export function useDemoApp({ delayMs = 40, agent, env = {} }: DemoAppOptions = {}): DemoApp {
  let built: DemoApp | undefined;
  let dir: string | undefined;
  before(async () => {
    dir = await makeTempDir('parley-browser-');
    const agents = join(dir, 'agents.json');
    const demo = {
      id: 'demo',
      instructions: 'You are a friendly demo agent.',
      scripted: { token_delay_ms: delayMs },
      ...(await agent?.()),
    };
    await writeFile(agents, JSON.stringify({ agents: [demo] }));
    const app = await buildTestApp({ PARLEY_DEMO: 'true', PARLEY_AGENTS_FILE: agents, ...env });
    await app.app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.app.server.address();
    if (!address || typeof address === 'string') throw new Error('the app has no port');
    built = Object.assign(app, { url: `http://127.0.0.1:${address.port}`, port: address.port });
  });
  after(async () => {
    await built?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const current = (): DemoApp => {
    if (!built) throw new Error('the demo app is built in a before() hook');
    return built;
  };
  return new Proxy({} as DemoApp, { get: (_, key) => Reflect.get(current(), key) });
}

/**
 * Installs, in the page, a record of every text the streaming reply bubble shows (window.__replyStates), so a
 * test can see that a reply grew delta by delta and never held text twice.
 */
export const RECORD_REPLY_STATES = `(() => {
  const root = document.querySelector('parley-chat').shadowRoot;
  const states = [];
  window.__replyStates = states;
  new MutationObserver(() => {
    const text = root.querySelector('.msg.assistant[data-streaming] .text');
    if (text && text.textContent !== '' && states[states.length - 1] !== text.textContent) states.push(text.textContent);
  }).observe(root, { subtree: true, childList: true, characterData: true });
})()`;

/**
 * Collects what the page's Content-Security-Policy refuses (`securitypolicyviolation` events, in shadow roots
 * too, and Chromium's console reports of them) from the next navigation on; read it with the returned function.
 */
export async function recordCspViolations(page: Page): Promise<() => Promise<string[]>> {
  const reported: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) reported.push(message.text());
  });
  await page.addInitScript(`(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__cspViolations.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline') + ' ' + (e.sample || ''));
    }, true);
  })()`);
  return async () => [...((await page.evaluate('window.__cspViolations')) as string[]), ...reported];
}

/**
 * Waits until `expression` (JavaScript of the page) holds. Playwright polls a predicate given as a string by
 * evaluating it in the page, which a page whose policy allows no `eval` (the demo's) refuses: here it is
 * made a function in this process and sent as one.
 */
export function waitInPage(page: Page, expression: string, options: { timeout?: number } = {}) {
  const predicate = new Function(`return (${expression});`) as () => unknown;
  return page.waitForFunction(predicate, undefined, options);
}

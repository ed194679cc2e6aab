// The reference at /docs (Swagger UI) in a real Chromium under the Content-Security-Policy Parley sends with it:
// the operations render, one expands and is tried against the server, and the policy refuses nothing
// (Swagger UI's top bar, whose logo carries an inline stylesheet, is left out).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { browserSkip, recordCspViolations, useBrowser, useDemoApp } from '../helpers/browser.ts';

describe('the reference at /docs', { skip: browserSkip }, () => {
  const browser = useBrowser();
  const app = useDemoApp({ delayMs: 0 });

  it('renders and runs an operation with nothing refused by its Content-Security-Policy', async (t) => {
    const page = await browser.page(t);
    const violations = await recordCspViolations(page);
    const response = await page.goto(`${app.url}/docs`);
    const headers = response?.headers() ?? {};
    assert.match(String(headers['content-security-policy']), /frame-ancestors 'none'/);
    assert.equal(headers['x-content-type-options'], 'nosniff');
    assert.equal(headers['referrer-policy'], 'no-referrer');
    const health = page.locator('#operations-operations-getHealth');
    await health.locator('.opblock-summary').click();
    await page.getByRole('button', { name: 'Try it out' }).click();
    await page.getByRole('button', { name: 'Execute' }).click();
    await health.locator('.live-responses-table .response-col_status', { hasText: '200' }).waitFor();
    assert.deepEqual(await violations(), []);
  });
});

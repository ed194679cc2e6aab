// Accessibility checks in the browser tests: axe-core (the engine behind Lighthouse's accessibility audit) is
// injected into the page and run over the whole document, open shadow roots included, so a custom element
// such as <parley-chat> is checked as a screen reader would meet it.
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const axeSource: string = createRequire(import.meta.url)('axe-core').source;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** Every axe-core violation on the page as it is now (WCAG 2.x A and AA rules and axe's best practices). */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol rather than as a <script>, so the page's CSP (no inline scripts) holds.
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe and the document are the page's globals, not Node's.
    const page = globalThis as any;
    const result = await page.axe.run(page.document, { resultTypes: ['violations'] });
    // biome-ignore lint/suspicious/noExplicitAny: axe's result objects are plain JSON.
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      nodes: v.nodes.map((n: any) => String(n.target.join(' '))),
    }));
  });
}

/** A readable list of violations for an assertion message. */
export function describeViolations(violations: AxeViolation[]): string {
  return violations.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.join(', ')}`).join('\n');
}

// The headers of every HTML page Parley serves (/demo, its 429 page, /docs): a Content-Security-Policy that
// allows only what the page loads, no framing by other sites, no MIME sniffing and no Referer. A page may hold
// a bearer token (the demo's), so a script injected into it, a frame around it or a Referer must not leak it.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** A CSP from its directives: `{ 'script-src': ["'self'"] }` → `script-src 'self'`. */
export type Policy = Record<string, readonly string[]>;

/** What every page's policy starts from: nothing may load, frame it, post a form or change its base URL. */
export const BASE_POLICY: Policy = {
  'default-src': ["'none'"],
  'base-uri': ["'none'"],
  'form-action': ["'none'"],
  'frame-ancestors': ["'none'"],
};

export function policyHeader(policy: Policy): string {
  return Object.entries({ ...BASE_POLICY, ...policy })
    .map(([directive, sources]) => [directive, ...sources].join(' '))
    .join('; ');
}

/** The CSP source that allows one inline `<script>` or `<style>` whose text is `text`, exactly. */
export const hashSource = (text: string) =>
  `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** Sets the headers of an HTML page on `reply`; `csp` is a policyHeader. */
export function pageHeaders(reply: FastifyReply, csp: string): FastifyReply {
  return reply
    .header('content-security-policy', csp)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer');
}

/** The page headers on every answer of `scope` (for a plugin whose routes are not ours, as /docs). */
export function pageHeadersOnScope(scope: FastifyInstance, policy: Policy): void {
  const csp = policyHeader(policy);
  scope.addHook('onSend', async (_request, reply, payload) => {
    pageHeaders(reply, csp);
    return payload;
  });
}

// The HTML of the demo: the page (the widget on a conversation minted for it) and the page a browser is shown
// when the demo is at one of its bounds, each with the Content-Security-Policy that allows exactly what it
// loads. Their inline script and style never change, so the policy names them by hash.
import { hashSource, type Policy, policyHeader } from '../server/page-headers.ts';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const PAGE_STYLE = `
  body { font-family: system-ui, sans-serif; max-width: 42rem; margin: 2rem auto; padding: 0 1rem; color: #1f2933; }
  parley-chat { --parley-height: 34rem; }
`;

// The refresh shows the conversation's newest token, which is the only one that refreshes it.
const PAGE_SCRIPT = `
  const chat = document.querySelector('parley-chat');
  let token = chat.getAttribute('token');
  chat.refreshToken = async () => {
    const res = await fetch('/demo/token', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ' + token },
      body: JSON.stringify({ conversation_id: chat.getAttribute('conversation-id') }),
    });
    if (!res.ok) throw new Error('Could not refresh the session token (' + res.status + '); reload the page.');
    token = (await res.json()).session_token;
    return token;
  };
`;

/**
 * The page's policy: the widget (`/widget.js`) and the two inline blocks; requests to this origin (the API,
 * the token refresh); images from this origin and the previews of files being uploaded (`blob:`). The
 * widget's own styles are an adopted stylesheet, which the policy does not govern.
 */
const PAGE_POLICY: Policy = {
  'script-src': ["'self'", hashSource(PAGE_SCRIPT)],
  'style-src': [hashSource(PAGE_STYLE)],
  'connect-src': ["'self'"],
  'img-src': ["'self'", 'blob:'],
};
export const DEMO_PAGE_CSP = policyHeader(PAGE_POLICY);

export function demoPage(attributes: Record<string, string>): string {
  const attrs = Object.entries(attributes)
    .map(([name, value]) => ` ${name}="${escapeHtml(value)}"`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parley demo</title>
<script type="module" src="/widget.js"></script>
<style>${PAGE_STYLE}</style>
</head>
<body>
<main>
<h1>Parley demo</h1>
<p>A new conversation with the <code>demo</code> agent, started for this page load. Reload for another one.</p>
<parley-chat${attrs}><span slot="title">Demo agent</span></parley-chat>
</main>
<script type="module">${PAGE_SCRIPT}</script>
</body>
</html>
`;
}

const LIMIT_STYLE = `
  body { font-family: system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; padding: 0 1rem; color: #1f2933; }
`;
/** The bound page: text and one inline style, nothing else. */
export const DEMO_LIMIT_CSP = policyHeader({ 'style-src': [hashSource(LIMIT_STYLE)] });

/** What a browser is shown instead of the demo at one of its bounds: what happened, and when to try again. */
export function demoLimitPage(message: string, retryAfterSeconds: number | null): string {
  const minutes = retryAfterSeconds === null ? null : Math.max(1, Math.ceil(retryAfterSeconds / 60));
  const when =
    minutes === null ? '' : `<p>Try again in ${minutes === 1 ? 'a minute' : `${minutes} minutes`}.</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parley demo: please wait</title>
<style>${LIMIT_STYLE}</style>
</head>
<body>
<main>
<h1>The demo is busy</h1>
<p>${escapeHtml(message)}</p>
${when}
</main>
</body>
</html>
`;
}

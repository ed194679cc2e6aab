// The HTML of the demo: the page (the widget on a conversation minted for it, and what the page shows and
// which agent answers, said plainly) and the page a browser is shown when the demo is at one of its bounds,
// each with the Content-Security-Policy that allows exactly what it loads. Their inline script and style never
// change, so the policy names them by hash.
import { hashSource, type Policy, policyHeader } from '../server/page-headers.ts';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const PAGE_STYLE = `
  body { font-family: system-ui, sans-serif; max-width: 42rem; margin: 2rem auto; padding: 0 1rem; color: #1f2933; background: #fff; line-height: 1.5; }
  code { font-size: 0.95em; }
  a { color: #3550d8; }
  .agent { padding: 0.6rem 0.8rem; border-left: 4px solid #3550d8; background: #eef1f5; }
  parley-chat:not([launcher]) { --parley-height: 34rem; margin: 1rem 0; }
  @media (prefers-color-scheme: dark) {
    body { color: #e6e9ee; background: #0f1114; }
    a { color: #8ea2ff; }
    .agent { border-color: #8ea2ff; background: #1d2127; }
  }
`;

// The refresh shows the conversation's newest token, which is the only one that refreshes it. A new
// conversation (the widget's button, once one has ended) is minted by the demo as an integrator's server would.
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
  chat.newConversation = async () => {
    const res = await fetch('/demo/conversation', { method: 'POST' });
    if (!res.ok) throw new Error('Could not start a new conversation (' + res.status + '); try again later.');
    const started = await res.json();
    token = started.session_token;
    return { conversationId: started.conversation_id, token };
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

/** Which agent answers, said plainly: the built-in scripted one costs nothing and calls no model. */
function agentNote(provider: string): string {
  if (provider === 'scripted') {
    return `<p class="agent"><strong>This demo's agent is Parley's built-in scripted one</strong>: it repeats what
you write and calls no model. To try a real model, give your catalogue an agent <code>demo</code> on a provider
(<code>openai</code>, <code>anthropic</code>, …) and start Parley with <code>PARLEY_DEMO=true</code>. A
model-backed demo stays off unless asked for, because anonymous visitors would spend on it.</p>`;
  }
  return `<p class="agent"><strong>This demo's agent is the catalogue's <code>demo</code> agent on
<code>${escapeHtml(provider)}</code></strong>: every message is a call to that model, served because
<code>PARLEY_DEMO=true</code> asked for it.</p>`;
}

export interface DemoPageOptions {
  /** The `demo` agent's provider. */
  provider: string;
  /** The widget as a launcher bubble in the corner (`?launcher=true`). */
  launcher: boolean;
}

export function demoPage(
  attributes: Record<string, string>,
  { provider, launcher }: DemoPageOptions = { provider: 'scripted', launcher: false },
): string {
  const all: Record<string, string> = {
    ...attributes,
    greeting: 'Hello! Ask me anything. Replies may use **Markdown**.',
    feedback: 'button',
    ...(launcher ? { launcher: '', open: '' } : {}),
  };
  const attrs = Object.entries(all)
    .map(([name, value]) => (value === '' ? ` ${name}` : ` ${name}="${escapeHtml(value)}"`))
    .join('');
  const other = launcher
    ? '<a href="/demo">the widget in the page</a>'
    : '<a href="/demo?launcher=true">the widget as a launcher bubble</a>';
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
<p>A new conversation with the <code>demo</code> agent, started for this page load, in
<code>&lt;parley-chat&gt;</code>. Reload for another one, or end it and start a new one from the widget.</p>
${agentNote(provider)}
<p>What the widget shows: replies as they are written, in Markdown; dots while a reply is awaited; the time of
each message; a greeting; "Rate this conversation" in its header (and the rating again when the conversation
ends); dark colours when your system uses them. When people take the conversation over, it says so, and an
operator's replies (posted to <code>/v1/agents/sessions/{id}/messages</code> with an API key of the tenant
<code>demo</code> and an <code>author</code>) appear here with the operator's name as they are sent. Also:
${other}.</p>
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

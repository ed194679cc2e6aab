// PARLEY_DEMO: GET /demo, a page with <parley-chat> on the `demo` agent, a fresh conversation and token minted
// here at each load (as an integrator's server would, with the same session service), and POST /demo/token,
// the page's token refresh, for conversations of the `demo` tenant only. Tokens name an API key (`kid`) and die
// with it, so the demo tenant has a key of its own whose secret nobody holds (listed as `(demo page)`): it only
// signs these tokens, and the start-up warning that no API key exists does not count it. Anyone may load the
// page, so both routes have a per-address rate limit (each load stores a conversation).
import type { FastifyInstance } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { errorEnvelope, sessionTokenSchema } from '#schemas';
import type { SessionService } from '../../actors/session-service.ts';
import { generateApiKey, hashApiKey } from '../../auth/api-keys.ts';
import type { SessionTokens } from '../../auth/session-tokens.ts';
import { asConversationError } from '../../errors.ts';
import { newId } from '../../ids.ts';
import type { ApiKeyRecord, Store } from '../../store/store.ts';
import { registerRateLimit } from '../server/rate-limit.ts';
import { createsSession } from '../server/route-config.ts';

export const DEMO_TENANT = 'demo';
export const DEMO_AGENT = 'demo';
/** What `keys list` shows as the demo's signing key, and how it is found again. */
export const DEMO_KEY_PREFIX = '(demo page)';
/** Loads of GET /demo per minute from one client address: each one stores a conversation. */
export const DEMO_PAGES_PER_MINUTE = 10;
/** POST /demo/token per minute from one client address. */
export const DEMO_TOKENS_PER_MINUTE = 30;

const isDemoKey = (k: ApiKeyRecord) => k.prefix === DEMO_KEY_PREFIX && k.revoked_at === null;

/** The demo page's live signing keys: they open nothing, so they do not count as a usable API key. */
export async function demoKeyCount(store: Store): Promise<number> {
  return (await store.listApiKeys(DEMO_TENANT)).filter(isDemoKey).length;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const seconds = z.coerce.number().positive().max(86_400).optional();

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
<style>
  body { font-family: system-ui, sans-serif; max-width: 42rem; margin: 2rem auto; padding: 0 1rem; color: #1f2933; }
  parley-chat { --parley-height: 34rem; }
</style>
</head>
<body>
<main>
<h1>Parley demo</h1>
<p>A new conversation with the <code>demo</code> agent, started for this page load. Reload for another one.</p>
<parley-chat${attrs}><span slot="title">Demo agent</span></parley-chat>
</main>
<script type="module">
  const chat = document.querySelector('parley-chat');
  chat.refreshToken = async () => {
    const res = await fetch('/demo/token', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ conversation_id: chat.getAttribute('conversation-id') }),
    });
    if (!res.ok) throw new Error('Could not refresh the session token (' + res.status + ')');
    return (await res.json()).session_token;
  };
</script>
</body>
</html>
`;
}

/**
 * The demo tenant's live signing key: `known` while it is live, else the oldest live one, else a new one (the
 * tenant too). Several processes may create one at the same moment: the tenant's creation is idempotent
 * (a unique violation is read back), and a process whose new key turns out not to be the oldest live one
 * revokes it before signing anything, and uses the oldest.
 */
export async function ensureDemoKey(store: Store, known?: string): Promise<string> {
  if (known && (await store.getApiKey(known))?.revoked_at === null) return known;
  if (!(await store.getTenant(DEMO_TENANT))) {
    await store.createTenant(DEMO_TENANT, 'Demo page').catch(async (err: unknown) => {
      if (!(await store.getTenant(DEMO_TENANT))) throw err;
    });
  }
  // Listed oldest first.
  const live = (await store.listApiKeys(DEMO_TENANT)).find(isDemoKey);
  if (live) return live.id;
  // The key itself is dropped at once: it can sign demo tokens and nothing else.
  const created = await store.createApiKey({
    id: newId('key'),
    tenant_id: DEMO_TENANT,
    hash: hashApiKey(generateApiKey()),
    prefix: DEMO_KEY_PREFIX,
    agents: [DEMO_AGENT],
  });
  const oldest = (await store.listApiKeys(DEMO_TENANT)).find(isDemoKey);
  if (oldest && oldest.id !== created.id) {
    await store.revokeApiKey(created.id);
    return oldest.id;
  }
  return created.id;
}

export interface DemoRoutesOptions {
  store: Store;
  sessions: SessionService;
  tokens: SessionTokens;
  /** Rate-limit counters shared by every process (rateLimitRedis); unset, this process counts alone. */
  redis?: Redis;
}

export const demoRoutes: FastifyPluginAsyncZod<DemoRoutesOptions> = async (app, options) => {
  const { store, sessions, tokens, redis } = options;
  let known: string | undefined;
  let checking: Promise<string> | undefined;
  /** One check-and-create at a time in this process: requests that need the key meanwhile share its answer. */
  const demoKey = (): Promise<string> => {
    checking ??= ensureDemoKey(store, known)
      .then((id) => {
        known = id;
        return id;
      })
      .finally(() => {
        checking = undefined;
      });
    return checking;
  };

  // Each route in a scope of its own, with its own budget per client address.
  await app.register(async (scope: FastifyInstance) => {
    await registerRateLimit(scope, {
      perMinute: DEMO_PAGES_PER_MINUTE,
      key: (request) => `demo-page:${request.ip}`,
      redis,
    });
    scope.withTypeProvider<ZodTypeProvider>().get(
      '/demo',
      {
        config: createsSession,
        schema: {
          hide: true,
          querystring: z.object({
            inactivity_warning_after: seconds,
            inactivity_final_after: seconds,
          }),
        },
      },
      async (request, reply) => {
        const kid = await demoKey();
        const session = await sessions.createSession(DEMO_TENANT, DEMO_AGENT, { context: { page: 'demo' } });
        const { session_token } = await tokens.mint({
          conversationId: session.id,
          tenantId: DEMO_TENANT,
          agentId: DEMO_AGENT,
          keyId: kid,
        });
        const { inactivity_warning_after: warning, inactivity_final_after: final } = request.query;
        const page = demoPage({
          'conversation-id': session.id,
          token: session_token,
          ...(warning !== undefined ? { 'inactivity-warning-after': String(warning) } : {}),
          ...(final !== undefined ? { 'inactivity-final-after': String(final) } : {}),
        });
        // Every load is a new conversation: never cached.
        return reply.header('cache-control', 'no-store').type('text/html; charset=utf-8').send(page);
      },
    );
  });

  await app.register(async (scope: FastifyInstance) => {
    await registerRateLimit(scope, {
      perMinute: DEMO_TOKENS_PER_MINUTE,
      key: (request) => `demo-token:${request.ip}`,
      redis,
    });
    scope.withTypeProvider<ZodTypeProvider>().post(
      '/demo/token',
      {
        schema: {
          hide: true,
          body: z.strictObject({ conversation_id: z.string().min(1).max(200) }),
          response: { 200: sessionTokenSchema, 404: errorEnvelope, 429: errorEnvelope },
        },
      },
      async (request) => {
        const id = request.body.conversation_id;
        const session = await sessions
          .getSession(DEMO_TENANT, id, () => {})
          .catch((err) => {
            throw asConversationError(err, id);
          });
        return tokens.mint({
          conversationId: session.id,
          tenantId: DEMO_TENANT,
          agentId: session.agent_id,
          keyId: await demoKey(),
        });
      },
    );
  });
};

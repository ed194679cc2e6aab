// PARLEY_DEMO: GET /demo, a page with <parley-chat> on the `demo` agent, a fresh conversation and token minted
// here at each load (as an integrator's server would, with the same session service), POST /demo/conversation,
// the next conversation the widget's "new conversation" button asks for, and POST /demo/token, the page's token
// refresh, which takes the conversation's newest token as the bearer and works only while the
// conversation is active. Tokens name an API key (`kid`) and die with it, so the demo tenant has a key of
// its own whose secret nobody holds (listed as `(demo page)`): it only signs these tokens, and the start-up
// warning that no API key exists does not count it. Anyone may load the page: both routes have a per-address rate
// limit, and the page a cap on the conversations every client together starts an hour; a browser that meets
// one is shown a page, not JSON (docs/guides/embedding.md#the-demo-page).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { errorEnvelope, sessionTokenSchema } from '#schemas';
import type { SessionService } from '../../actors/session-service.ts';
import { generateApiKey, hashApiKey } from '../../auth/api-keys.ts';
import type { SessionTokens } from '../../auth/session-tokens.ts';
import type { DemoConfig } from '../../config.ts';
import { AppError, asConversationError } from '../../errors.ts';
import { newId } from '../../ids.ts';
import type { ApiKeyRecord, Store } from '../../store/store.ts';
import { handleError } from '../server/error-handler.ts';
import type { HourlyCap } from '../server/hourly-cap.ts';
import { pageHeaders } from '../server/page-headers.ts';
import { registerRateLimit } from '../server/rate-limit.ts';
import { createsSession } from '../server/route-config.ts';
import { DEMO_LIMIT_CSP, DEMO_PAGE_CSP, demoLimitPage, demoPage } from './demo-page.ts';

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

const seconds = z.coerce.number().positive().max(86_400).optional();

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
  config: DemoConfig;
  /** The conversations every client together may start an hour (shared by the processes with Redis). */
  conversations: HourlyCap;
  /** Rate-limit counters shared by every process (rateLimitRedis); unset, this process counts alone. */
  redis?: Redis;
  /** The `demo` agent's provider: the page says whether it is the scripted one or a model. */
  provider?: string;
}

/** Whether the client takes HTML (a browser's navigation), and so is shown a page rather than JSON. */
function wantsHtml(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').split(',').some((part) => {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    return type.trim() === 'text/html' && !params.some((p) => /^\s*q=0(\.0*)?\s*$/.test(p));
  });
}

/**
 * The page's errors: a browser meeting a limit (429) or a busy service (503) is shown a page that says so and
 * when to come back, with the same status and Retry-After; anything else, and every other client, gets JSON.
 */
function pageErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const busy = error instanceof AppError && (error.statusCode === 429 || error.statusCode === 503);
  if (!busy || !wantsHtml(request)) return handleError(error, request, reply);
  const retryAfter = Number(error.headers?.['retry-after']);
  const message =
    error.code === 'rate_limited'
      ? error.context?.cap
        ? 'So many demo conversations were started this hour that no more can start now.'
        : 'This address has started as many demo conversations as it may for now.'
      : 'The service cannot start a conversation right now.';
  return pageHeaders(reply.code(error.statusCode), DEMO_LIMIT_CSP)
    .headers(error.headers ?? {})
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(demoLimitPage(message, Number.isFinite(retryAfter) ? retryAfter : null));
}

/** The bearer token of a request; 401 `unauthorized` without one. */
function bearerOf(request: FastifyRequest): string {
  const match = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '');
  if (!match?.[1]) {
    throw new AppError(
      'unauthorized',
      "Send the conversation's newest session token as Authorization: Bearer <session_token>.",
      { headers: { 'www-authenticate': 'Bearer realm="parley"' } },
    );
  }
  return match[1];
}

export const demoRoutes: FastifyPluginAsyncZod<DemoRoutesOptions> = async (app, options) => {
  const { store, sessions, tokens, redis, config } = options;
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

  /** A token for the conversation, recorded as its newest when it replaces `previous` (null: the first). */
  const mintNewest = async (conversationId: string, agentId: string, previous: string | null) => {
    const jti = newId('tok');
    const minted = await tokens.mint({
      conversationId,
      tenantId: DEMO_TENANT,
      agentId,
      keyId: await demoKey(),
      jti,
    });
    if (!(await store.replaceSessionToken(conversationId, previous, jti))) {
      throw new AppError(
        'session_token_invalid',
        'Only the newest session token of this conversation refreshes it; reload the page for a new conversation.',
        { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } },
      );
    }
    return minted;
  };

  /** A new demo conversation and its first token, within the hourly cap. */
  const startDemo = async () => {
    await options.conversations.take();
    // The key first: it makes the demo tenant when there is none.
    await demoKey();
    const session = await sessions.createSession(DEMO_TENANT, DEMO_AGENT, { context: { page: 'demo' } });
    const { session_token } = await mintNewest(session.id, DEMO_AGENT, null);
    return { conversation_id: session.id, session_token };
  };

  // Each budget in a scope of its own, per client address: starting conversations, refreshing tokens.
  await app.register(async (scope: FastifyInstance) => {
    scope.setErrorHandler(pageErrors);
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
            launcher: z.enum(['true', 'false']).optional(),
          }),
        },
      },
      async (request, reply) => {
        const started = await startDemo();
        const { inactivity_warning_after: warning, inactivity_final_after: final, launcher } = request.query;
        const page = demoPage(
          {
            'conversation-id': started.conversation_id,
            token: started.session_token,
            ...(warning !== undefined ? { 'inactivity-warning-after': String(warning) } : {}),
            ...(final !== undefined ? { 'inactivity-final-after': String(final) } : {}),
          },
          { provider: options.provider ?? 'scripted', launcher: launcher === 'true' },
        );
        // Every load is a new conversation: never cached.
        return pageHeaders(reply, DEMO_PAGE_CSP)
          .header('cache-control', 'no-store')
          .type('text/html; charset=utf-8')
          .send(page);
      },
    );
    // The widget's "new conversation" button: under the same bounds as a load of the page.
    scope.withTypeProvider<ZodTypeProvider>().post(
      '/demo/conversation',
      {
        config: createsSession,
        schema: {
          hide: true,
          response: {
            200: z.object({ conversation_id: z.string(), session_token: z.string() }),
            429: errorEnvelope,
            503: errorEnvelope,
          },
        },
      },
      async (_request, reply) => reply.header('cache-control', 'no-store').send(await startDemo()),
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
          headers: z.object({ authorization: z.string().optional() }),
          body: z.strictObject({ conversation_id: z.string().min(1).max(200) }),
          response: {
            200: sessionTokenSchema,
            401: errorEnvelope,
            403: errorEnvelope,
            404: errorEnvelope,
            409: errorEnvelope,
            429: errorEnvelope,
          },
        },
      },
      async (request) => {
        const id = request.body.conversation_id;
        // The newest token refreshes even once expired, for as long as the conversation is kept.
        const claims = await tokens.verify(bearerOf(request), store, {
          expiredWithinSeconds: Math.ceil(config.retentionMs / 1000),
        });
        if (claims.tenantId !== DEMO_TENANT || claims.conversationId !== id) {
          throw new AppError('forbidden', 'This session token belongs to another conversation.', {
            context: { conversation_id: id },
          });
        }
        const session = await sessions
          .getSession(DEMO_TENANT, id, () => {})
          .catch((err) => {
            throw asConversationError(err, id);
          });
        if (session.status !== 'active') {
          throw new AppError(session.status === 'closed' ? 'session_closed' : 'session_expired', undefined, {
            context: { session_id: id },
          });
        }
        return mintNewest(session.id, session.agent_id, claims.jti);
      },
    );
  });
};

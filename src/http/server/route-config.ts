// What a route declares in its Fastify `config` for the hooks that act outside it: which session it acts on
// or that it creates one (cluster/forwarding.ts sends the request to that session's owner), and its upload
// limit (reported in a 413). Declared, not guessed from parameter names, so a new route opts in explicitly.
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The path parameter naming the session this route acts on: served by the owner of its shard. */
    session?: 'session_id' | 'conversation_id';
    /** The session this route acts on, read from its path parameters when no parameter is the session id. */
    sessionOf?: (params: Record<string, string>) => string | null;
    /** The session this route acts on, read from its parsed JSON body (routed before validation). */
    sessionOfBody?: (body: unknown) => string | null;
    /** The route creates a session: served by a process that owns shards, where its id is drawn. */
    createsSession?: boolean;
    /** Byte limit of this route's upload, reported in a 413's context. */
    uploadLimitBytes?: number;
  }
}

/** A server-side route on `/sessions/:session_id…`. */
export const onSession = { session: 'session_id' } as const;

/** A route on `/conversations/:conversation_id…` (either family). */
export const onConversation = { session: 'conversation_id' } as const;

/** A route that creates a session (sessions, conversations, run). */
export const createsSession = { createsSession: true } as const;

/**
 * Refuses, at start, a route whose path names a session but that does not declare it: in cluster mode such
 * a route would be served by whichever process received it, not by the session's owner.
 */
export function requireDeclaredSessions(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const named = /:(session_id|conversation_id)\b/.exec(route.url)?.[1];
    if (named && route.config?.session !== named) {
      throw new Error(
        `Route ${route.method} ${route.url} names :${named} but does not declare config.session`,
      );
    }
  });
}

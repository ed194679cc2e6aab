// Session-token authentication for the public family: `Authorization: Bearer <token>` → the one
// conversation the token grants. API keys are not accepted here, and a token only opens its own conversation.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { conversationParams } from '#schemas';
import type { SessionTokenClaims, SessionTokens } from '../../auth/session-tokens.ts';
import { AppError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';

declare module 'fastify' {
  interface FastifyRequest {
    sessionToken: SessionTokenClaims | null;
  }
}

const missingToken = (message: string) =>
  new AppError('unauthorized', message, { headers: { 'www-authenticate': 'Bearer realm="parley"' } });

/** Adds an onRequest hook to `scope` that authenticates every route registered in it. */
export function requireSessionToken(
  scope: FastifyInstance,
  tokens: SessionTokens,
  keys: Pick<Store, 'getApiKey'>,
) {
  scope.decorateRequest('sessionToken', null);
  scope.addHook('onRequest', async (request) => {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
    if (!match?.[1]) {
      throw missingToken(
        request.headers['x-api-key'] !== undefined
          ? 'Public conversation routes take a session token, not an API key: send Authorization: Bearer <session_token>.'
          : 'Send the session token as Authorization: Bearer <session_token>.',
      );
    }
    const claims = await tokens.verify(match[1], keys);
    const path = conversationParams.safeParse(request.params);
    if (path.success && path.data.conversation_id !== claims.conversationId) {
      throw new AppError('forbidden', 'This session token belongs to another conversation.', {
        context: { conversation_id: path.data.conversation_id },
      });
    }
    request.sessionToken = claims;
  });
}

/** The verified token of the request; routes behind requireSessionToken only. */
export function tokenOf(request: FastifyRequest): SessionTokenClaims {
  if (!request.sessionToken)
    throw missingToken('Send the session token as Authorization: Bearer <session_token>.');
  return request.sessionToken;
}

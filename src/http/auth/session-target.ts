// How a request names the session it acts on, in each family: with an API key, the path's session in the
// key's tenant, usable only if the key may use its agent; with a session token, the token's conversation.
import type { FastifyRequest } from 'fastify';
import type { Authorize } from '../../actors/session-service.ts';
import { assertAgentAllowed, tenantOf } from './api-key.ts';
import { tokenOf } from './session-token.ts';

export interface SessionTarget {
  tenantId: string;
  sessionId: string;
  /** Throws unless the caller may act on the session (run once it is found). */
  authorize: Authorize;
}

/** The API key's check on a session: its agent must be in the key's scope. */
export const keyAuthorize =
  (request: FastifyRequest): Authorize =>
  (s) =>
    assertAgentAllowed(request, s.agent_id);

export const keySession = (request: FastifyRequest, sessionId: string): SessionTarget => ({
  tenantId: tenantOf(request),
  sessionId,
  authorize: keyAuthorize(request),
});

export function tokenSession(request: FastifyRequest): SessionTarget {
  const token = tokenOf(request);
  // The token already names the conversation and its tenant: nothing more to authorize.
  return { tenantId: token.tenantId, sessionId: token.conversationId, authorize: () => {} };
}

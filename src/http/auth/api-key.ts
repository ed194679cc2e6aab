// API-key authentication for the server-side family: `X-API-Key` → the tenant and agent scope of the key. The
// Open Responses routes take the key as `Authorization: Bearer` too, which is how the OpenAI SDKs send it.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiKeyCache } from '../../auth/api-key-cache.ts';
import { scopeAllows } from '../../auth/api-keys.ts';
import { AppError } from '../../errors.ts';
import type { ApiKeyRecord, Store } from '../../store/store.ts';

declare module 'fastify' {
  interface FastifyRequest {
    apiKey: ApiKeyRecord | null;
  }
}

/** Adds an onRequest hook to `scope` that authenticates every route registered in it. */
export function requireApiKey(scope: FastifyInstance, store: Store, options: { bearer?: boolean } = {}) {
  scope.decorateRequest('apiKey', null);
  const keys = new ApiKeyCache(store);
  scope.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key'] ?? (options.bearer ? bearerOf(request) : undefined);
    if (typeof header !== 'string' || header === '') {
      throw new AppError(
        'unauthorized',
        options.bearer
          ? 'Send your API key as `Authorization: Bearer <key>` or in the X-API-Key header.'
          : 'Send your API key in the X-API-Key header.',
      );
    }
    const key = await keys.find(header);
    if (!key) throw new AppError('invalid_api_key');
    request.apiKey = key;
  });
}

/** The credential of an `Authorization: Bearer <credential>` header, if the request has one. */
function bearerOf(request: FastifyRequest): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '');
  return match?.[1];
}

/** The tenant of the authenticated key; routes behind requireApiKey only. */
export function tenantOf(request: FastifyRequest): string {
  if (!request.apiKey) throw new AppError('unauthorized');
  return request.apiKey.tenant_id;
}

/** 403 `agent_forbidden` unless the key may use the agent (checked before the agent's existence). */
export function assertAgentAllowed(request: FastifyRequest, agentId: string): void {
  if (!request.apiKey || !scopeAllows(request.apiKey.agents, agentId)) {
    throw new AppError('agent_forbidden', undefined, { context: { agent_id: agentId } });
  }
}

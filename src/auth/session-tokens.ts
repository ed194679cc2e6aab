// Session tokens of the public family: short-lived HS256 JWTs (jose) that name one conversation, its tenant
// and agent (docs/internals/decisions.md#session-tokens), and the API key that minted them (`kid`): a token
// dies with its key (docs/internals/decisions.md#a-token-dies-with-its-key). Only this module signs or reads
// them; the algorithm is pinned on verify.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errors, jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import { type Config, ConfigError } from '../config.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Store } from '../store/store.ts';

const ISSUER = 'parley';
const AUDIENCE = 'parley-public';
const ALGORITHM = 'HS256';

/** What a verified token grants: one conversation of one tenant. */
export interface SessionTokenClaims {
  conversationId: string;
  tenantId: string;
  agentId: string;
  /** The API key that minted the token. */
  keyId: string;
  jti: string;
  expiresAt: string;
}

const claimsSchema = z.object({
  sub: z.string().min(1),
  tid: z.string().min(1),
  agt: z.string().min(1),
  // Required: a token without one (minted before keys were named) could outlive its key's revocation.
  kid: z.string().min(1),
  jti: z.string().min(1),
  exp: z.number(),
});

const SECRET_FILE = 'token-secret';

/**
 * The signing secret: PARLEY_TOKEN_SECRET, or on a single node one generated once into the data directory
 * (so tokens survive restarts). Several nodes must share a secret, so there it has to be configured.
 */
export function tokenSecret(config: Config): Uint8Array {
  if (config.tokenSecret) return new TextEncoder().encode(config.tokenSecret);
  if (config.redisUrl || config.databaseUrl) {
    throw new ConfigError(
      'Invalid configuration: PARLEY_TOKEN_SECRET must be set (at least 32 bytes) when several processes share a store, so that every one accepts the same tokens.',
    );
  }
  const file = join(config.dataDir, SECRET_FILE);
  mkdirSync(config.dataDir, { recursive: true });
  try {
    // `wx`: a second process starting at the same moment keeps the first one's secret.
    writeFileSync(file, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const secret = readFileSync(file, 'utf8').trim();
  if (secret.length < 32) {
    throw new ConfigError(`Invalid configuration: ${file} holds a token secret shorter than 32 bytes.`);
  }
  return new TextEncoder().encode(secret);
}

const bearerChallenge = (description: string) =>
  `Bearer error="invalid_token", error_description="${description}"`;

export class SessionTokens {
  readonly #secret: Uint8Array;
  readonly #ttlSeconds: number;

  constructor(secret: Uint8Array, ttlSeconds: number) {
    this.#secret = secret;
    this.#ttlSeconds = ttlSeconds;
  }

  /**
   * A new token for the conversation; earlier ones stay valid until their own expiry. `jti` names it (a new
   * id unless given, for a caller that records it).
   */
  async mint(claims: {
    conversationId: string;
    tenantId: string;
    agentId: string;
    keyId: string;
    jti?: string;
  }): Promise<{ session_token: string; expires_at: string }> {
    const issuedAt = Math.floor(Date.now() / 1000);
    const expiresAt = issuedAt + this.#ttlSeconds;
    const token = await new SignJWT({ tid: claims.tenantId, agt: claims.agentId, kid: claims.keyId })
      .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(claims.conversationId)
      .setJti(claims.jti ?? newId('tok'))
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .sign(this.#secret);
    return { session_token: token, expires_at: new Date(expiresAt * 1000).toISOString() };
  }

  /**
   * The token's claims; 401 `session_token_expired` or `session_token_invalid` otherwise, the latter also
   * once the key that minted it is revoked (read from the store on every request, as API keys are).
   */
  async verify(
    token: string,
    keys: Pick<Store, 'getApiKey'>,
    /** Seconds past its expiry a token is still accepted (a refresh that shows the token it replaces). */
    options: { expiredWithinSeconds?: number } = {},
  ): Promise<SessionTokenClaims> {
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, this.#secret, {
        algorithms: [ALGORITHM],
        issuer: ISSUER,
        audience: AUDIENCE,
        requiredClaims: ['sub', 'exp', 'jti'],
        ...(options.expiredWithinSeconds ? { clockTolerance: options.expiredWithinSeconds } : {}),
      }));
    } catch (err) {
      if (err instanceof errors.JWTExpired) {
        throw new AppError('session_token_expired', undefined, {
          headers: { 'www-authenticate': bearerChallenge('The session token has expired') },
          cause: err,
        });
      }
      throw invalidToken(err);
    }
    const claims = claimsSchema.safeParse(payload);
    if (!claims.success) throw invalidToken(claims.error);
    const { sub, tid, agt, kid, jti, exp } = claims.data;
    const key = await keys.getApiKey(kid);
    if (!key || key.revoked_at !== null || key.tenant_id !== tid) {
      throw invalidToken(undefined, 'The API key that minted this session token is revoked or unknown.');
    }
    return {
      conversationId: sub,
      tenantId: tid,
      agentId: agt,
      keyId: kid,
      jti,
      expiresAt: new Date(exp * 1000).toISOString(),
    };
  }
}

const invalidToken = (cause: unknown, message?: string) =>
  new AppError('session_token_invalid', message, {
    headers: { 'www-authenticate': bearerChallenge('The session token is invalid') },
    cause,
  });

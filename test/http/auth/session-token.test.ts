// Authentication of the public conversation family: starting a conversation and refreshing its session token
// with the API key, what a bearer token must be to open a public route (signature, claims, pinned algorithm,
// expiry), where a token is refused, the secret tokens are signed with, the per-conversation rate limit and
// CORS (docs/internals/decisions.md: #which-401, #session-tokens, #a-token-dies-with-its-key, #limits;
// docs/reference/errors.md).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { buildApp } from '../../../src/app.ts';
import { loadConfig } from '../../../src/config.ts';
import { SqliteStore } from '../../../src/store/sqlite/store.ts';
import { apiKeyIdOf, buildTestApp, type TestApp } from '../../helpers/app.ts';
import {
  openConversation,
  publicClient,
  publicPath,
  recordKeys,
  startConversation,
} from '../../helpers/conversations.ts';
import {
  assert422,
  assertError,
  client,
  createUser,
  getSession,
  sleep,
  useSessionApp,
} from '../../helpers/sessions.ts';

const ISSUER = 'parley';
const AUDIENCE = 'parley-public';
const DEFAULT_TTL_SECONDS = 900;

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const fromB64url = (part: string | undefined) =>
  JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
const encode = (secret: string) => new TextEncoder().encode(secret);

/** The secret an app generated into its data directory. */
const fileSecret = (dataDir: string) => encode(readFileSync(join(dataDir, 'token-secret'), 'utf8').trim());

let forged = 0;
/** The id of the main app's API key, which its tokens name (`kid`). */
let keyId: string;

/** The claims Parley puts in a token for `conversationId` (tenant t1, agent demo); `undefined` drops one. */
function claimsFor(conversationId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: conversationId,
    tid: 't1',
    agt: 'demo',
    kid: keyId,
    iat: now,
    exp: now + DEFAULT_TTL_SECONDS,
    jti: `tok_forged_${++forged}`,
    ...overrides,
  };
}

/** Signs `claims` with jose, as the service would with `secret` — or not, when `alg` or the secret differ. */
function sign(claims: Record<string, unknown>, secret: Uint8Array, alg = 'HS256'): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(secret);
}

/** GET of the conversation record with `Authorization: <authorization>` (nothing when undefined). */
function readWith(
  t: TestApp,
  conversationId: string,
  authorization: string | undefined,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'GET',
    url: publicPath(conversationId),
    headers: { ...(authorization === undefined ? {} : { authorization }), ...headers },
  });
}

/** Asserts the 401 `session_token_invalid` with its Bearer challenge. */
function assertInvalidToken(res: LightMyRequestResponse, label = '') {
  assert.equal(res.statusCode, 401, `${label} ${res.body}`);
  const error = res.json().error;
  assert.equal(error.code, 'session_token_invalid', `${label} ${res.body}`);
  assert.equal(error.name, 'SessionTokenInvalidError');
  assert.match(String(res.headers['www-authenticate']), /^Bearer .*error="invalid_token"/, label);
}

/** Asserts the 401 `session_token_expired` as docs/internals/decisions.md#which-401 words it. */
function assertExpiredToken(res: LightMyRequestResponse) {
  const error = assertError(res, 401, 'session_token_expired');
  assert.equal(error.name, 'SessionTokenExpiredError');
  assert.match(error.message, /POST \/v1\/agents\/conversations\/\{id\}\/token/);
  assert.match(String(res.headers['www-authenticate']), /^Bearer .*error="invalid_token"/);
}

const corsHeaders = (res: LightMyRequestResponse) =>
  Object.keys(res.headers).filter((h) => h.startsWith('access-control-'));

/** The secret the main app generated into its data directory (no PARLEY_TOKEN_SECRET). */
let secret: Uint8Array;
const t = useSessionApp({
  setUp: async (app) => {
    secret = fileSecret(app.dataDir);
    keyId = await apiKeyIdOf(app);
  },
});
const api = client(t);

describe('POST /v1/agents/{agent_id}/conversations', () => {
  it('answers 201 with the conversation record alone, never the metadata, context or user it was given', async () => {
    const user = await createUser(t, { reference: 'pub-auth-user', name: 'Ada', info: { tier: 'gold' } });
    const res = await api.post('/v1/agents/demo/conversations', {
      user: { id: user.id },
      context: { plan: 'pro' },
      metadata: { crm: 7 },
    });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['conversation', 'expires_at', 'session_token']);
    const c = body.conversation;
    assert.deepEqual(Object.keys(c).sort(), recordKeys);
    assert.match(c.id, /^ses_/);
    assert.equal(c.agent_id, 'demo');
    assert.equal(c.status, 'active');
    assert.ok(!Number.isNaN(Date.parse(c.created_at)));
    assert.ok(!Number.isNaN(Date.parse(c.updated_at)));
    assert.deepEqual(
      [c.closed_at, c.close_reason, c.last_message_at, c.messages_count],
      [null, null, null, 0],
    );
    assert.equal(typeof body.session_token, 'string');
    // What was given is kept for the integrator: the conversation is the session of the same id.
    const session = await getSession(t, c.id);
    assert.deepEqual(session.context, { plan: 'pro' });
    assert.deepEqual(session.metadata, { crm: 7 });
    assert.equal(session.user?.id, user.id);
    // The front-end's read of it hides the same fields.
    const read = await publicClient(t, c.id, body.session_token).get();
    assert.equal(read.statusCode, 200, read.body);
    assert.deepEqual(Object.keys(read.json()).sort(), recordKeys);
  });

  it('signs an HS256 JWT with the secret in <dataDir>/token-secret carrying iss, aud, sub, tid, agt, kid, iat, exp and jti', async () => {
    const notBefore = Math.floor(Date.now() / 1000);
    const started = await startConversation(t, 'other');
    const { payload, protectedHeader } = await jwtVerify(started.session_token, secret, {
      algorithms: ['HS256'],
      issuer: ISSUER,
      audience: AUDIENCE,
    });
    assert.equal(protectedHeader.alg, 'HS256');
    assert.equal(payload.iss, ISSUER);
    assert.equal(payload.aud, AUDIENCE);
    assert.equal(payload.sub, started.conversation.id);
    assert.equal(payload.tid, 't1');
    assert.equal(payload.agt, 'other');
    assert.equal(payload.kid, keyId, 'the API key that minted it');
    assert.equal(typeof payload.jti, 'string');
    assert.ok((payload.jti ?? '').length > 0);
    assert.equal(typeof payload.iat, 'number');
    assert.equal(typeof payload.exp, 'number');
    const iat = payload.iat ?? 0;
    const exp = payload.exp ?? 0;
    assert.ok(iat >= notBefore && iat <= Math.ceil(Date.now() / 1000), `iat ${iat}`);
    assert.equal(exp - iat, DEFAULT_TTL_SECONDS, 'lifetime 15 min by default');
    assert.equal(started.expires_at, new Date(exp * 1000).toISOString(), 'expires_at = exp');
    // The generated secret is private to the service's user.
    assert.equal(statSync(join(t.dataDir, 'token-secret')).mode & 0o777, 0o600);
  });

  it('answers 403 agent_forbidden to a key scoped to another agent, even for an agent that does not exist', async () => {
    const scoped = await t.createKey('t1', ['other']);
    const denied = assertError(
      await client(t, scoped).post('/v1/agents/demo/conversations', {}),
      403,
      'agent_forbidden',
    );
    assert.equal(denied.name, 'AgentForbiddenError');
    assertError(await client(t, scoped).post('/v1/agents/nosuch/conversations', {}), 403, 'agent_forbidden');
    // The key still starts conversations with the agent it is scoped to.
    const allowed = await startConversation(t, 'other', {}, scoped);
    assert.equal(allowed.conversation.agent_id, 'other');
  });

  it('answers 404 agent_not_found for an agent missing from the catalogue', async () => {
    const error = assertError(await api.post('/v1/agents/nosuch/conversations', {}), 404, 'agent_not_found');
    assert.equal(error.name, 'AgentNotFoundError');
  });

  it('answers 422 for a body that is not a session creation: an extra field, a context or metadata not an object, malformed JSON', async () => {
    assert422(await api.post('/v1/agents/demo/conversations', { colour: 'red' }), ['body', 'colour']);
    assert422(await api.post('/v1/agents/demo/conversations', { context: 'plan=pro' }), ['body', 'context']);
    assert422(await api.post('/v1/agents/demo/conversations', { metadata: [1] }), ['body', 'metadata']);
    assert422(await api.post('/v1/agents/demo/conversations', { user: {} }), ['body', 'user']);
    const malformed = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/demo/conversations',
      headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
      payload: '{"context":',
    });
    assert422(malformed, ['body'], 'json_invalid');
  });

  it('answers 401 unauthorized without X-API-Key (before validating the body) and invalid_api_key for an unknown key', async () => {
    const bare = await t.app.inject({ method: 'POST', url: '/v1/agents/demo/conversations', payload: {} });
    assertError(bare, 401, 'unauthorized');
    const badBody = await t.app.inject({
      method: 'POST',
      url: '/v1/agents/demo/conversations',
      payload: { colour: 'red' },
    });
    assertError(badBody, 401, 'unauthorized');
    assertError(
      await client(t, 'pk_unknownunknownunknown').post('/v1/agents/demo/conversations', {}),
      401,
      'invalid_api_key',
    );
  });
});

describe('POST /v1/agents/conversations/{id}/token', () => {
  it('answers 200 with a new token (another jti) for the same conversation, and the earlier token keeps working', async () => {
    const c = await openConversation(t);
    const res = await api.post(`/v1/agents/conversations/${c.id}/token`);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['expires_at', 'session_token']);
    assert.notEqual(body.session_token, c.session_token);
    const fresh = (await jwtVerify(body.session_token, secret, { algorithms: ['HS256'] })).payload;
    const first = (await jwtVerify(c.session_token, secret, { algorithms: ['HS256'] })).payload;
    assert.notEqual(fresh.jti, first.jti);
    assert.deepEqual([fresh.sub, fresh.tid, fresh.agt], [c.id, 't1', 'demo']);
    assert.equal(body.expires_at, new Date((fresh.exp ?? 0) * 1000).toISOString());
    // Both tokens open the conversation: a refresh revokes nothing.
    for (const token of [body.session_token, c.session_token]) {
      const read = await publicClient(t, c.id, token).get();
      assert.equal(read.statusCode, 200, read.body);
      assert.equal(read.json().id, c.id);
    }
    // A refresh also takes an empty JSON body.
    const withBody = await api.post(`/v1/agents/conversations/${c.id}/token`, {});
    assert.equal(withBody.statusCode, 200, withBody.body);
  });

  it("answers 404 conversation_not_found for an unknown id and for another tenant's conversation", async () => {
    const unknown = assertError(
      await api.post('/v1/agents/conversations/ses_doesnotexist/token'),
      404,
      'conversation_not_found',
    );
    assert.equal(unknown.name, 'ConversationNotFoundError');
    const c = await openConversation(t);
    const t2 = await t.createKey('t2');
    assertError(
      await client(t, t2).post(`/v1/agents/conversations/${c.id}/token`),
      404,
      'conversation_not_found',
    );
    // Another tenant's key scoped to another agent learns nothing either: 404, never 403.
    const t2Scoped = await t.createKey('t2', ['other']);
    assertError(
      await client(t, t2Scoped).post(`/v1/agents/conversations/${c.id}/token`),
      404,
      'conversation_not_found',
    );
  });

  it("answers 403 agent_forbidden to a key of the tenant scoped to another agent than the conversation's", async () => {
    const c = await openConversation(t, 'demo');
    const scoped = await t.createKey('t1', ['other']);
    const error = assertError(
      await client(t, scoped).post(`/v1/agents/conversations/${c.id}/token`),
      403,
      'agent_forbidden',
    );
    assert.equal(error.name, 'AgentForbiddenError');
  });

  it('refreshes the token of a closed conversation, whose record the new token still reads', async () => {
    const c = await openConversation(t);
    const closed = await c.pub.post('/terminate', { reason: 'done' });
    assert.equal(closed.statusCode, 200, closed.body);
    const res = await api.post(`/v1/agents/conversations/${c.id}/token`);
    assert.equal(res.statusCode, 200, res.body);
    const read = await publicClient(t, c.id, res.json().session_token).get();
    assert.equal(read.statusCode, 200, read.body);
    assert.equal(read.json().status, 'closed');
    assert.equal(read.json().close_reason, 'done');
  });

  it('answers 401 unauthorized without X-API-Key, even with a valid session token as bearer', async () => {
    const c = await openConversation(t);
    const url = `/v1/agents/conversations/${c.id}/token`;
    assertError(await t.app.inject({ method: 'POST', url }), 401, 'unauthorized');
    assertError(
      await t.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${c.session_token}` } }),
      401,
      'unauthorized',
    );
  });
});

describe('session tokens on a public route', () => {
  it('answers 401 unauthorized with a Bearer WWW-Authenticate challenge without a bearer token', async () => {
    const c = await openConversation(t);
    for (const authorization of [undefined, '', 'Bearer', 'Bearer ', `Basic ${b64url('a:b')}`]) {
      const res = await readWith(t, c.id, authorization);
      const error = assertError(res, 401, 'unauthorized');
      assert.equal(error.name, 'UnauthorizedError');
      assert.match(String(res.headers['www-authenticate']), /^Bearer\b/, String(authorization));
    }
  });

  it('answers 401 unauthorized to an X-API-Key alone: the public family takes no API key', async () => {
    const c = await openConversation(t);
    const res = await readWith(t, c.id, undefined, { 'x-api-key': t.apiKey });
    const error = assertError(res, 401, 'unauthorized');
    assert.match(error.message, /Bearer/);
  });

  it('accepts a token forged here with the real secret and claims (the control for the refusals below)', async () => {
    const c = await openConversation(t);
    const res = await readWith(t, c.id, `Bearer ${await sign(claimsFor(c.id), secret)}`);
    assert.equal(res.statusCode, 200, res.body);
    // The scheme is case-insensitive (RFC 7235).
    const lower = await readWith(t, c.id, `bearer ${c.session_token}`);
    assert.equal(lower.statusCode, 200, lower.body);
  });

  it('answers 401 session_token_invalid with error="invalid_token" to garbage', async () => {
    const c = await openConversation(t);
    for (const garbage of [
      'garbage',
      'a.b.c',
      `${c.session_token}x`,
      c.session_token.split('.').slice(0, 2).join('.'),
    ]) {
      assertInvalidToken(await readWith(t, c.id, `Bearer ${garbage}`), garbage);
    }
  });

  it('answers 401 session_token_invalid to a token whose payload was changed (another sub and tid) but whose signature was kept', async () => {
    const mine = await openConversation(t);
    const theirs = await openConversation(t);
    const [header, payload, signature] = mine.session_token.split('.');
    const claims = fromB64url(payload);
    const changedSub = `${header}.${b64url({ ...claims, sub: theirs.id })}.${signature}`;
    assertInvalidToken(await readWith(t, theirs.id, `Bearer ${changedSub}`), 'sub');
    const changedTid = `${header}.${b64url({ ...claims, tid: 't2' })}.${signature}`;
    assertInvalidToken(await readWith(t, mine.id, `Bearer ${changedTid}`), 'tid');
    const longerLife = `${header}.${b64url({ ...claims, exp: Number(claims.exp) + 86_400 })}.${signature}`;
    assertInvalidToken(await readWith(t, mine.id, `Bearer ${longerLife}`), 'exp');
  });

  it('answers 401 session_token_invalid to a token signed with another secret', async () => {
    const c = await openConversation(t);
    const other = encode('another-secret-that-is-long-enough-0123456789');
    assertInvalidToken(await readWith(t, c.id, `Bearer ${await sign(claimsFor(c.id), other)}`));
  });

  it('answers 401 session_token_invalid to an unsigned alg none token', async () => {
    const c = await openConversation(t);
    const claims = claimsFor(c.id);
    for (const alg of ['none', 'None', 'NONE']) {
      const unsigned = `${b64url({ alg, typ: 'JWT' })}.${b64url(claims)}.`;
      assertInvalidToken(await readWith(t, c.id, `Bearer ${unsigned}`), alg);
    }
    // An alg none header over a real signature is no better.
    const signature = c.session_token.split('.')[2];
    const relabelled = `${b64url({ alg: 'none', typ: 'JWT' })}.${c.session_token.split('.')[1]}.${signature}`;
    assertInvalidToken(await readWith(t, c.id, `Bearer ${relabelled}`), 'relabelled');
  });

  it('answers 401 session_token_invalid to a wrong audience or a wrong issuer, signed with the real secret', async () => {
    const c = await openConversation(t);
    for (const overrides of [
      { aud: 'parley-admin' },
      { aud: undefined },
      { iss: 'someone-else' },
      { iss: undefined },
    ]) {
      const token = await sign(claimsFor(c.id, overrides), secret);
      assertInvalidToken(await readWith(t, c.id, `Bearer ${token}`), JSON.stringify(overrides));
    }
  });

  it('answers 401 session_token_invalid to HS512 or HS384 signed with the real secret: the algorithm is pinned', async () => {
    const c = await openConversation(t);
    for (const alg of ['HS512', 'HS384']) {
      const token = await sign(claimsFor(c.id), secret, alg);
      assert.equal(decodeProtectedHeader(token).alg, alg);
      assertInvalidToken(await readWith(t, c.id, `Bearer ${token}`), alg);
    }
  });

  it('answers 401 session_token_invalid to a correctly signed token missing sub, tid, agt, kid, jti or exp', async () => {
    const c = await openConversation(t);
    // Without kid: a token minted before tokens named their key is refused too (docs/internals/decisions.md#a-token-dies-with-its-key).
    for (const claim of ['sub', 'tid', 'agt', 'kid', 'jti', 'exp']) {
      const token = await sign(claimsFor(c.id, { [claim]: undefined }), secret);
      assertInvalidToken(await readWith(t, c.id, `Bearer ${token}`), claim);
    }
  });

  it('answers 401 session_token_expired (SessionTokenExpiredError) to a correctly signed token whose exp has passed', async () => {
    const c = await openConversation(t);
    const now = Math.floor(Date.now() / 1000);
    const token = await sign(claimsFor(c.id, { iat: now - 1000, exp: now - 100 }), secret);
    assertExpiredToken(await readWith(t, c.id, `Bearer ${token}`));
  });

  it('answers 401 session_token_invalid, not expired, to an expired token signed with another secret', async () => {
    const c = await openConversation(t);
    const now = Math.floor(Date.now() / 1000);
    const other = encode('another-secret-that-is-long-enough-0123456789');
    const token = await sign(claimsFor(c.id, { iat: now - 1000, exp: now - 100 }), other);
    assertInvalidToken(await readWith(t, c.id, `Bearer ${token}`));
  });

  describe('with PARLEY_TOKEN_TTL=1', () => {
    const short = useSessionApp({ env: { PARLEY_TOKEN_TTL: '1' } });

    it('answers 401 session_token_expired once the lifetime has passed, and a refreshed token opens the conversation again', async () => {
      const started = await startConversation(short);
      const { payload } = await jwtVerify(started.session_token, fileSecret(short.dataDir), {
        algorithms: ['HS256'],
      });
      assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), 1);
      await sleep(2200);
      const id = started.conversation.id;
      assertExpiredToken(await readWith(short, id, `Bearer ${started.session_token}`));
      // JWT times are whole seconds: a 1 s token minted late in a second lapses at the next one, maybe
      // before the read below. Refresh early in a second, so that the token has most of its second left.
      while (Date.now() % 1000 > 200) await sleep(5);
      const refreshed = await client(short).post(`/v1/agents/conversations/${id}/token`);
      assert.equal(refreshed.statusCode, 200, refreshed.body);
      const read = await readWith(short, id, `Bearer ${refreshed.json().session_token}`);
      assert.equal(read.statusCode, 200, read.body);
      assert.equal(read.json().status, 'active');
    });
  });
});

describe('where a session token is refused', () => {
  it("answers 403 forbidden to conversation A's token on the path of conversation B of the same tenant", async () => {
    const a = await openConversation(t);
    const b = await openConversation(t);
    const res = await readWith(t, b.id, `Bearer ${a.session_token}`);
    const error = assertError(res, 403, 'forbidden');
    assert.equal(error.name, 'ForbiddenError');
    assert.equal(
      (await publicClient(t, a.id, b.session_token).post('/messages', { content: 'hi' })).statusCode,
      403,
    );
  });

  it('answers 401 unauthorized to a bearer session token on the server-side routes', async () => {
    const c = await openConversation(t);
    const authorization = `Bearer ${c.session_token}`;
    for (const [method, url] of [
      ['GET', `/v1/agents/sessions/${c.id}`],
      ['GET', `/v1/agents/sessions/${c.id}/messages`],
      ['POST', `/v1/agents/sessions/${c.id}/terminate`],
      ['POST', '/v1/agents/demo/conversations'],
    ] as const) {
      const res = await t.app.inject({ method, url, headers: { authorization }, payload: {} });
      assertError(res, 401, 'unauthorized');
    }
    assert.equal((await getSession(t, c.id)).status, 'active');
  });

  it('answers 401 session_token_invalid from the next request on to a token whose API key was revoked; a token of another key still opens the conversation', async () => {
    const doomed = await t.createKey('t1');
    const started = await startConversation(t, 'demo', {}, doomed);
    const id = started.conversation.id;
    const before = await readWith(t, id, `Bearer ${started.session_token}`);
    assert.equal(before.statusCode, 200, before.body);
    assert.equal(await t.store.revokeApiKey(await apiKeyIdOf(t, doomed)), true);
    const after = await readWith(t, id, `Bearer ${started.session_token}`);
    assertInvalidToken(after);
    assert.match(after.json().error.message, /revoked/);
    const refreshed = await api.post(`/v1/agents/conversations/${id}/token`);
    assert.equal(refreshed.statusCode, 200, refreshed.body);
    const read = await readWith(t, id, `Bearer ${refreshed.json().session_token}`);
    assert.equal(read.statusCode, 200, read.body);
  });

  it("answers 401 session_token_invalid to a correctly signed token naming an unknown key or another tenant's key", async () => {
    const c = await openConversation(t);
    const otherTenant = await apiKeyIdOf(t, await t.createKey('t2'));
    for (const kid of ['key_unknown', otherTenant]) {
      assertInvalidToken(
        await readWith(t, c.id, `Bearer ${await sign(claimsFor(c.id, { kid }), secret)}`),
        kid,
      );
    }
  });
});

describe('the token secret', () => {
  it('signs with PARLEY_TOKEN_SECRET when it is set, and writes no token-secret file', async () => {
    const configured = 'a-configured-token-secret-of-more-than-32-bytes';
    const app = await buildTestApp({ PARLEY_TOKEN_SECRET: configured });
    try {
      const started = await startConversation(app);
      const { payload } = await jwtVerify(started.session_token, encode(configured), {
        algorithms: ['HS256'],
        issuer: ISSUER,
        audience: AUDIENCE,
      });
      assert.equal(payload.sub, started.conversation.id);
      assert.equal(existsSync(join(app.dataDir, 'token-secret')), false);
      // A token forged with that secret opens the conversation; one with the main app's file secret does not.
      const id = started.conversation.id;
      const claims = claimsFor(id, { kid: await apiKeyIdOf(app) });
      const good = await readWith(app, id, `Bearer ${await sign(claims, encode(configured))}`);
      assert.equal(good.statusCode, 200, good.body);
      assertInvalidToken(await readWith(app, id, `Bearer ${await sign(claims, secret)}`));
    } finally {
      await app.close();
    }
  });

  it("keeps a generated secret in the data directory: a second app on the same directory accepts the first one's token", async () => {
    const first = await buildTestApp();
    const dir = first.dataDir;
    try {
      const started = await startConversation(first);
      const written = readFileSync(join(dir, 'token-secret'), 'utf8');
      assert.ok(written.trim().length >= 32, 'a secret of at least 32 bytes');
      await first.app.close();
      await first.store.close();

      const store = new SqliteStore(join(dir, 'parley.db'));
      const second = await buildApp(loadConfig({ PARLEY_DATA_DIR: dir, LOG_LEVEL: 'silent' }), { store });
      try {
        await second.ready();
        assert.equal(readFileSync(join(dir, 'token-secret'), 'utf8'), written, 'the secret is not replaced');
        const res = await second.inject({
          method: 'GET',
          url: publicPath(started.conversation.id),
          headers: { authorization: `Bearer ${started.session_token}` },
        });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().id, started.conversation.id);
      } finally {
        await second.close();
        await store.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('rate limit per conversation (PARLEY_RATE_LIMIT_TOKEN=3)', () => {
  const limited = useSessionApp({ env: { PARLEY_RATE_LIMIT_TOKEN: '3' } });

  /** Spends the three requests of a conversation's budget, checking the headers of each. */
  async function spend(pub: ReturnType<typeof publicClient>) {
    for (let i = 0; i < 3; i++) {
      const res = await pub.get();
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['ratelimit-limit'], '3');
      assert.equal(res.headers['ratelimit-remaining'], String(2 - i));
      assert.ok(Number(res.headers['ratelimit-reset']) > 0);
    }
  }

  function assertLimited(res: LightMyRequestResponse) {
    const error = assertError(res, 429, 'rate_limited');
    assert.equal(error.name, 'RateLimitExceededError');
    assert.ok(Number(res.headers['retry-after']) >= 1, String(res.headers['retry-after']));
    assert.equal(res.headers['ratelimit-limit'], '3');
    assert.equal(res.headers['ratelimit-remaining'], '0');
    assert.ok(Number(res.headers['ratelimit-reset']) > 0);
  }

  it('answers the 4th request of a conversation with 429 rate_limited, Retry-After and RateLimit headers', async () => {
    const c = await openConversation(limited);
    await spend(c.pub);
    assertLimited(await c.pub.get());
    assertLimited(await c.pub.post('/messages', { content: 'still there?' }));
  });

  it('shares the budget between the tokens of one conversation: a refreshed token is still limited', async () => {
    const c = await openConversation(limited);
    await spend(c.pub);
    const refreshed = await client(limited).post(`/v1/agents/conversations/${c.id}/token`);
    assert.equal(refreshed.statusCode, 200, refreshed.body);
    assertLimited(await publicClient(limited, c.id, refreshed.json().session_token).get());
  });

  it('keeps a budget of its own for every conversation', async () => {
    const a = await openConversation(limited);
    const b = await openConversation(limited);
    await spend(a.pub);
    assertLimited(await a.pub.get());
    const res = await b.pub.get();
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['ratelimit-remaining'], '2');
  });

  it("leaves the API key's requests alone, on the conversation whose budget is spent too", async () => {
    const c = await openConversation(limited);
    await spend(c.pub);
    assertLimited(await c.pub.get());
    const res = await client(limited).get(`/v1/agents/sessions/${c.id}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['ratelimit-limit'], '1200');
    const refresh = await client(limited).post(`/v1/agents/conversations/${c.id}/token`);
    assert.equal(refresh.statusCode, 200, refresh.body);
  });
});

describe('CORS of the public family (PARLEY_CORS_ORIGINS=https://shop.example)', () => {
  const ORIGIN = 'https://shop.example';
  const web = useSessionApp({ env: { PARLEY_CORS_ORIGINS: ORIGIN } });

  const preflight = (app: TestApp, url: string, origin = ORIGIN) =>
    app.app.inject({
      method: 'OPTIONS',
      url,
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,idempotency-key',
      },
    });

  it('answers a preflight to a public route with 204, the origin and the allowed headers, without a token', async () => {
    const c = await openConversation(web);
    for (const url of [
      publicPath(c.id),
      publicPath(c.id, '/messages'),
      publicPath('ses_unknown', '/files'),
    ]) {
      const res = await preflight(web, url);
      assert.equal(res.statusCode, 204, `${url}: ${res.body}`);
      assert.equal(res.headers['access-control-allow-origin'], ORIGIN, url);
      const allowed = String(res.headers['access-control-allow-headers']).toLowerCase();
      assert.ok(allowed.includes('authorization'), allowed);
      assert.ok(allowed.includes('idempotency-key'), allowed);
      assert.ok(String(res.headers['access-control-allow-methods']).includes('POST'));
    }
  });

  it('keeps access-control-allow-origin on the answers of a public route, a 401 included', async () => {
    const c = await openConversation(web);
    const ok = await readWith(web, c.id, `Bearer ${c.session_token}`, { origin: ORIGIN });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.headers['access-control-allow-origin'], ORIGIN);
    const missing = await readWith(web, c.id, undefined, { origin: ORIGIN });
    assertError(missing, 401, 'unauthorized');
    assert.equal(missing.headers['access-control-allow-origin'], ORIGIN);
    const invalid = await readWith(web, c.id, 'Bearer garbage', { origin: ORIGIN });
    assertInvalidToken(invalid);
    assert.equal(invalid.headers['access-control-allow-origin'], ORIGIN);
    // A browser may only read the challenge when it is exposed.
    assert.match(String(invalid.headers['access-control-expose-headers']).toLowerCase(), /www-authenticate/);
  });

  it('answers an OPTIONS that is no full preflight with an empty 204, never a plain-text error', async () => {
    const c = await openConversation(web);
    for (const headers of [{ origin: ORIGIN }, { 'access-control-request-method': 'POST' }]) {
      const res = await web.app.inject({ method: 'OPTIONS', url: publicPath(c.id), headers });
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');
    }
  });

  it('lets the allowed origin read a 404 for an unknown path under the public prefix', async () => {
    const c = await openConversation(web);
    const res = await web.app.inject({
      method: 'GET',
      url: publicPath(c.id, '/nothing-here'),
      headers: { origin: ORIGIN, authorization: `Bearer ${c.session_token}` },
    });
    assert.equal(res.statusCode, 404, res.body);
    assert.equal(res.json().error.code, 'not_found');
    assert.equal(res.headers['access-control-allow-origin'], ORIGIN);
  });

  it('gives an unknown origin no access-control-allow-origin, on a preflight or a request', async () => {
    const c = await openConversation(web);
    const pre = await preflight(web, publicPath(c.id), 'https://evil.example');
    assert.equal(pre.headers['access-control-allow-origin'], undefined, JSON.stringify(pre.headers));
    const res = await readWith(web, c.id, `Bearer ${c.session_token}`, { origin: 'https://evil.example' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
  });

  it('puts no CORS headers on the server-side /v1/agents/… routes', async () => {
    const c = await openConversation(web);
    const read = await client(web).get(`/v1/agents/sessions/${c.id}`, { origin: ORIGIN });
    assert.equal(read.statusCode, 200, read.body);
    assert.deepEqual(corsHeaders(read), []);
    const start = await client(web).post('/v1/agents/demo/conversations', {}, { origin: ORIGIN });
    assert.equal(start.statusCode, 201, start.body);
    assert.deepEqual(corsHeaders(start), []);
    const pre = await preflight(web, '/v1/agents/demo/conversations');
    assert.deepEqual(corsHeaders(pre), [], JSON.stringify(pre.headers));
  });

  it('sends no CORS headers at all without PARLEY_CORS_ORIGINS', async () => {
    const c = await openConversation(t);
    const pre = await preflight(t, publicPath(c.id));
    assert.deepEqual(corsHeaders(pre), [], JSON.stringify(pre.headers));
    const ok = await readWith(t, c.id, `Bearer ${c.session_token}`, { origin: ORIGIN });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(corsHeaders(ok), []);
    const denied = await readWith(t, c.id, undefined, { origin: ORIGIN });
    assert.equal(denied.statusCode, 401);
    assert.deepEqual(corsHeaders(denied), []);
  });
});

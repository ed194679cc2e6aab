// Session tokens that must not verify: the fixture's token edited, and tokens signed with chosen claims and
// one defect each. Also which fixture conversation a request's Authorization header opens.
import fc from 'fast-check';
import { type JWTPayload, SignJWT, UnsecuredJWT } from 'jose';
import {
  CLOSABLE_ID,
  CLOSABLE_TOKEN,
  CONVERSATION_ID,
  fill,
  fixture,
  SESSION_TOKEN,
  TOKEN_SECRET,
} from './fixture.ts';
import type { FuzzRequest } from './send.ts';

/** Ways of writing `Authorization` for `token` that RFC 6750 allows: any case of the scheme, spaces after it. */
export const bearerSpellings = (token: string) => [
  `Bearer ${token}`,
  `bearer ${token}`,
  `BEARER ${token}`,
  `Bearer   ${token}`,
  `Bearer ${token} `,
];

/**
 * The fixture conversation the request's Authorization header opens, or null. Node keeps the first of repeated
 * Authorization headers and drops the others.
 */
export function grantOf(req: FuzzRequest): string | null {
  const value = req.headers.authorization;
  const header = Array.isArray(value) ? value[0] : value;
  if (header === undefined) return null;
  if (bearerSpellings(SESSION_TOKEN).includes(header)) return CONVERSATION_ID;
  if (bearerSpellings(CLOSABLE_TOKEN).includes(header)) return CLOSABLE_ID;
  return null;
}

const base64urlAlphabet = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'];

type Breakage =
  | 'edit-signed'
  | 'delete-signed'
  | 'insert-signed'
  | 'edit-signature'
  | 'cut'
  | 'extend'
  | 'swap-payload';

/**
 * The fixture token changed so that it cannot verify any more. Only changes that alter the signed text or the
 * signature's bytes: a lenient base64url decoder reads `=`, `+` or the spare bits of the last character as no change.
 */
function breakToken(how: Breakage, at: number, chars: string): string {
  const token = fixture.sessionToken;
  const signedEnd = token.lastIndexOf('.');
  const other = (c: string | undefined) => (chars[0] === c ? (c === 'A' ? 'B' : 'A') : (chars[0] as string));
  switch (how) {
    case 'edit-signed': {
      const i = at % signedEnd;
      return `${token.slice(0, i)}${other(token[i])}${token.slice(i + 1)}`;
    }
    case 'delete-signed': {
      const i = at % signedEnd;
      return `${token.slice(0, i)}${token.slice(i + 1)}`;
    }
    case 'insert-signed': {
      const i = at % (signedEnd + 1);
      return `${token.slice(0, i)}${chars}${token.slice(i)}`;
    }
    case 'edit-signature': {
      // Not the last character, whose spare bits a decoder may ignore.
      const i = signedEnd + 1 + (at % (token.length - signedEnd - 2));
      return `${token.slice(0, i)}${other(token[i])}${token.slice(i + 1)}`;
    }
    case 'cut':
      return token.slice(0, at % token.length);
    case 'extend':
      return `${token}${chars}`;
    case 'swap-payload':
      return `${fixture.closableToken.slice(0, fixture.closableToken.lastIndexOf('.'))}${token.slice(signedEnd)}`;
  }
}

/** The fixture's session token, edited so that it no longer verifies (made when generated, from the real token). */
export const brokenToken: fc.Arbitrary<string> = fc
  .record({
    how: fc.constantFrom<Breakage>(
      'edit-signed',
      'delete-signed',
      'insert-signed',
      'edit-signature',
      'cut',
      'extend',
      'swap-payload',
    ),
    at: fc.nat(),
    chars: fc.string({ unit: fc.constantFrom(...base64urlAlphabet), minLength: 1, maxLength: 3 }),
  })
  .map(({ how, at, chars }) => breakToken(how, at, chars));

/** One thing wrong with a session token (or nothing). */
export type TokenDefect =
  | 'none'
  | 'expired'
  | 'not-yet-valid'
  | 'wrong-secret'
  | 'HS512'
  | 'alg-none'
  | 'wrong-issuer'
  | 'wrong-audience'
  | 'no-sub'
  | 'empty-sub'
  | 'no-jti'
  | 'no-exp'
  | 'no-tid'
  | 'empty-tid'
  | 'numeric-agt'
  | 'no-kid'
  | 'unknown-kid';

interface ForgedToken {
  defect: TokenDefect;
  /** The claims (placeholders allowed): the conversation, its tenant and agent; the key is the app's (t1). */
  sub: string;
  tid: string;
  agt: string;
}

/** Signs a token as the service would, but with the given claims and defect. */
export async function forge({ defect, sub, tid, agt }: ForgedToken): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: JWTPayload = {
    iss: 'parley',
    aud: 'parley-public',
    sub: fill(sub),
    tid: fill(tid),
    agt,
    kid: fixture.keyId,
    jti: 'tok_forged',
    iat: now,
    exp: now + 3_600,
  };
  switch (defect) {
    case 'expired':
      claims.exp = now - 3_600;
      break;
    case 'not-yet-valid':
      claims.nbf = now + 3_600;
      break;
    case 'wrong-issuer':
      claims.iss = 'not-parley';
      break;
    case 'wrong-audience':
      claims.aud = 'parley-admin';
      break;
    case 'no-sub':
      delete claims.sub;
      break;
    case 'empty-sub':
      claims.sub = '';
      break;
    case 'no-jti':
      delete claims.jti;
      break;
    case 'no-exp':
      delete claims.exp;
      break;
    case 'no-tid':
      delete claims.tid;
      break;
    case 'empty-tid':
      claims.tid = '';
      break;
    case 'numeric-agt':
      claims.agt = 7;
      break;
    case 'no-kid':
      delete claims.kid;
      break;
    case 'unknown-kid':
      claims.kid = 'key_unknown';
      break;
  }
  if (defect === 'alg-none') return new UnsecuredJWT(claims).encode();
  const secret = new TextEncoder().encode(defect === 'wrong-secret' ? `${TOKEN_SECRET}-other` : TOKEN_SECRET);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: defect === 'HS512' ? 'HS512' : 'HS256', typ: 'JWT' })
    .sign(secret);
}

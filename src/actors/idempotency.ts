// Idempotency-Key (docs/internals/decisions.md#idempotency-key), all in one place: the request's fingerprint,
// what an earlier attempt under the key left (its record read once per send), and what a turn commits so that
// a retry can be answered.
import { createHash } from 'node:crypto';
import { AppError } from '../errors.ts';
import type { SessionWrite, Store } from '../store/store.ts';
import type { PublicMessage } from './public-message.ts';
import type { SessionEntry } from './resident-actors.ts';

/** Idempotency-Keys are remembered for 24 h from their first use. */
const IDEMPOTENCY_RETENTION_MS = 24 * 3600 * 1000;

/** JSON with sorted keys, so that equal bodies have equal fingerprints whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** SHA-256 of the operation (plain or streamed send) and the canonical body. */
export function fingerprintOf(operation: string, body: unknown): string {
  return createHash('sha256').update(operation).update('\n').update(canonicalJson(body)).digest('hex');
}

/** An Idempotency-Key and the fingerprint of the request that carries it. */
export interface KeyUse {
  key: string;
  fingerprint: string;
}

/** What an earlier use of the key left: nothing, a turn it began and did not finish, or its answer. */
export type EarlierAttempt =
  | { state: 'none' }
  | { state: 'started'; turn_id: string }
  | { state: 'finished'; turn_id: string; agent_message: PublicMessage }
  /** A send stored while people handled the session: no reply, the user's message is the answer. */
  | { state: 'finished'; turn_id: string; agent_message: null; user_message: PublicMessage };

/** One read of a key's record, and the entry and count of keyed commits it was read at. */
export interface KeyLookup extends KeyUse {
  attempt: EarlierAttempt;
  entry: SessionEntry;
  keyedCommits: number;
}

/**
 * Reads what an earlier use of the key on the entry's session left. An expired record counts as none;
 * another request under the key is 409 `idempotency_key_reused`.
 */
export async function lookUpKey(store: Store, entry: SessionEntry, use: KeyUse): Promise<KeyLookup> {
  const { key, fingerprint } = use;
  const { keyedCommits } = entry;
  const record = await store.getIdempotencyRecord(entry.session.id, key);
  const live = record && Date.parse(record.expires_at) > Date.now() ? record : null;
  if (live && live.fingerprint !== fingerprint) {
    throw new AppError('idempotency_key_reused', undefined, { context: { idempotency_key: key } });
  }
  const attempt: EarlierAttempt = !live
    ? { state: 'none' }
    : live.status_code === null
      ? { state: 'started', turn_id: live.turn_id }
      : { state: 'finished', turn_id: live.turn_id, ...storedAnswer(live.response) };
  return { key, fingerprint, attempt, entry, keyedCommits };
}

/**
 * The lookup as it stands when the turn runs. It is read again only when it may be stale: another commit
 * on the session wrote a key since (an attempt under the same key may have finished between the lookup and
 * the submission, too late for the machine to join it), or the session's actor was activated anew.
 */
export async function currentLookup(
  store: Store,
  entry: SessionEntry,
  lookup: KeyLookup,
): Promise<KeyLookup> {
  const fresh = lookup.entry === entry && lookup.keyedCommits === entry.keyedCommits;
  return fresh ? lookup : lookUpKey(store, entry, lookup);
}

/** The record a turn's first commit writes: the key is taken, by this turn. */
export function keyRecord(
  use: KeyUse,
  turnId: string,
  userMessageId: string | null,
): NonNullable<SessionWrite['idempotency']> {
  return {
    key: use.key,
    fingerprint: use.fingerprint,
    turn_id: turnId,
    user_message_id: userMessageId,
    expires_at: new Date(Date.now() + IDEMPOTENCY_RETENTION_MS).toISOString(),
  };
}

/** The answer a finished turn stores against its key, for replays. */
export function keyAnswer(
  use: KeyUse,
  agentMessage: PublicMessage,
): NonNullable<SessionWrite['idempotencyResponse']> {
  return { key: use.key, status_code: 201, response: { agent_message: agentMessage } };
}

/** The answer a send stored while people handled the session: its user's message, no reply. */
export function humansKeyAnswer(
  use: KeyUse,
  userMessage: PublicMessage,
): NonNullable<SessionWrite['idempotencyResponse']> {
  return {
    key: use.key,
    status_code: 201,
    response: { agent_message: null, handled_by: 'humans', user_message: userMessage },
  };
}

/** The messages of a stored answer, as `keyAnswer` or `humansKeyAnswer` wrote it. */
function storedAnswer(
  response: unknown,
): { agent_message: PublicMessage } | { agent_message: null; user_message: PublicMessage } {
  const field = (name: string) =>
    response && typeof response === 'object' && name in response
      ? (response as Record<string, unknown>)[name]
      : null;
  const message = field('agent_message');
  const userMessage = field('user_message');
  if (message === null && isPublicMessage(userMessage))
    return { agent_message: null, user_message: userMessage };
  if (!isPublicMessage(message)) throw new Error('An Idempotency-Key record holds no readable answer');
  return { agent_message: message };
}

function isPublicMessage(value: unknown): value is PublicMessage {
  return (
    typeof value === 'object' &&
    value !== null &&
    'id' in value &&
    typeof value.id === 'string' &&
    'content' in value &&
    Array.isArray(value.content) &&
    'created_at' in value &&
    typeof value.created_at === 'string'
  );
}

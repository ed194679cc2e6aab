// The app a fuzzing test file runs against and its fixtures: a user, a file, a session and two
// conversations. Generated requests carry placeholders for them, replaced when sent, so that
// counterexamples stay readable.
import assert from 'node:assert/strict';
import { apiKeyIdOf, type TestApp, useTestApp } from '../app.ts';
import { startConversation } from '../conversations.ts';

export const VALID_KEY = '<valid-key>';
export const USER_ID = '<user-id>';
export const FILE_ID = '<file-id>';
const SESSION_ID = '<session-id>';
/** A conversation of the public family and its session token; it stays active. */
export const CONVERSATION_ID = '<conversation-id>';
export const SESSION_TOKEN = '<session-token>';
/** A second conversation, for inactivity and terminate, which may close it. */
export const CLOSABLE_ID = '<closable-id>';
export const CLOSABLE_TOKEN = '<closable-token>';

/** The app signs session tokens with this secret, so that tests can forge tokens it would accept. */
export const TOKEN_SECRET = 'fuzz-secret-for-session-tokens-0123456789';

/** Runs per property; raise FUZZ_RUNS for a longer hunt. */
export const RUNS = Number(process.env.FUZZ_RUNS ?? 150);

/** What the placeholders stand for in the running file, set before its tests by useFuzzApp(). */
export const fixture = {
  userId: '',
  fileId: '',
  sessionId: '',
  conversationId: '',
  sessionToken: '',
  closableId: '',
  closableToken: '',
  /** The app's API key, which its session tokens name (`kid`). */
  keyId: '',
};

export const fixtureIds = {
  user: USER_ID,
  file: FILE_ID,
  session: SESSION_ID,
  conversation: CONVERSATION_ID,
  closable: CLOSABLE_ID,
} as const;
export type IdKind = keyof typeof fixtureIds;

let current: TestApp | undefined;

/** The app of the running file; see useFuzzApp. */
export function fuzzApp(): TestApp {
  if (!current) throw new Error('call useFuzzApp() at the top of the test file');
  return current;
}

/** Builds the file's app (no rate limits that a fuzzing run would hit) and its fixtures before its tests. */
export function useFuzzApp(): TestApp {
  current = useTestApp({
    env: {
      PARLEY_RATE_LIMIT_KEY: '1000000',
      PARLEY_RATE_LIMIT_TOKEN: '1000000',
      PARLEY_TOKEN_SECRET: TOKEN_SECRET,
    },
    setUp: createFixtures,
  });
  return current;
}

async function createFixtures(t: TestApp): Promise<void> {
  const user = await t.app.inject({
    method: 'POST',
    url: '/v1/agents/users',
    headers: { 'x-api-key': t.apiKey },
    payload: { reference: 'fuzz-fixture', metadata: { a: 1 } },
  });
  assert.equal(user.statusCode, 201, user.body);
  fixture.userId = user.json().id;
  const file = await t.app.inject({
    method: 'POST',
    url: '/v1/agents/files',
    headers: { 'x-api-key': t.apiKey, 'content-type': 'multipart/form-data; boundary=fixture' },
    payload:
      '--fixture\r\nContent-Disposition: form-data; name="file"; filename="fixture.txt"\r\n' +
      'Content-Type: text/plain\r\n\r\nhello\r\n--fixture--\r\n',
  });
  assert.equal(file.statusCode, 201, file.body);
  fixture.fileId = file.json().id;
  const session = await t.app.inject({
    method: 'POST',
    url: '/v1/agents/demo/sessions',
    headers: { 'x-api-key': t.apiKey },
    payload: { user: { id: fixture.userId }, context: { plan: 'fuzz' } },
  });
  assert.equal(session.statusCode, 201, session.body);
  fixture.sessionId = session.json().id;
  const conversation = await startConversation(t, 'demo', { user: { id: fixture.userId } });
  fixture.conversationId = conversation.conversation.id;
  fixture.sessionToken = conversation.session_token;
  const closable = await startConversation(t);
  fixture.closableId = closable.conversation.id;
  fixture.closableToken = closable.session_token;
  fixture.keyId = await apiKeyIdOf(t);
}

/** `text` with its placeholders replaced by the fixtures of the running file. */
export function fill(text: string): string {
  return text
    .replaceAll(VALID_KEY, fuzzApp().apiKey)
    .replaceAll(USER_ID, fixture.userId)
    .replaceAll(FILE_ID, fixture.fileId)
    .replaceAll(SESSION_ID, fixture.sessionId)
    .replaceAll(CONVERSATION_ID, fixture.conversationId)
    .replaceAll(SESSION_TOKEN, fixture.sessionToken)
    .replaceAll(CLOSABLE_ID, fixture.closableId)
    .replaceAll(CLOSABLE_TOKEN, fixture.closableToken);
}

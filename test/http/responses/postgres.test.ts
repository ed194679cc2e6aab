// The Open Responses tests written against SQLite, run again on PostgreSQL: the same files in a child test
// runner with PARLEY_TEST_STORE=postgres, under which every app they build (test/helpers/app.ts) stores in a
// fresh PostgreSQL database. (functions.test.ts covers both stores itself.) Without PostgreSQL the test is
// skipped with the reason, except under CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createTestDatabase } from '../../helpers/postgres.ts';
import { runNode } from '../../helpers/process.ts';

const files = [
  'openai-sdk.test.ts',
  'conversations.test.ts',
  'approvals.test.ts',
  'tool-calls.test.ts',
  'resume.test.ts',
  'open-responses-provider.test.ts',
].map((name) => fileURLToPath(new URL(name, import.meta.url)));

test('the Open Responses tests pass on PostgreSQL too', async (t) => {
  const probe = await createTestDatabase();
  if (!probe.db) return t.skip(probe.reason);
  await probe.db.drop();
  const [first = '', ...rest] = files;
  const run = await runNode(first, rest, {
    nodeArgs: ['--test', '--test-reporter=dot'],
    env: { PARLEY_TEST_STORE: 'postgres', ...(process.env.CI ? { CI: process.env.CI } : {}) },
    timeoutMs: 600_000,
  });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
});

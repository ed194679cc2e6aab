// The Open Responses routes from Python, with the official `openai` package installed by pip into a virtual
// environment (from the machine's package mirror; kept in the temporary directory for the next run, since
// resolving it takes minutes): it creates a response, streams one and continues the conversation
// (test/fixtures/openai_check.py). Without Python or the package the test is skipped with the reason, except
// under CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { allMessages, textOf, useSessionApp } from '../../helpers/sessions.ts';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../../fixtures/openai_check.py', import.meta.url));

let base = '';
const t = useSessionApp({
  setUp: async (app) => {
    base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  },
});

/** A virtual environment with `openai` installed, or why there cannot be one. */
async function pythonWithOpenAi(dir: string): Promise<{ python: string } | { reason: string }> {
  const python = join(dir, 'bin', 'python');
  try {
    await run(python, ['-c', 'import openai']);
    return { python };
  } catch {
    // Not there yet: made below.
  }
  try {
    await run('python3', ['-m', 'venv', dir]);
  } catch (err) {
    return { reason: `python3 with venv is not available (${(err as Error).message.split('\n')[0]})` };
  }
  const pip = join(dir, 'bin', 'pip');
  try {
    await run(pip, ['install', '--quiet', 'openai'], { timeout: 300_000 });
  } catch (err) {
    return {
      reason: `pip could not install openai (${(err as Error).message.split('\n').slice(-2).join(' ')})`,
    };
  }
  return { python };
}

test('the Python openai package creates a response, streams one and continues the conversation', async (c) => {
  const env = await pythonWithOpenAi(join(tmpdir(), 'parley-python-openai'));
  if ('reason' in env) {
    if (process.env.CI === 'true') throw new Error(`${env.reason}. Under CI=true that is a failure.`);
    return c.skip(env.reason);
  }
  const { stdout } = await run(env.python, [script], {
    env: { ...process.env, PARLEY_API_KEY: t.apiKey, PARLEY_BASE_URL: `${base}/v1` },
    timeout: 60_000,
  });
  const seen = JSON.parse(stdout) as {
    conversation: string;
    texts: string[];
    deltas: string;
    conversations: string[];
  };
  assert.deepEqual(seen.conversations, [seen.conversation, seen.conversation]);
  const stored = await allMessages(t, seen.conversation);
  assert.deepEqual(
    stored.map(textOf).filter((_, i) => i % 2 === 0),
    ['Hello from Python', 'Stream from Python', 'Still there?'],
  );
  assert.deepEqual(
    seen.texts,
    stored.map(textOf).filter((_, i) => i % 2 === 1),
  );
  assert.equal(seen.deltas, seen.texts[1]);
});

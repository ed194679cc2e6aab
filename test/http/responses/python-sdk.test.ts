// The Open Responses routes from Python, with the official `openai` package installed by pip into a virtual
// environment (test/helpers/python.ts): it creates a response, streams one, continues the conversation and
// makes a round trip of a function it declares (test/fixtures/openai_check.py). Without Python or the package the test is skipped with the reason, except
// under CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pythonWithOpenAi } from '../../helpers/python.ts';
import { allMessages, textOf, useSessionApp } from '../../helpers/sessions.ts';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../../fixtures/openai_check.py', import.meta.url));

let base = '';
const t = useSessionApp({
  setUp: async (app) => {
    base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  },
});

test('the Python openai package creates a response, streams one, continues the conversation and answers a function call', async (c) => {
  const env = await pythonWithOpenAi();
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
    function: { asked: [string, string]; answered: [boolean, string, string] };
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
  assert.deepEqual(seen.function.asked, ['completed', 'get_time']);
  const [sameTurn, status, text] = seen.function.answered;
  assert.ok(sameTurn && status === 'completed');
  assert.match(text, /get_time ok "noon"/);
});

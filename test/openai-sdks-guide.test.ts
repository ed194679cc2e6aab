// The code of docs/guides/openai-sdks.md, run as a reader runs it against a live Parley: every ```js block
// pasted unedited into `node` (as an ES module, from the project directory, where `openai`, `ai` and
// `@ai-sdk/open-responses` are installed) and the ```python block into the Python of the `openai` check
// (test/helpers/python.ts), with the reader's one change, the guide's own: the address of their Parley in place
// of http://localhost:3000, and their API key in PARLEY_API_KEY. Each must run to its end and print what the
// agent answered.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { projectRoot } from '../support/processes.ts';
import { readDoc } from './helpers/markdown.ts';
import { cleanEnv } from './helpers/process.ts';
import { pythonWithOpenAi } from './helpers/python.ts';
import { useSessionApp } from './helpers/sessions.ts';

let base = '';
const t = useSessionApp({
  setUp: async (app) => {
    base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  },
});

/** The guide's fenced blocks in `lang`, in order. */
function blocks(lang: string): string[] {
  const guide = readDoc('docs/guides/openai-sdks.md');
  return [...guide.matchAll(/```(\w+)\n([\s\S]*?)\n```/g)].flatMap((m) =>
    m[1] === lang ? [m[2] ?? ''] : [],
  );
}

/** What the reader changes: where their Parley listens. */
const pointed = (code: string) => code.replaceAll('http://localhost:3000', base);

/** Runs `command` with `code` on its standard input; its output, or a failure with what it wrote. */
function runWithInput(command: string, args: string[], code: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: projectRoot,
      env: cleanEnv({ PARLEY_API_KEY: t.apiKey }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (exit) =>
      exit === 0 ? resolve(stdout) : reject(new Error(`exit ${exit}\n${stderr}`)),
    );
    child.stdin.end(code);
  });
}

test('every JavaScript block of the guide runs as written against a live Parley', async () => {
  const js = blocks('js');
  assert.ok(js.length >= 4, `the guide has its JavaScript blocks (${js.length})`);
  for (const code of js) {
    assert.match(code, /http:\/\/localhost:3000/, 'each block points at the Parley the guide names');
    const out = await runWithInput(process.execPath, ['--input-type=module', '-'], pointed(code));
    assert.match(out, /You said: /, `the block prints what the agent answered:\n${code}`);
    // The functions loop runs the function the model called and prints the answer made with its output.
    if (code.includes('function_call_output')) assert.match(out, /get_weather ok "\{\\"celsius\\":21\}"/);
  }
});

test('the Python block of the guide runs as written against a live Parley', async (c) => {
  const env = await pythonWithOpenAi();
  if ('reason' in env) {
    if (process.env.CI === 'true') throw new Error(`${env.reason}. Under CI=true that is a failure.`);
    return c.skip(env.reason);
  }
  const [python] = blocks('python');
  assert.ok(python, 'the guide has its Python block');
  const out = await runWithInput(env.python, ['-'], pointed(python));
  assert.match(out, /You said: "What are your opening hours\?"/);
  assert.match(out, /You said: "And on Saturdays\?"/);
});

// The walk-through of docs/guides/approvals.md, run as a reader runs it: its agents file and its tool server
// (on a free port instead of 4000), the service started on them, then its curl block, unedited, in `bash -e`
// from the project directory; what it prints must be what the guide shows.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { freePort } from '../support/free-port.ts';
import { projectRoot } from '../support/processes.ts';
import { readDoc } from './helpers/markdown.ts';
import { binEntry, cleanEnv, killLeftoverChildren, startService, tempDir } from './helpers/process.ts';
import { waitFor } from './helpers/wait.ts';

after(killLeftoverChildren);

/** The fenced blocks of the guide's walk-through section, by language, in order. */
function walkThrough(): { yaml: string; sh: string[]; text: string } {
  const guide = readDoc('docs/guides/approvals.md');
  const section = guide.slice(guide.indexOf('\n## A walk-through with curl\n'));
  const blocks = [...section.matchAll(/```(\w+)\n([\s\S]*?)\n```/g)].map((m) => ({
    lang: m[1],
    body: m[2] ?? '',
  }));
  const of = (lang: string) => blocks.filter((b) => b.lang === lang).map((b) => b.body);
  const [yaml] = of('yaml');
  const [text] = of('text');
  assert.ok(yaml && text, 'the walk-through has its agents file and its output');
  return { yaml, sh: of('sh'), text };
}

const missing = ['bash', 'curl', 'jq', 'npx'].filter(
  (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status !== 0,
);

describe('the approvals guide', () => {
  test('its walk-through runs as written and prints what the guide shows', {
    timeout: 180_000,
  }, async (t) => {
    if (missing.length > 0) {
      const reason = `${missing.join(', ')} not installed (apt-get install ${missing.join(' ')})`;
      if (process.env.CI === 'true') throw new Error(`${reason}. Under CI=true that is a failure.`);
      t.skip(reason);
      return;
    }
    const { yaml, sh, text } = walkThrough();
    const [toolServer, serve, curls] = sh;
    assert.ok(toolServer && serve && curls, 'three shell blocks: the tool, the service, the walk-through');
    assert.match(serve, /PARLEY_AGENTS_FILE=agents\.yaml npm start/);

    const port = await freePort();
    const dir = await tempDir(t, 'parley-approvals-guide-');
    const agentsFile = join(dir, 'agents.yaml');
    await writeFile(agentsFile, yaml.replace('127.0.0.1:4000', `127.0.0.1:${port}`));
    const tool = spawn('bash', ['-c', toolServer.replace('.listen(4000)', `.listen(${port})`)], {
      cwd: projectRoot,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let toolOutput = '';
    tool.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      toolOutput += chunk;
    });
    t.after(() => void tool.kill('SIGKILL'));

    const dataDir = await tempDir(t);
    const service = await startService({
      dataDir,
      script: binEntry,
      args: ['serve'],
      env: { PARLEY_AGENTS_FILE: agentsFile },
    });
    t.after(() => service.kill());

    const shell = spawnSync('bash', ['-e', '-c', curls], {
      cwd: projectRoot,
      env: cleanEnv({
        PARLEY_URL: service.url,
        PARLEY_DATA_DIR: dataDir,
        npm_config_update_notifier: 'false',
      }),
      encoding: 'utf8',
      timeout: 150_000,
    });
    const output = `stdout:\n${shell.stdout}\nstderr:\n${shell.stderr}\ntool:\n${toolOutput}`;
    assert.equal(shell.status, 0, `${shell.error ?? ''}\n${output}`);
    assert.equal(shell.stdout.trim(), text.trim(), output);
    // The tool was asked once, for the approved refund only (its output is read once the shell has let go).
    await waitFor('the tool printed its call', () => toolOutput.includes('refund '));
    const asked = toolOutput.split('\n').filter((line) => line.startsWith('refund '));
    assert.equal(asked.length, 1, output);
    assert.match(asked[0] ?? '', /^refund turn_\w+:call_\w+ .*"order":"A-1042"/);
  });
});

// The README's quick start, run as a newcomer runs it: the service started as `parley serve` (what `npm start`
// runs) on a fresh data directory, and the quick start's shell block, unedited, in `bash -e` from the project
// directory, its `npx parley` reading the same data directory. Only the address is given, through the
// PARLEY_URL the block reads (it defaults to the port `npm start` listens on).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { projectRoot } from '../support/processes.ts';
import { readDoc } from './helpers/markdown.ts';
import { binEntry, cleanEnv, killLeftoverChildren, startService, tempDir } from './helpers/process.ts';

after(killLeftoverChildren);

/** The first `sh` block after the README's "Quick start" heading. */
function quickStartBlock(): string {
  const readme = readDoc('README.md');
  const section = readme.slice(readme.indexOf('\n## Quick start\n'));
  const block = /```sh\n([\s\S]*?)\n```/.exec(section)?.[1];
  assert.ok(block, 'README.md has no ```sh block under "## Quick start"');
  return block;
}

const missing = ['bash', 'curl', 'jq', 'npx'].filter(
  (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status !== 0,
);

describe("the README's quick start", () => {
  test('runs as pasted against a fresh service, and prints the replies it promises', async (t) => {
    if (missing.length > 0) {
      const reason = `${missing.join(', ')} not installed (apt-get install ${missing.join(' ')})`;
      if (process.env.CI === 'true') throw new Error(`${reason}. Under CI=true that is a failure.`);
      t.skip(reason);
      return;
    }
    const dataDir = await tempDir(t);
    const service = await startService({ dataDir, script: binEntry, args: ['serve'] });
    t.after(() => service.kill());

    // Synchronous: the service is a process of its own, and the test has nothing else to do meanwhile.
    const shell = spawnSync('bash', ['-e', '-c', quickStartBlock()], {
      cwd: projectRoot,
      env: cleanEnv({
        PARLEY_URL: service.url,
        PARLEY_DATA_DIR: dataDir,
        npm_config_update_notifier: 'false',
      }),
      encoding: 'utf8',
      timeout: 120_000,
    });
    const { stdout, stderr } = shell;
    const output = `stdout:\n${stdout}\nstderr:\n${stderr}`;
    assert.equal(shell.status, 0, `${shell.error ?? ''}\n${output}`);

    // The CLI's notes: a tenant, then a key (the key itself went into KEY).
    assert.match(stderr, /Created tenant default\./, output);
    assert.match(stderr, /Created key_\w+ for tenant default \(agents: \*\)/, output);
    // The user, then the plain send's reply, which shows the user's name and the session's context.
    assert.match(stdout, /^\{"id":"usr_\w+",.*"reference":"crm-42","name":"Ada"/m, output);
    assert.match(stdout, /^Hello Ada! You said: "Hello!"\. Context: plan: "pro"\.$/m, output);
    // The streamed send, as events from turn.started to turn.completed.
    for (const event of ['turn.started', 'message.delta', 'message.completed', 'turn.completed']) {
      assert.match(stdout, new RegExp(`^event: ${event.replace('.', '\\.')}$`, 'm'), output);
    }
    assert.ok(stdout.includes('You said: \\"Stream this, please\\"'), output);
    // The run, on the uploaded file.
    assert.match(stdout, /"session_id": "ses_\w+"/, output);
    assert.ok(
      stdout.includes(
        '"reply": "Hello Ada! You said: \\"Where is my order?\\". Context: channel: \\"email\\". Attachments: 1."',
      ),
      output,
    );
  });
});

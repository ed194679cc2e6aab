// What an operator sees at start and stop, with the service as a real process: the first-key hint is a
// command that works when pasted into a shell (run here with `sh -c`, exactly as printed, in a fresh
// environment), a plain summary on a terminal (a real pseudo-terminal from util-linux `script`), one JSON
// record in a log, and a line when it stops.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { startupSummary } from '../src/startup.ts';
import { VERSION } from '../src/version.ts';
import { freePort } from '../support/free-port.ts';
import { exitOf, pollUntil, projectRoot } from '../support/processes.ts';
import {
  cleanEnv,
  cliEntry,
  killLeftoverChildren,
  lines,
  runNode,
  serverEntry,
  startService,
  tempDir,
} from './helpers/process.ts';

after(killLeftoverChildren);

const keyPattern = /^pk_[0-9A-Za-z]{43}$/;
const scriptBin = '/usr/bin/script';

async function runPasted(
  command: string,
  cwd = projectRoot,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('/bin/sh', ['-c', command], {
    cwd,
    // The service's variables are dropped: the command must carry what it needs.
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  const exit = await exitOf(child);
  if (!child.stdout.readableEnded) await new Promise((r) => child.stdout.once('end', r));
  return { code: exit.code, stdout, stderr };
}

/** The key a pasted hint printed: its last line of stdout. */
async function keyFromHint(command: string, cwd?: string): Promise<string> {
  const result = await runPasted(command, cwd);
  assert.equal(result.code, 0, `${command}\nexited ${result.code}: ${result.stderr}`);
  const key = lines(result.stdout).at(-1) ?? '';
  assert.match(key, keyPattern, result.stdout);
  return key;
}

async function usersStatus(url: string, key: string): Promise<number> {
  const response = await fetch(`${url}/v1/agents/users`, { headers: { 'x-api-key': key } });
  await response.arrayBuffer();
  return response.status;
}

describe('the start-up hint, logged as JSON when stdout is not a terminal', () => {
  test('its command, run as printed by sh, creates a key that the running service accepts', async (t) => {
    const dataDir = await tempDir(t);
    const service = await startService({ dataDir });
    t.after(() => service.kill());

    const warning = service.logs().find((r) => r.level === 40 && typeof r.command === 'string');
    assert.ok(warning, service.stdout());
    const command = String(warning.command);
    assert.ok(String(warning.msg).includes(command), 'the message carries the same command');
    assert.match(command, /npx parley tenants create default && .*npx parley keys create/);

    const key = await keyFromHint(command);
    assert.equal(await usersStatus(service.url, key), 200);
  });

  test('once the tenant exists the hint is keys create alone, and it works as printed too', async (t) => {
    const dataDir = await tempDir(t);
    // The CLI creates the database only with migrate (or serve); tenants create needs it to exist.
    const migrated = await runNode(cliEntry, ['migrate'], { env: { PARLEY_DATA_DIR: dataDir } });
    assert.equal(migrated.code, 0, migrated.stderr);
    const created = await runNode(cliEntry, ['tenants', 'create', 'default'], {
      env: { PARLEY_DATA_DIR: dataDir },
    });
    assert.equal(created.code, 0, created.stderr);
    const service = await startService({ dataDir });
    t.after(() => service.kill());

    const command = String(service.logs().find((r) => typeof r.command === 'string')?.command);
    assert.doesNotMatch(command, /tenants create/);
    const key = await keyFromHint(command);
    assert.equal(await usersStatus(service.url, key), 200);
  });

  test('started outside the project, the hint runs the bin by its path, and works from any directory', async (t) => {
    const dataDir = await tempDir(t);
    const service = await startService({ dataDir, cwd: dataDir });
    t.after(() => service.kill());

    const command = String(service.logs().find((r) => typeof r.command === 'string')?.command);
    assert.doesNotMatch(command, /npx/);
    assert.ok(command.includes('bin/parley.js'), command);
    const key = await keyFromHint(command, await tempDir(t));
    assert.equal(await usersStatus(service.url, key), 200);
  });

  test('a JSON record names the version, store, agents and the docs URL, and a record says it stopped', async (t) => {
    const dataDir = await tempDir(t);
    const service = await startService({ dataDir });
    t.after(() => service.kill());

    const started = service.logs().find((r) => r.msg === `Parley ${VERSION} started`);
    assert.ok(started, service.stdout());
    assert.equal(started.version, VERSION);
    assert.match(String(started.store), /^sqlite .*parley\.db$/);
    assert.ok(Array.isArray(started.agents) && started.agents.includes('demo'));
    assert.equal(started.docs, `${service.url}/docs`);
    assert.equal(started.demo, `${service.url}/demo`);

    const exit = await service.stop('SIGTERM');
    assert.equal(exit.code, 0);
    const messages = service.logs().map((r) => String(r.msg));
    assert.ok(messages.includes('Parley is stopping (SIGTERM).'), service.stdout());
    assert.ok(
      messages.some((m) => /^Parley stopped in \d+\.\d s\.$/.test(m)),
      service.stdout(),
    );
  });
});

/** The service on a pseudo-terminal: `script` gives it one, and its output (CR LF line ends) is collected. */
function spawnOnTerminal(dataDir: string, port: number) {
  // `exec`: no shell stays between `script` and the service. A shell that waits on it would take the Ctrl-C
  // as well and end by SIGINT (130) whichever shell $SHELL names, whatever the service's own exit.
  const command = `exec ${[process.execPath, serverEntry].map((w) => `'${w}'`).join(' ')}`;
  const child: ChildProcess = spawn(scriptBin, ['-qfec', command, '/dev/null'], {
    cwd: projectRoot,
    env: cleanEnv({
      SHELL: '/bin/sh',
      PORT: String(port),
      HOST: '127.0.0.1',
      PARLEY_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => {
    output += c;
  });
  const exited = exitOf(child);
  return { child, exited, output: () => output.replaceAll('\r\n', '\n') };
}

describe('the start-up summary on a terminal', { skip: !existsSync(scriptBin) && `no ${scriptBin}` }, () => {
  test('it shows the store, agents, docs and demo, and a pasted hint creates a working key; Ctrl-C prints a stop line', async (t) => {
    const dataDir = await tempDir(t);
    const port = await freePort();
    const service = spawnOnTerminal(dataDir, port);
    let gone = false;
    void service.exited.then(() => {
      gone = true;
    });
    t.after(() => {
      if (!gone) service.child.kill('SIGKILL');
    });

    const shown = await pollUntil(
      async () => /No API key exists yet[^\n]*\n\n {2}\S[^\n]*\n/.test(service.output()),
      {
        gone: () => gone,
        timeoutMs: 20_000,
        intervalMs: 100,
      },
    );
    const text = service.output();
    assert.equal(shown, 'ready', text);
    const url = `http://127.0.0.1:${port}`;
    assert.ok(text.includes(`Parley ${VERSION} is listening on ${url}`), text);
    assert.match(text, /\n {2}store {3}sqlite \S*parley\.db\n/);
    assert.match(text, /\n {2}agents {2}demo\n/);
    assert.ok(text.includes(`  docs    ${url}/docs\n`), text);
    assert.ok(text.includes(`  demo    ${url}/demo\n`), text);
    // The hint is plain text, not a JSON log line.
    assert.doesNotMatch(text, /"msg":"No API key/);

    const hint = /No API key exists yet[^\n]*\n\n {2}(\S[^\n]*)\n/.exec(text)?.[1] ?? '';
    const key = await keyFromHint(hint);
    assert.equal(await usersStatus(url, key), 200);

    // Ctrl-C on the terminal: the line discipline sends SIGINT to the service.
    service.child.stdin?.write('\x03');
    const exit = await service.exited;
    assert.equal(exit.code, 0, service.output());
    assert.match(service.output(), /Parley is stopping \(SIGINT\)\.\n/);
    assert.match(service.output(), /Parley stopped in \d+\.\d s\.\n/);
  });
});

describe('the start-up summary', () => {
  test('says below the demo line what the demo page exposes where PARLEY_DEMO=true serves it', () => {
    const facts = { store: 'sqlite /x/parley.db', agents: ['demo'], demo: true, keyHint: null };
    const warning = 'PARLEY_DEMO=true serves /demo: anyone who reaches 0.0.0.0:3000 may start conversations';
    const text = startupSummary({ ...facts, demoWarning: warning }, 'http://127.0.0.1:3000');
    assert.ok(text.includes(`  demo    http://127.0.0.1:3000/demo\n\nWarning: ${warning}\n`), text);
    assert.doesNotMatch(startupSummary({ ...facts, demoWarning: null }, 'http://127.0.0.1:3000'), /Warning/);
  });
});

test('the stop line tells how long the stop took, its logs reaching a slow reader included', {
  timeout: 60_000,
}, async (t) => {
  const dataDir = await tempDir(t);
  const port = await freePort();
  // stdout a pipe read slowly once the stop begins, as a busy log collector reads it.
  const child = spawn(process.execPath, [serverEntry], {
    cwd: projectRoot,
    env: cleanEnv({ PORT: String(port), HOST: '127.0.0.1', PARLEY_DATA_DIR: dataDir }),
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const exited = exitOf(child);
  t.after(() => child.kill('SIGKILL'));
  const url = `http://127.0.0.1:${port}`;
  const up = async () => (await fetch(`${url}/healthz`)).status === 200;
  assert.equal(await pollUntil(up, { gone: () => false, timeoutMs: 20_000, intervalMs: 100 }), 'ready');
  // Request logs: more than the pipe holds, the rest waiting in the process.
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      for (let i = 0; i < 300; i++) await (await fetch(`${url}/healthz`)).arrayBuffer();
    }),
  );
  const signalled = performance.now();
  child.kill('SIGTERM');
  let stdout = '';
  const reader = child.stdout;
  reader?.setEncoding('utf8').on('data', (piece: string) => {
    stdout += piece;
    reader.pause();
    setTimeout(() => reader.resume(), 100);
  });
  const exit = await exited;
  const tookSeconds = (performance.now() - signalled) / 1000;
  await new Promise((resolve) => reader?.once('close', resolve));
  assert.equal(exit.code, 0);
  const stopped = Number(/"msg":"Parley stopped in (\d+\.\d) s\."/.exec(stdout)?.[1]);
  assert.ok(Number.isFinite(stopped), 'a stop line');
  // The line counts the wait for the reader: the process exits right after it.
  assert.ok(
    tookSeconds - stopped < 0.6,
    `stopped in ${stopped} s; exited ${tookSeconds.toFixed(2)} s after SIGTERM`,
  );
});

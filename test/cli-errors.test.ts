// The `parley` CLI's help and errors, run as real processes: help on stdout with exit 0; a failure as one
// line on stderr with exit 1; a command line that is wrong with exit 2 and the usage it missed; and with
// --json, every error as one line of JSON on stderr.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { migratedDir, ok } from './helpers/cli.ts';
import { killLeftoverChildren, lines, runCli, tempDir } from './helpers/process.ts';

after(killLeftoverChildren);

const commandNames = [
  'serve',
  'migrate',
  'tenants create',
  'tenants list',
  'keys create',
  'keys list',
  'keys revoke',
];

describe('parley help', { concurrency: 4 }, () => {
  test('parley help prints the same overview as --help on stdout and exits 0', async (t) => {
    const dataDir = await tempDir(t);
    const help = await ok(dataDir, ['help']);
    const flag = await ok(dataDir, ['--help']);
    assert.equal(help.stdout, flag.stdout);
    assert.match(help.stdout, /^Usage: parley/);
    for (const name of commandNames) assert.ok(help.stdout.includes(name), `the overview names ${name}`);
    assert.equal(help.stderr, '');
  });

  for (const name of commandNames) {
    test(`parley ${name} --help and parley help ${name} print its usage on stdout and exit 0`, async (t) => {
      // A data directory that does not exist: help reads no data, and `serve --help` starts nothing.
      const dataDir = join(await tempDir(t), 'absent');
      const words = name.split(' ');
      const flag = await ok(dataDir, [...words, '--help']);
      assert.ok(flag.stdout.startsWith(`Usage: parley ${name}`), flag.stdout);
      assert.equal(flag.stderr, '');
      assert.equal((await ok(dataDir, ['help', ...words])).stdout, flag.stdout);
      assert.equal((await ok(dataDir, [...words, '-h'])).stdout, flag.stdout);
      assert.ok(!existsSync(dataDir), 'help created no data directory');
    });
  }

  test('parley keys --help and parley help tenants list the actions of that group', async (t) => {
    const dataDir = await tempDir(t);
    const keys = await ok(dataDir, ['keys', '--help']);
    assert.match(keys.stdout, /^Usage: parley keys /);
    for (const name of ['keys create', 'keys list', 'keys revoke'])
      assert.ok(keys.stdout.includes(name), name);
    assert.ok(!keys.stdout.includes('tenants'), keys.stdout);

    const tenants = await ok(dataDir, ['help', 'tenants']);
    assert.match(tenants.stdout, /^Usage: parley tenants /);
    for (const name of ['tenants create', 'tenants list']) assert.ok(tenants.stdout.includes(name), name);
  });

  test('help for a command that does not exist is a usage error: exit 2, the overview on stderr', async (t) => {
    const dataDir = await tempDir(t);
    for (const args of [
      ['help', 'frobnicate'],
      ['frobnicate', '--help'],
    ]) {
      const result = await runCli(dataDir, args);
      assert.equal(result.code, 2, args.join(' '));
      assert.equal(result.stdout, '');
      assert.match(result.stderr, /^parley: unknown command: frobnicate\n/);
      assert.match(result.stderr, /Usage: parley <command>/);
    }
  });
});

describe('a command line that is wrong exits 2 with the usage of its command', { concurrency: 4 }, () => {
  test('an option the command does not take, or an argument too many, exits 2 with its usage', async (t) => {
    const dataDir = await migratedDir(t);
    const option = await runCli(dataDir, ['tenants', 'list', '--agents', 'x']);
    assert.equal(option.code, 2);
    assert.equal(option.stdout, '');
    assert.equal(lines(option.stderr)[0], 'parley: tenants list takes no --agents');
    assert.match(option.stderr, /\nUsage: parley tenants list/);

    const argument = await runCli(dataDir, ['tenants', 'list', 'extra']);
    assert.equal(argument.code, 2);
    assert.match(lines(argument.stderr)[0] ?? '', /^parley: tenants list: unexpected argument "extra"$/);
  });

  test('an option without its value exits 2 naming the option, with the usage of that command alone', async (t) => {
    const dataDir = await migratedDir(t);
    const result = await runCli(dataDir, ['keys', 'create', '--tenant']);
    assert.equal(result.code, 2);
    assert.equal(lines(result.stderr)[0], 'parley: --tenant needs a value');
    assert.match(result.stderr, /\nUsage: parley keys create --tenant T/);
    assert.ok(!result.stderr.includes('tenants list'), 'not the usage of every command');
  });

  test('a group without an action exits 2 and names its actions', async (t) => {
    const dataDir = await migratedDir(t);
    const result = await runCli(dataDir, ['keys']);
    assert.equal(result.code, 2);
    assert.equal(lines(result.stderr)[0], 'parley: keys needs one of: create, list, revoke');
    assert.match(result.stderr, /\nUsage: parley keys </);
  });
});

/** Commands that fail (exit 1) on a migrated data directory with tenant `acme`, and their JSON codes. */
const failures: Array<{ args: string[]; code: string; env?: Record<string, string> }> = [
  { args: ['tenants', 'create', 'acme'], code: 'tenant_exists' },
  { args: ['keys', 'create', '--tenant', 'nobody'], code: 'tenant_not_found' },
  { args: ['keys', 'revoke', 'key_nothing'], code: 'api_key_not_found' },
  { args: ['tenants', 'list'], code: 'invalid_configuration', env: { PARLEY_TOKEN_TTL: 'abc' } },
  { args: ['tenants', 'list'], code: 'database_unreachable', env: { DATABASE_URL: 'postgres://x/y' } },
];

describe('a failure is one line on stderr and exits 1', { concurrency: 4 }, () => {
  test('each failure is one line starting with "parley: ", without the usage, and nothing on stdout', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme']);
    for (const { args, env } of failures) {
      const result = await runCli(dataDir, args, { env });
      assert.equal(result.code, 1, `${args.join(' ')}: ${result.stderr}`);
      assert.equal(result.stdout, '');
      const [line, ...more] = lines(result.stderr);
      assert.deepEqual(more, [], result.stderr);
      assert.match(line ?? '', /^parley: \S/);
      assert.doesNotMatch(result.stderr, /Usage:/);
    }
  });
});

describe('errors with --json', { concurrency: 4 }, () => {
  test('a failure is {"error":{"code","message"}} on one line of stderr, with the message of the text form', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme']);
    for (const { args, code, env } of failures) {
      const result = await runCli(dataDir, [...args, '--json'], { env });
      assert.equal(result.code, 1, `${args.join(' ')}: ${result.stderr}`);
      assert.equal(result.stdout, '');
      assert.equal(lines(result.stderr).length, 1, result.stderr);
      const body = JSON.parse(result.stderr);
      assert.deepEqual(Object.keys(body), ['error']);
      assert.deepEqual(Object.keys(body.error), ['code', 'message']);
      assert.equal(body.error.code, code);
      // The same words as without --json, so that a script and an operator read the same failure.
      const text = await runCli(dataDir, args, { env });
      assert.equal(text.stderr, `parley: ${body.error.message}\n`);
    }
  });

  test('a usage error is JSON too, with code usage_error, exit 2 and no usage text', async (t) => {
    const dataDir = await migratedDir(t);
    for (const [args, message] of [
      [['tenants', 'list', '--frobnicate', '--json'], /^unknown option --frobnicate$/],
      [['frobnicate', '--json'], /^unknown command: frobnicate$/],
      [['keys', 'create', '--json'], /^keys create needs --tenant$/],
    ] as const) {
      const result = await runCli(dataDir, [...args]);
      assert.equal(result.code, 2, args.join(' '));
      assert.equal(result.stdout, '');
      assert.equal(lines(result.stderr).length, 1, result.stderr);
      const { error } = JSON.parse(result.stderr);
      assert.equal(error.code, 'usage_error');
      assert.match(error.message, message);
    }
  });
});

// The `parley` CLI run as a real process against a fresh SQLite data directory: what an operator types,
// what they read back (stdout for data, stderr for notes and errors) and the exit codes scripts rely on.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { VERSION } from '../src/version.ts';
import { projectRoot } from '../support/processes.ts';
import { migratedDir, ok } from './helpers/cli.ts';
import {
  binEntry,
  cleanEnv,
  killLeftoverChildren,
  lines,
  projectCopyWithSpace,
  runCli,
  tempDir,
} from './helpers/process.ts';

const keyPattern = /^pk_[0-9A-Za-z]{43}$/;

after(killLeftoverChildren);

async function createKey(dataDir: string, tenant: string, agents?: string) {
  const result = await ok(dataDir, [
    'keys',
    'create',
    '--tenant',
    tenant,
    ...(agents ? ['--agents', agents] : []),
  ]);
  const key = result.stdout.trim();
  const id = /\b(key_\S+)/.exec(result.stderr)?.[1];
  assert.ok(id, `no key id in: ${result.stderr}`);
  return { key, id };
}

/** A list's rows below its header row, which must be `header`. */
function rowsUnder(header: string, stdout: string): string[] {
  const [first, ...rows] = lines(stdout);
  assert.equal(first, header);
  return rows;
}

/** `keys list` as rows of id, tenant, prefix, agents, state. */
async function listKeys(dataDir: string, args: string[] = []) {
  const result = await ok(dataDir, ['keys', 'list', ...args]);
  return rowsUnder('ID\tTENANT\tPREFIX\tAGENTS\tSTATE', result.stdout).map((line) => {
    const [id, tenant, prefix, agents, state] = line.split('\t');
    return { id, tenant, prefix, agents, state, line };
  });
}

describe('parley migrate', { concurrency: 4 }, () => {
  test('it prints the schema version and prints the same version when run again', async (t) => {
    const dataDir = await tempDir(t);
    const first = await ok(dataDir, ['migrate']);
    assert.match(first.stdout, /^Schema at version \d+\.\n$/);
    const second = await ok(dataDir, ['migrate']);
    assert.equal(second.stdout, first.stdout);
  });
});

describe('parley tenants', { concurrency: 4 }, () => {
  test('a tenant created with a name is shown by tenants list with that name', async (t) => {
    const dataDir = await migratedDir(t);
    const created = await ok(dataDir, ['tenants', 'create', 'acme', '--name', 'Acme Inc']);
    // A note on stderr: stdout stays for data, so that a chain with keys create captures the key alone.
    assert.match(created.stderr, /Created tenant acme/);
    assert.equal(created.stdout, '');

    const listed = await ok(dataDir, ['tenants', 'list']);
    const rows = rowsUnder('ID\tNAME\tCREATED', listed.stdout).map((line) => line.split('\t'));
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.[0], 'acme');
    assert.equal(rows[0]?.[1], 'Acme Inc');
  });

  test('creating a tenant that already exists exits 1 and says so in one line, without the usage', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme', '--name', 'Acme Inc']);

    const again = await runCli(dataDir, ['tenants', 'create', 'acme']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /"acme" already exists/);
    assert.equal(again.stdout, '');
    assert.deepEqual(lines(again.stderr), ['parley: tenant "acme" already exists']);

    // The failed attempt must not have renamed or duplicated the tenant.
    const listed = await ok(dataDir, ['tenants', 'list']);
    assert.deepEqual(
      rowsUnder('ID\tNAME\tCREATED', listed.stdout).map((line) => line.split('\t').slice(0, 2)),
      [['acme', 'Acme Inc']],
    );
  });

  test('a tenant id outside a-z, 0-9, _ and - is refused with exit code 2', async (t) => {
    const dataDir = await migratedDir(t);
    const result = await runCli(dataDir, ['tenants', 'create', 'Acme Inc']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /tenants create/);
  });
});

describe('parley keys', { concurrency: 4 }, () => {
  test('keys create prints exactly one line on stdout, the key, and a note on stderr', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme']);

    const result = await ok(dataDir, ['keys', 'create', '--tenant', 'acme', '--agents', 'support,sales']);
    assert.equal(lines(result.stdout).length, 1);
    assert.match(result.stdout.trimEnd(), keyPattern);
    assert.ok(result.stdout.endsWith('\n'), 'the key line ends with a newline so shells capture it cleanly');
    // The note may describe the key but must never repeat it: stderr often ends up in logs.
    assert.match(result.stderr, /key_\S+/);
    assert.match(result.stderr, /only once/);
    assert.ok(!result.stderr.includes(result.stdout.trim()));
  });

  test('every key created is different', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme']);
    const a = await createKey(dataDir, 'acme');
    const b = await createKey(dataDir, 'acme');
    assert.notEqual(a.key, b.key);
    assert.notEqual(a.id, b.id);
  });

  test('keys create for an unknown tenant exits 1 and tells how to create the tenant', async (t) => {
    const dataDir = await migratedDir(t);
    const result = await runCli(dataDir, ['keys', 'create', '--tenant', 'nobody', '--agents', '*']);
    assert.equal(result.code, 1);
    assert.equal(lines(result.stderr).length, 1, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /tenants create nobody/);
    assert.deepEqual(await listKeys(dataDir), []);
  });

  test('keys create without --tenant exits 2', async (t) => {
    const dataDir = await migratedDir(t);
    const result = await runCli(dataDir, ['keys', 'create']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--tenant/);
  });

  test('keys create refuses an invalid or reserved agent id with exit code 2 and creates no key', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme']);

    const invalid = await runCli(dataDir, ['keys', 'create', '--tenant', 'acme', '--agents', 'Bad Id']);
    assert.equal(invalid.code, 2);
    assert.equal(invalid.stdout, '');
    assert.match(invalid.stderr, /Bad Id/);

    // `users` is a path segment of /v1/agents/…, so an agent can never have that id.
    const reserved = await runCli(dataDir, [
      'keys',
      'create',
      '--tenant',
      'acme',
      '--agents',
      'support,users',
    ]);
    assert.equal(reserved.code, 2);
    assert.match(reserved.stderr, /users/);

    assert.deepEqual(await listKeys(dataDir), []);
  });

  test('keys list shows the key id, tenant, prefix and agents but never the key itself', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme']);
    const { key, id } = await createKey(dataDir, 'acme', 'support,sales');

    const result = await ok(dataDir, ['keys', 'list']);
    const rows = await listKeys(dataDir);
    assert.equal(rows.length, 1);
    const row = rows[0];
    assert.equal(row?.id, id);
    assert.equal(row?.tenant, 'acme');
    assert.ok(
      row?.prefix && key.startsWith(row.prefix.replace(/…$/, '')),
      `${row?.prefix} is a prefix of the key`,
    );
    assert.ok(
      (row?.prefix.replace(/…$/, '').length ?? 0) < 16,
      'the prefix is too short to be used as a key',
    );
    assert.deepEqual(row?.agents.split(',').sort(), ['sales', 'support']);
    assert.equal(row?.state, 'active');

    assert.ok(!result.stdout.includes(key));
    assert.ok(!result.stderr.includes(key));
    // Not even a large slice of the secret part may show.
    assert.ok(!result.stdout.includes(key.slice(12, 30)));
  });

  test('a key created without --agents is a key for every agent', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme']);
    await createKey(dataDir, 'acme');
    const [row] = await listKeys(dataDir);
    assert.equal(row?.agents, '*');
  });

  test('keys list --tenant shows only the keys of that tenant', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme']);
    await ok(dataDir, ['tenants', 'create', 'globex']);
    const acme = await createKey(dataDir, 'acme');
    const globex = await createKey(dataDir, 'globex');

    assert.deepEqual(
      (await listKeys(dataDir, ['--tenant', 'acme'])).map((row) => row.id),
      [acme.id],
    );
    assert.deepEqual((await listKeys(dataDir)).map((row) => row.id).sort(), [acme.id, globex.id].sort());
  });

  test('a revoked key is listed as revoked and revoking it again exits 1', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme']);
    const revoked = await createKey(dataDir, 'acme');
    const kept = await createKey(dataDir, 'acme');

    const result = await ok(dataDir, ['keys', 'revoke', revoked.id]);
    assert.match(result.stdout, new RegExp(revoked.id));

    const rows = await listKeys(dataDir);
    assert.match(rows.find((row) => row.id === revoked.id)?.state ?? '', /^revoked \d{4}-\d\d-\d\dT/);
    assert.equal(rows.find((row) => row.id === kept.id)?.state, 'active');

    const again = await runCli(dataDir, ['keys', 'revoke', revoked.id]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, new RegExp(revoked.id));
  });

  test('revoking an unknown key id exits 1, and revoking none is a usage error that exits 2', async (t) => {
    const dataDir = await migratedDir(t);
    const unknown = await runCli(dataDir, ['keys', 'revoke', 'key_doesnotexist']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /key_doesnotexist/);

    const missing = await runCli(dataDir, ['keys', 'revoke']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /key id/);
  });
});

describe('parley usage and configuration errors', { concurrency: 4 }, () => {
  test('an unknown command exits 2 and prints the usage on stderr', async (t) => {
    const dataDir = await tempDir(t);
    const result = await runCli(dataDir, ['frobnicate']);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /unknown command: frobnicate/);
    assert.match(result.stderr, /Usage: parley/);
  });

  test('no command at all exits 2 and prints the usage', async (t) => {
    const dataDir = await tempDir(t);
    const result = await runCli(dataDir, []);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /Usage: parley/);
  });

  test('an unknown option exits 2 and prints the usage', async (t) => {
    const dataDir = await tempDir(t);
    const result = await runCli(dataDir, ['tenants', 'list', '--frobnicate']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /Usage: parley/);
  });

  test('--help and -h exit 0 and print the usage on stdout', async (t) => {
    const dataDir = await tempDir(t);
    for (const flag of ['--help', '-h']) {
      const result = await runCli(dataDir, [flag]);
      assert.equal(result.code, 0, flag);
      assert.match(result.stdout, /^Usage: parley/, flag);
      for (const command of [
        'migrate',
        'tenants create',
        'tenants list',
        'keys create',
        'keys list',
        'keys revoke',
      ]) {
        assert.ok(result.stdout.includes(command), `${flag} mentions ${command}`);
      }
      assert.equal(result.stderr, '', flag);
    }
  });

  test('an invalid environment variable exits 1 with one line on stderr naming the variable', async (t) => {
    const dataDir = await tempDir(t);
    const result = await runCli(dataDir, ['tenants', 'list'], { env: { PARLEY_TOKEN_TTL: 'abc' } });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    const errors = lines(result.stderr);
    assert.equal(errors.length, 1, result.stderr);
    assert.match(errors[0] ?? '', /PARLEY_TOKEN_TTL/);
  });

  test('a DATABASE_URL that leads nowhere exits 1 with one line naming DATABASE_URL', async (t) => {
    const dataDir = await tempDir(t);
    const result = await runCli(dataDir, ['tenants', 'list'], { env: { DATABASE_URL: 'postgres://x/y' } });
    assert.equal(result.code, 1);
    const errors = lines(result.stderr);
    assert.equal(errors.length, 1, result.stderr);
    assert.match(errors[0] ?? '', /DATABASE_URL/);
  });
});

describe('where the CLI is started from', { concurrency: 4 }, () => {
  test('the bin shim runs the CLI from any working directory and passes its exit code on', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme', '--name', 'Acme Inc']);

    const shim = { script: binEntry, cwd: dataDir, nodeArgs: [] };
    const listed = await runCli(dataDir, ['tenants', 'list'], shim);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^ID\tNAME\tCREATED\nacme\tAcme Inc\t/);

    const unknown = await runCli(dataDir, ['frobnicate'], shim);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /Usage: parley/);
  });

  test('the CLI works when started through a symlinked path', async (t) => {
    // Release layouts like /opt/parley -> /opt/parley-1.2 start the entry point through a link.
    const dataDir = await tempDir(t);
    const link = join(await tempDir(t), 'parley');
    await symlink(projectRoot, link, 'dir');

    const result = await runCli(dataDir, ['migrate'], { script: join(link, 'src', 'cli.ts') });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Schema at version \d+\.\n$/);
  });

  test('the CLI works from a directory whose path contains a space', async (t) => {
    const dataDir = await tempDir(t);
    const root = await projectCopyWithSpace(t);

    const result = await runCli(dataDir, ['migrate'], { script: join(root, 'src', 'cli.ts'), cwd: root });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Schema at version \d+\.\n$/);
  });
});

describe('parley --json and --version', { concurrency: 4 }, () => {
  test('--json prints the lists as JSON arrays of records, with no header row', async (t) => {
    const dataDir = await migratedDir(t);
    await ok(dataDir, ['tenants', 'create', 'acme', '--name', 'Acme Inc']);
    const { id } = await createKey(dataDir, 'acme', 'support');

    const tenants = JSON.parse((await ok(dataDir, ['tenants', 'list', '--json'])).stdout);
    assert.equal(tenants.length, 1);
    assert.deepEqual({ id: tenants[0].id, name: tenants[0].name }, { id: 'acme', name: 'Acme Inc' });
    assert.match(tenants[0].created_at, /^\d{4}-\d\d-\d\dT/);

    await ok(dataDir, ['keys', 'revoke', id]);
    const keys = JSON.parse((await ok(dataDir, ['keys', 'list', '--json'])).stdout);
    assert.equal(keys.length, 1);
    assert.equal(keys[0].id, id);
    assert.equal(keys[0].tenant_id, 'acme');
    assert.deepEqual(keys[0].agents, ['support']);
    assert.match(keys[0].revoked_at, /^\d{4}-\d\d-\d\dT/);
    assert.equal(keys[0].key, undefined);
  });

  test('keys create --json prints the key with its record, and tenants create --json the tenant', async (t) => {
    const dataDir = await migratedDir(t);
    const tenant = JSON.parse((await ok(dataDir, ['tenants', 'create', 'acme', '--json'])).stdout);
    assert.equal(tenant.id, 'acme');
    const created = await ok(dataDir, ['keys', 'create', '--tenant', 'acme', '--json']);
    const record = JSON.parse(created.stdout);
    assert.match(record.key, keyPattern);
    assert.match(record.id, /^key_/);
    assert.deepEqual(record.agents, ['*']);
    assert.equal(record.hash, undefined, 'the stored hash is not printed');
    assert.deepEqual(
      (await listKeys(dataDir)).map((row) => row.id),
      [record.id],
    );
  });

  test('an empty list still prints its header row, and [] with --json', async (t) => {
    const dataDir = await migratedDir(t);
    assert.equal((await ok(dataDir, ['keys', 'list'])).stdout, 'ID\tTENANT\tPREFIX\tAGENTS\tSTATE\n');
    assert.deepEqual(JSON.parse((await ok(dataDir, ['tenants', 'list', '--json'])).stdout), []);
  });

  test('--version prints the version of package.json and nothing else', async (t) => {
    const dataDir = await tempDir(t);
    const manifest = JSON.parse(await readFile(join(projectRoot, 'package.json'), 'utf8'));
    const result = await ok(dataDir, ['--version']);
    assert.equal(result.stdout, `${manifest.version}\n`);
    assert.equal(VERSION, manifest.version);
    assert.equal(result.stderr, '');
  });

  test('an error with --json is one line of JSON on stderr and a non-zero exit, with nothing on stdout', async (t) => {
    const dataDir = await migratedDir(t);
    const result = await runCli(dataDir, ['keys', 'revoke', 'key_nothing', '--json']);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.equal(lines(result.stderr).length, 1, result.stderr);
    const { error } = JSON.parse(result.stderr);
    assert.equal(error.code, 'api_key_not_found');
    assert.match(error.message, /no active key "key_nothing"/);
  });
});

describe('parley run as npx parley from the project', () => {
  const npx = (args: string[], dataDir: string) =>
    promisify(execFile)('npx', ['parley', ...args], {
      cwd: projectRoot,
      env: cleanEnv({ PARLEY_DATA_DIR: dataDir }),
      timeout: 60_000,
    });

  test('it runs the bin of the project itself and prints only the data on stdout, no npm banner', async (t) => {
    const dataDir = await migratedDir(t);
    const version = await npx(['--version'], dataDir);
    assert.equal(version.stdout, `${VERSION}\n`);

    await npx(['tenants', 'create', 'acme'], dataDir);
    const created = await npx(['keys', 'create', '--tenant', 'acme'], dataDir);
    assert.match(created.stdout, /^pk_[0-9A-Za-z]{43}\n$/);
    assert.doesNotMatch(created.stderr, /> parley@/);
  });
});

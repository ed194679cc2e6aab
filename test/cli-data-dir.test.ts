// Which `parley` commands may create the SQLite database, run as real processes: serve and migrate do;
// the commands that read or change data refuse a data directory or parley.db that is not there (exit 1,
// one line naming the path) and create nothing, so that a mistyped or missing PARLEY_DATA_DIR is not
// answered with an empty list. With DATABASE_URL there is no file to look for.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ok } from './helpers/cli.ts';
import { createTestDatabase } from './helpers/postgres.ts';
import {
  binEntry,
  killLeftoverChildren,
  lines,
  runCli,
  runNode,
  startService,
  tempDir,
} from './helpers/process.ts';

after(killLeftoverChildren);

const readers = [
  ['tenants', 'create', 'acme'],
  ['tenants', 'list'],
  ['keys', 'create', '--tenant', 'acme'],
  ['keys', 'list'],
  ['keys', 'revoke', 'key_nothing'],
];

describe('commands that read data need the database to exist', { concurrency: 4 }, () => {
  for (const args of readers) {
    const name = args.slice(0, 2).join(' ');
    test(`${name} in a data directory without parley.db exits 1 naming the database, and creates none`, async (t) => {
      const dataDir = await tempDir(t);
      const result = await runCli(dataDir, args);
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stdout, '');
      assert.deepEqual(lines(result.stderr), [
        `parley: database ${join(dataDir, 'parley.db')} does not exist; point PARLEY_DATA_DIR at the service's data directory (default ./data), or create it with "parley migrate"`,
      ]);
      assert.deepEqual(await readdir(dataDir), [], 'nothing was created');
    });

    test(`${name} with a data directory that does not exist exits 1 naming it, and creates nothing`, async (t) => {
      const dataDir = join(await tempDir(t), 'nowhere');
      const result = await runCli(dataDir, [...args, '--json']);
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stdout, '');
      const { error } = JSON.parse(result.stderr);
      assert.equal(error.code, 'database_not_found');
      assert.ok(error.message.startsWith(`data directory ${dataDir} does not exist;`), error.message);
      assert.ok(!existsSync(dataDir), 'the directory was not created');
    });
  }

  test('without PARLEY_DATA_DIR, keys list in a directory that has no ./data names <cwd>/data', async (t) => {
    // The case of an operator who runs the CLI from another directory than the service's.
    const cwd = await tempDir(t);
    const result = await runNode(binEntry, ['keys', 'list'], { cwd, env: { LOG_LEVEL: 'silent' } });
    assert.equal(result.code, 1, result.stderr);
    const expected = `parley: data directory ${join(cwd, 'data')} does not exist;`;
    assert.ok(result.stderr.startsWith(expected), result.stderr);
    assert.deepEqual(await readdir(cwd), []);
  });
});

describe('serve and migrate create the database', { concurrency: 4 }, () => {
  test('migrate creates the data directory and parley.db, after which the other commands work', async (t) => {
    const dataDir = join(await tempDir(t), 'new', 'data');
    await ok(dataDir, ['migrate']);
    assert.ok(existsSync(join(dataDir, 'parley.db')));
    await ok(dataDir, ['tenants', 'create', 'acme']);
    assert.match((await ok(dataDir, ['tenants', 'list'])).stdout, /\nacme\t/);
  });

  test('once the service started by the bin (npm start) made the database, tenants create and keys create work', async (t) => {
    // The quick start: `npm start`, then `npx parley tenants create default && npx parley keys create …`.
    const dataDir = join(await tempDir(t), 'data');
    const service = await startService({ dataDir, script: binEntry, args: ['serve'] });
    t.after(() => service.kill());

    await ok(dataDir, ['tenants', 'create', 'default']);
    const key = (await ok(dataDir, ['keys', 'create', '--tenant', 'default', '--agents', '*'])).stdout.trim();
    const response = await fetch(`${service.url}/v1/agents/users`, { headers: { 'x-api-key': key } });
    await response.arrayBuffer();
    assert.equal(response.status, 200);
  });

  test('with DATABASE_URL the data directory is not looked at: the commands work and create no file', async (t) => {
    const created = await createTestDatabase();
    if (created.db === null) {
      t.skip(created.reason);
      return;
    }
    const db = created.db;
    t.after(() => db.drop());
    const dataDir = join(await tempDir(t), 'nowhere');
    const env = { DATABASE_URL: db.url };

    await ok(dataDir, ['tenants', 'create', 'acme'], { env });
    assert.match((await ok(dataDir, ['tenants', 'list'], { env })).stdout, /\nacme\t/);
    assert.ok(!existsSync(dataDir), 'no data directory was created');
  });
});

// The service started as a real process (`node src/server.ts`) on a free loopback port:
// start-up, API keys shared with the CLI through the data directory, configuration errors and shutdown.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PostgresStore } from '../src/store/postgres/store.ts';
import { projectRoot } from '../support/processes.ts';
import { makeTempDir } from './helpers/app.ts';
import { createTestDatabase } from './helpers/postgres.ts';
import {
  cliEntry,
  killLeftoverChildren,
  lines,
  projectCopyWithSpace,
  runCli,
  runNode,
  type ServiceProcess,
  serverEntry,
  startService,
  tempDir,
} from './helpers/process.ts';

after(killLeftoverChildren);

const bootstrapKey = 'bootstrap-key-0123456789abcdefgh';
assert.equal(bootstrapKey.length, 32);

async function listUsers(service: ServiceProcess, apiKey?: string) {
  const response = await fetch(`${service.url}/v1/agents/users`, {
    headers: apiKey === undefined ? {} : { 'x-api-key': apiKey },
  });
  const body = (await response.json()) as { error?: { code?: string } };
  return { status: response.status, body };
}

/** The warning the service logs (pino level 40) when no API key exists. */
function noKeyWarnings(service: ServiceProcess) {
  return service
    .logs()
    .filter(
      (record) => record.level === 40 && typeof record.msg === 'string' && record.msg.includes('keys create'),
    );
}

async function ok(dataDir: string, args: string[]) {
  const result = await runCli(dataDir, args);
  assert.equal(result.code, 0, `parley ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result;
}

async function keyRows(dataDir: string) {
  // Below the header row.
  return lines((await ok(dataDir, ['keys', 'list'])).stdout)
    .slice(1)
    .map((line) => line.split('\t'));
}

/** Runs the service until it exits by itself (it should, quickly, on bad configuration). */
function runServiceToExit(dataDir: string, env: Record<string, string>) {
  return runNode(serverEntry, [], {
    env: { PORT: '0', HOST: '127.0.0.1', PARLEY_DATA_DIR: dataDir, ...env },
    timeoutMs: 20_000,
  });
}

describe('the service started on an empty data directory', () => {
  let dataDir: string;
  let service: ServiceProcess;
  before(async () => {
    dataDir = await makeTempDir();
    service = await startService({ dataDir });
  });
  after(async () => {
    await service?.kill();
    await rm(dataDir, { recursive: true, force: true });
  });

  test('it answers GET /healthz on the given port and creates parley.db in the data directory', async () => {
    const response = await fetch(`http://127.0.0.1:${service.port}/healthz`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { status: 'ok' });
    assert.ok(existsSync(join(dataDir, 'parley.db')));
  });

  test('it logs a warning that tells how to create the first API key', () => {
    const warnings = noKeyWarnings(service);
    assert.equal(warnings.length, 1, service.stdout());
  });

  test('the warning also names tenants create, because keys create refuses a tenant that does not exist', () => {
    // Advice that names only `keys create --tenant default` fails for exactly the operator who sees it:
    // on a fresh data directory there is no tenant `default` yet.
    const [warning] = noKeyWarnings(service);
    assert.match(String(warning?.msg), /tenants create/);
  });

  test('a request without an API key is refused with 401 unauthorized', async () => {
    const { status, body } = await listUsers(service);
    assert.equal(status, 401);
    assert.equal(body.error?.code, 'unauthorized');
  });
});

describe('the service with PARLEY_BOOTSTRAP_API_KEY', () => {
  test('the bootstrap key is accepted, a wrong key is refused with 401 invalid_api_key, and no warning is logged', async (t) => {
    const dataDir = await tempDir(t);
    const service = await startService({ dataDir, env: { PARLEY_BOOTSTRAP_API_KEY: bootstrapKey } });
    t.after(() => service.kill());

    assert.equal((await listUsers(service, bootstrapKey)).status, 200);
    const wrong = await listUsers(service, `${bootstrapKey}x`);
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error?.code, 'invalid_api_key');
    assert.deepEqual(noKeyWarnings(service), []);
  });

  test('restarting with the same bootstrap key keeps exactly one key, of tenant default for every agent', async (t) => {
    const dataDir = await tempDir(t);
    const env = { PARLEY_BOOTSTRAP_API_KEY: bootstrapKey };
    const first = await startService({ dataDir, env });
    t.after(() => first.kill());
    assert.equal((await first.stop()).code, 0);

    const second = await startService({ dataDir, env });
    t.after(() => second.kill());
    assert.equal((await listUsers(second, bootstrapKey)).status, 200);

    const rows = await keyRows(dataDir);
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.equal(rows[0]?.[1], 'default');
    assert.equal(rows[0]?.[3], '*');
    assert.equal(rows[0]?.[4], 'active');
  });

  test('a revoked bootstrap key stays revoked across a restart, and the service still starts', async (t) => {
    // Revoking a leaked bootstrap key must not be undone by the next deploy that still sets it,
    // nor may it keep the service from starting.
    const dataDir = await tempDir(t);
    const env = { PARLEY_BOOTSTRAP_API_KEY: bootstrapKey };
    const first = await startService({ dataDir, env });
    t.after(() => first.kill());
    await first.stop();
    const [row] = await keyRows(dataDir);
    await ok(dataDir, ['keys', 'revoke', String(row?.[0])]);

    const second = await startService({ dataDir, env });
    t.after(() => second.kill());
    const { status, body } = await listUsers(second, bootstrapKey);
    assert.equal(status, 401);
    assert.equal(body.error?.code, 'invalid_api_key');
    assert.equal((await keyRows(dataDir)).length, 1);
  });
});

describe('keys managed with the CLI while the service runs', () => {
  test('a key created with the CLI is accepted at once, and refused at once after the CLI revokes it', async (t) => {
    const dataDir = await tempDir(t);
    const service = await startService({ dataDir, env: { LOG_LEVEL: 'warn' } });
    t.after(() => service.kill());

    await ok(dataDir, ['tenants', 'create', 'acme']);
    const created = await ok(dataDir, ['keys', 'create', '--tenant', 'acme', '--agents', 'support']);
    const key = created.stdout.trim();
    const id = /\b(key_\S+)/.exec(created.stderr)?.[1];
    assert.ok(id, created.stderr);

    assert.equal((await listUsers(service, key)).status, 200);

    await ok(dataDir, ['keys', 'revoke', id]);
    const refused = await listUsers(service, key);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error?.code, 'invalid_api_key');
  });
});

describe('the service with an invalid configuration', { concurrency: 3 }, () => {
  const cases: Array<[string, Record<string, string>]> = [
    ['PORT', { PORT: 'notaport' }],
    ['PARLEY_TOKEN_SECRET', { PARLEY_TOKEN_SECRET: 'short' }],
    ['PARLEY_TOKEN_TTL', { PARLEY_TOKEN_TTL: 'abc' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
  ];
  for (const [variable, env] of cases) {
    test(`a bad ${variable} makes it exit 1 with one line on stderr naming ${variable}`, async (t) => {
      const dataDir = await tempDir(t);
      const result = await runServiceToExit(dataDir, env);
      assert.equal(result.code, 1, result.stderr);
      const errors = lines(result.stderr);
      assert.equal(errors.length, 1, result.stderr);
      assert.match(errors[0] ?? '', new RegExp(`\\b${variable}\\b`));
      assert.equal(result.stdout, '');
    });
  }

  test('REDIS_URL without PARLEY_NODE_URL makes it exit 1 with one line naming PARLEY_NODE_URL', async (t) => {
    // Peers forward a session's requests to its owner: a clustered process must say where it listens.
    const dataDir = await tempDir(t);
    const result = await runServiceToExit(dataDir, { REDIS_URL: 'redis://x' });
    assert.equal(result.code, 1, result.stderr);
    const errors = lines(result.stderr);
    assert.equal(errors.length, 1, result.stderr);
    assert.match(errors[0] ?? '', /\bPARLEY_NODE_URL\b.*\bREDIS_URL\b/);
  });

  test('REDIS_URL without PARLEY_TOKEN_SECRET makes it exit 1 with one line naming PARLEY_TOKEN_SECRET', async (t) => {
    const dataDir = await tempDir(t);
    const result = await runServiceToExit(dataDir, {
      REDIS_URL: 'redis://x',
      PARLEY_NODE_URL: 'http://127.0.0.1:1',
    });
    assert.equal(result.code, 1, result.stderr);
    const errors = lines(result.stderr);
    assert.equal(errors.length, 1, result.stderr);
    assert.match(errors[0] ?? '', /\bPARLEY_TOKEN_SECRET\b/);
  });

  test('DATABASE_URL without PARLEY_TOKEN_SECRET makes it exit 1 with one line naming PARLEY_TOKEN_SECRET', async (t) => {
    // Several processes sharing one database must accept each other's session tokens.
    const dataDir = await tempDir(t);
    const result = await runServiceToExit(dataDir, { DATABASE_URL: 'postgres://x/y' });
    assert.equal(result.code, 1, result.stderr);
    const errors = lines(result.stderr);
    assert.equal(errors.length, 1, result.stderr);
    assert.match(errors[0] ?? '', /\bPARLEY_TOKEN_SECRET\b/);
  });

  test('DATABASE_URL and REDIS_URL together make it exit 1 with one line naming one of them', async (t) => {
    const dataDir = await tempDir(t);
    const result = await runServiceToExit(dataDir, {
      DATABASE_URL: 'postgres://x/y',
      REDIS_URL: 'redis://x',
    });
    assert.equal(result.code, 1, result.stderr);
    const errors = lines(result.stderr);
    assert.equal(errors.length, 1, result.stderr);
    assert.match(errors[0] ?? '', /DATABASE_URL|REDIS_URL/);
  });
});

describe('the service with DATABASE_URL', () => {
  test('it serves /readyz and stores users in the PostgreSQL database', async (t) => {
    const created = await createTestDatabase();
    if (created.db === null) {
      t.skip(created.reason);
      return;
    }
    const db = created.db;
    t.after(() => db.drop());
    const dataDir = await tempDir(t);
    const service = await startService({
      dataDir,
      env: {
        DATABASE_URL: db.url,
        PARLEY_TOKEN_SECRET: 'a-token-secret-of-at-least-32-bytes!',
        PARLEY_BOOTSTRAP_API_KEY: bootstrapKey,
        LOG_LEVEL: 'warn',
      },
    });
    t.after(() => service.kill());

    const ready = await fetch(`${service.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ready' });
    const response = await fetch(`${service.url}/v1/agents/users`, {
      method: 'POST',
      headers: { 'x-api-key': bootstrapKey, 'content-type': 'application/json' },
      body: JSON.stringify({ reference: 'crm:42', name: 'Ann' }),
    });
    assert.equal(response.status, 201, await response.clone().text());
    const user = (await response.json()) as { id: string };
    assert.equal((await listUsers(service, bootstrapKey)).status, 200);
    assert.equal(existsSync(join(dataDir, 'parley.db')), false, 'no SQLite file beside the database');

    // The user is in PostgreSQL, read over a connection of its own.
    const store = new PostgresStore(db.url);
    try {
      const [tenant] = await store.listTenants();
      assert.equal((await store.getUser(String(tenant?.id), user.id))?.reference, 'crm:42');
    } finally {
      await store.close();
    }
    assert.equal((await service.stop('SIGTERM', 5_000)).code, 0);
  });
});

describe('shutting the service down', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`${signal} makes it exit with code 0 promptly, even with a kept-alive client connection`, async (t) => {
      const dataDir = await tempDir(t);
      const service = await startService({ dataDir, env: { LOG_LEVEL: 'warn' } });
      t.after(() => service.kill());
      // fetch keeps the connection open: close-with-grace must not wait for it until its 10 s deadline.
      assert.equal((await fetch(`${service.url}/healthz`)).status, 200);

      const exit = await service.stop(signal, 5_000);
      assert.deepEqual(exit, { code: 0, signal: null });
      assert.doesNotMatch(service.stderr(), /timeout|Error/);
    });
  }
});

describe('other ways of starting the service', () => {
  test('parley serve starts the same service and exits 0 on SIGTERM', async (t) => {
    const dataDir = await tempDir(t);
    const service = await startService({
      dataDir,
      script: cliEntry,
      args: ['serve'],
      env: { PARLEY_BOOTSTRAP_API_KEY: bootstrapKey },
    });
    t.after(() => service.kill());
    assert.equal((await listUsers(service, bootstrapKey)).status, 200);
    assert.equal((await service.stop('SIGTERM', 5_000)).code, 0);
  });

  test('it serves when started through a symlinked path', async (t) => {
    // Release layouts like /opt/parley -> /opt/parley-1.2 start the entry point through a link.
    const dataDir = await tempDir(t);
    const link = join(await tempDir(t), 'parley');
    await symlink(projectRoot, link, 'dir');
    const service = await startService({ dataDir, script: join(link, 'src', 'server.ts') });
    t.after(() => service.kill());
    assert.equal((await fetch(`${service.url}/healthz`)).status, 200);
  });

  test('it serves from a directory whose path contains a space', async (t) => {
    const dataDir = await tempDir(t);
    const root = await projectCopyWithSpace(t);
    const service = await startService({ dataDir, script: join(root, 'src', 'server.ts'), cwd: root });
    t.after(() => service.kill());
    assert.equal((await fetch(`${service.url}/healthz`)).status, 200);
  });
});

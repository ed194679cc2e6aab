// Runs the Store contract against SqliteStore, and checks what only the SQLite file itself can show:
// WAL mode, and migrations shared safely by several connections and processes.
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { sqliteMigrations } from '../../../src/store/sqlite/migrations.ts';
import { SqliteStore } from '../../../src/store/sqlite/store.ts';
import type { Migration } from '../../../src/store/store.ts';
import { storeContract } from '../contract/index.ts';

storeContract('SqliteStore', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'parley-store-'));
  return {
    store: new SqliteStore(join(dir, 'parley.db')),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

/** What a request of a later turn of the event loop sees (the key epoch's data_version is read once per turn). */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const latestVersion = Math.max(...sqliteMigrations.map((m) => m.version));

/** Reads the file with a plain connection, so that assertions do not trust the code under test. */
function inspect<T>(file: string, read: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

const appliedVersions = (file: string) =>
  inspect(file, (db) =>
    db
      .prepare('SELECT version, count(*) AS n FROM schema_migrations GROUP BY version ORDER BY version')
      .all()
      // node:sqlite's rows have no prototype; compare them as plain objects.
      .map((row) => ({ ...row })),
  ) as { version: number; n: number }[];

describe('SqliteStore on its file', () => {
  let dir: string;
  let file: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'parley-store-'));
    file = join(dir, 'parley.db');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the database file in WAL journal mode', async () => {
    const store = new SqliteStore(file);
    try {
      await store.migrate();
      // Asked over a second connection while the store is open: WAL is a property of the file.
      assert.equal(
        inspect(file, (db) => db.prepare('PRAGMA journal_mode').get()?.journal_mode),
        'wal',
      );
    } finally {
      await store.close();
    }
  });

  it('migrate returns the version of the last migration and records each migration once', async () => {
    const store = new SqliteStore(file);
    try {
      assert.equal(await store.migrate(), latestVersion);
      assert.equal(await store.migrate(), latestVersion);
    } finally {
      await store.close();
    }
    assert.deepEqual(
      appliedVersions(file),
      sqliteMigrations.map((m) => ({ version: m.version, n: 1 })),
    );
  });

  it('a later migration is applied on its own to an existing file, keeping the data', async () => {
    const first = new SqliteStore(file);
    try {
      await first.migrate();
      await first.createTenant('t1', 'Acme');
    } finally {
      await first.close();
    }
    const next: Migration = {
      version: latestVersion + 1,
      name: 'test addition',
      sql: 'CREATE TABLE contract_probe (x INTEGER)',
    };
    const second = new SqliteStore(file, [...sqliteMigrations, next]);
    try {
      assert.equal(await second.migrate(), next.version);
      assert.equal((await second.getTenant('t1'))?.name, 'Acme');
    } finally {
      await second.close();
    }
    assert.deepEqual(
      appliedVersions(file).map((row) => row.version),
      [...sqliteMigrations.map((m) => m.version), next.version],
    );
  });

  it('two stores on one file migrating together apply each migration once', async () => {
    const a = new SqliteStore(file);
    const b = new SqliteStore(file);
    try {
      assert.deepEqual(await Promise.all([a.migrate(), b.migrate()]), [latestVersion, latestVersion]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    assert.deepEqual(
      appliedVersions(file),
      sqliteMigrations.map((m) => ({ version: m.version, n: 1 })),
    );
  });

  it('processes opening and migrating a new file at the same moment all succeed, applying each migration once', {
    timeout: 60_000,
  }, async () => {
    // node:sqlite is synchronous, so only separate processes really overlap. The race window is well
    // under a millisecond (the next test pins its cause down deterministically), hence several new files
    // per run, each opened by both processes at start instants a fraction of a millisecond apart.
    const files = Array.from({ length: 12 }, (_, i) => join(dir, `race-${i}`, 'parley.db'));
    const children = [startLockstepChild(files), startLockstepChild(files)];
    try {
      await Promise.all(children.map((child) => child.next()));
      const failures: { file: string; results: unknown[] }[] = [];
      for (const [round, f] of files.entries()) {
        const startAt = Date.now() + 10;
        const skew = (round % 5) * 0.25;
        children.forEach((child, i) => {
          child.process.stdin.write(`${startAt + i * skew}\n`);
        });
        const results = (await Promise.all(children.map((child) => child.next()))).map((line) =>
          JSON.parse(line),
        );
        if (!results.every(isVersion)) failures.push({ file: f, results });
      }
      assert.deepEqual(failures, [], 'every process opens and migrates every file');
      for (const f of files) {
        assert.deepEqual(
          appliedVersions(f),
          sqliteMigrations.map((m) => ({ version: m.version, n: 1 })),
        );
      }
    } finally {
      for (const child of children) {
        child.process.stdin.end();
        if (child.process.exitCode === null) child.process.kill();
      }
    }
  });

  it('opening a new file waits for a writer on it instead of failing at once', async () => {
    // The writer runs on another thread, because opening a store blocks this one until the writer is done.
    const writer = new Worker(holdWriteLock, {
      eval: true,
      workerData: { file, holdMs: 150 },
    });
    try {
      assert.equal(await once(writer, 'message').then(([message]) => message), 'locked');
      const store = new SqliteStore(file);
      try {
        assert.equal(await store.migrate(), latestVersion);
      } finally {
        await store.close();
      }
      assert.equal(
        inspect(file, (db) => db.prepare('PRAGMA journal_mode').get()?.journal_mode),
        'wal',
      );
    } finally {
      await writer.terminate();
    }
  });

  it('a revocation committed over another connection moves the key epoch this store reads next', async () => {
    const store = new SqliteStore(file);
    const other = new SqliteStore(file);
    try {
      await store.migrate();
      await store.createTenant('t1', 'Acme');
      const key = await store.createApiKey({
        id: 'key_1',
        tenant_id: 't1',
        hash: 'h1',
        prefix: 'pk_',
        agents: ['*'],
      });
      const start = await store.apiKeyEpoch();
      // Another connection's commit that changes no key: the epoch is read again, and has not moved.
      await other.createTenant('t2', 'Other');
      await nextTurn();
      assert.equal(await store.apiKeyEpoch(), start);
      assert.equal(await other.revokeApiKey(key.id), true);
      // data_version is read once per turn of the event loop: the requests of this one were read before the
      // revocation; those of the next see it.
      assert.equal(await store.apiKeyEpoch(), start);
      await nextTurn();
      assert.notEqual(await store.apiKeyEpoch(), start);
    } finally {
      await Promise.all([store.close(), other.close()]);
    }
  });

  it('a key revoked by hand-written SQL moves the key epoch too (a trigger moves it, not the store)', async () => {
    const store = new SqliteStore(file);
    try {
      await store.migrate();
      await store.createTenant('t1', 'Acme');
      await store.createApiKey({ id: 'key_1', tenant_id: 't1', hash: 'h1', prefix: 'pk_', agents: ['*'] });
      const start = await store.apiKeyEpoch();
      const db = new DatabaseSync(file);
      try {
        db.prepare("UPDATE api_keys SET revoked_at = '2030-01-01T00:00:00.000Z' WHERE id = 'key_1'").run();
      } finally {
        db.close();
      }
      await nextTurn();
      assert.notEqual(await store.apiKeyEpoch(), start);
    } finally {
      await store.close();
    }
  });

  it('deleting a file leaves none of its bytes in the database', async () => {
    const store = new SqliteStore(file);
    try {
      await store.migrate();
      await store.createTenant('t1', 'Acme');
      const stored = await store.createFile(
        't1',
        { id: 'file_1', name: 'a.txt', mime_type: 'text/plain', metadata: {}, session_id: null },
        Buffer.from('bytes'),
      );
      await store.deleteFile('t1', stored.id);
      const blobs = inspect(file, (db) => db.prepare('SELECT count(*) AS n FROM file_blobs').get()) as {
        n: number;
      };
      assert.equal(blobs.n, 0);
    } finally {
      await store.close();
    }
  });
});

/** Worker code: takes the write lock of a new file, holds it for a while, then commits. */
const holdWriteLock = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(workerData.file);
db.exec('BEGIN IMMEDIATE');
parentPort.postMessage('locked');
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.holdMs);
db.exec('COMMIT');
db.close();
`;

const isVersion = (r: unknown) =>
  typeof r === 'object' && r !== null && 'version' in r && r.version === latestVersion;

const projectRoot = fileURLToPath(new URL('../../../', import.meta.url));
const lockstepScript = fileURLToPath(new URL('./fixtures/migrate-in-lockstep.ts', import.meta.url));

/** Starts the lockstep child; `next` resolves with its next stdout line and fails if it exits first. */
function startLockstepChild(files: string[]) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [lockstepScript, ...files], {
    cwd: projectRoot,
    stdio: 'pipe',
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    process: child,
    async next(): Promise<string> {
      const line = await lines.next();
      if (line.done) throw new Error(`the child process ended early: ${stderr}`);
      return line.value;
    },
  };
}

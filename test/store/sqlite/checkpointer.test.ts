// The WAL's checkpoints run on the checkpointer's thread: what the store commits reaches the database file
// itself without any commit of the store crossing SQLite's checkpoint threshold.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, it } from 'node:test';
import { SqliteStore } from '../../../src/store/sqlite/store.ts';
import { projectRoot } from '../../../support/processes.ts';
import { waitFor } from '../../helpers/wait.ts';

const dir = await mkdtemp(join(tmpdir(), 'parley-checkpoint-'));
after(() => rm(dir, { recursive: true, force: true }));

/** The tenants the database file holds on its own, its WAL left behind (a copy of the file alone). */
function tenantsInFile(file: string): number {
  const copy = join(dir, `copy-${Date.now()}-${Math.random()}.db`);
  copyFileSync(file, copy);
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(copy, { readOnly: true });
    // Before the migrations' pages are copied, the file has no tables at all.
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'tenants'").get();
    return table ? Number(db.prepare('SELECT count(*) AS n FROM tenants').get()?.n) : 0;
  } catch {
    // Copied while the checkpointer was writing the file: a torn copy, read again at the next poll.
    return 0;
  } finally {
    db?.close();
  }
}

it('copies what the store commits into the database file on its own thread, far below the WAL size at which a commit would', async () => {
  const file = join(dir, 'parley.db');
  const store = new SqliteStore(file);
  try {
    await store.migrate();
    assert.ok(store.checkpointer, 'a store on a file has a checkpointer');
    // A few dozen pages of commits: far below the 4,096 at which the main connection would checkpoint.
    for (let i = 0; i < 200; i++) await store.createTenant(`t${i}`, `Tenant ${i}`);
    await waitFor('the 200 tenants in the database file itself', () => tenantsInFile(file) === 200);
    assert.ok(store.checkpointer.checkpoints > 0);
  } finally {
    await store.close();
  }
});

it('has no checkpointer for an in-memory database, and closes all the same', async () => {
  const store = new SqliteStore(':memory:');
  await store.migrate();
  assert.equal(store.checkpointer, null);
  await store.close();
});

it('does not keep a process alive whose store was never closed (a start that failed)', async () => {
  const script = `
    import { SqliteStore } from ${JSON.stringify(join(projectRoot, 'src/store/sqlite/store.ts'))};
    const store = new SqliteStore(${JSON.stringify(join(dir, 'unclosed.db'))});
    await store.migrate();
  `;
  // A process the thread keeps alive is killed after 20 s: the test fails instead of hanging.
  // A file, not `-e`: an evaluated script ends its process whatever handles are left.
  const file = join(dir, 'unclosed.mjs');
  writeFileSync(file, script);
  const child = spawn(process.execPath, [file], {
    stdio: 'inherit',
    signal: AbortSignal.timeout(20_000),
  });
  child.on('error', () => {});
  const [code, signal] = await once(child, 'exit');
  assert.deepEqual({ code, signal }, { code: 0, signal: null });
});

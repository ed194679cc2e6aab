// The `parley` CLI as the tests use it: a command that must succeed, and a data directory that has its
// database, made as an operator makes one (`parley migrate`), since the other commands refuse to create it.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { type RunOptions, runCli, tempDir } from './process.ts';

/** Runs the CLI and fails with its output unless it exits 0. */
export async function ok(dataDir: string, args: string[], options?: RunOptions & { script?: string }) {
  const result = await runCli(dataDir, args, options);
  assert.equal(result.code, 0, `parley ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result;
}

/** A fresh temporary data directory with a migrated parley.db, removed when `t` ends. */
export async function migratedDir(t: Pick<TestContext, 'after'>): Promise<string> {
  const dataDir = await tempDir(t);
  await ok(dataDir, ['migrate']);
  return dataDir;
}

// Child processes and temp dirs of a bench run: spawn, wait, and clean up on exit, Ctrl-C or error.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanEnv, exitOf, projectRoot, stopChild } from '../support/processes.ts';

export const benchDir = fileURLToPath(new URL('./', import.meta.url));

const children = new Set<ChildProcess>();
const dirs = new Set<string>();

/** A fresh temp dir, removed by cleanup(). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `parley-bench-${prefix}-`));
  dirs.add(dir);
  return dir;
}

export interface Child {
  readonly process: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
  stop(): Promise<void>;
}

/** Spawns `node <nodeArgs> <script> <args>` from the project root; stdout and stderr are kept (last 64 KB). */
export function spawnNode(
  nodeArgs: string[],
  script: string,
  args: string[],
  env: Record<string, string>,
  options: { onStdout?: (chunk: string) => void } = {},
): Child {
  return spawnChild(process.execPath, [...nodeArgs, script, ...args], env, options);
}

/** Spawns any program from the project root, tracked and cleaned up like the Node children. */
export function spawnChild(
  command: string,
  args: string[],
  env: Record<string, string>,
  options: { onStdout?: (chunk: string) => void } = {},
): Child {
  const child = spawn(command, args, {
    cwd: projectRoot,
    // NODE_OPTIONS too: a developer's Node flags must not change what is measured.
    env: cleanEnv(env, ['NODE_OPTIONS']),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  const keep = (chunk: string) => {
    output = (output + chunk).slice(-65_536);
  };
  child.stdout
    .setEncoding('utf8')
    .on('data', (c: string) => (options.onStdout ? options.onStdout(c) : keep(c)));
  child.stderr.setEncoding('utf8').on('data', keep);
  const exited = exitOf(child).then(
    ({ code }) => code,
    (err) => {
      keep(String(err));
      return null;
    },
  );
  exited.finally(() => children.delete(child));
  return {
    process: child,
    exited,
    output: () => output,
    async stop() {
      await stopChild(child, exited);
    },
  };
}

/** Kills every child still running and removes every temp dir; synchronous so it can run on exit. */
export function cleanup(): void {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs.clear();
}

let installed = false;
/** Cleans up on normal exit, Ctrl-C, SIGTERM and uncaught errors. */
export function installCleanup(): void {
  if (installed) return;
  installed = true;
  process.on('exit', cleanup);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\n${signal}: stopping the servers and removing temp dirs\n`);
      cleanup();
      process.exit(130);
    });
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

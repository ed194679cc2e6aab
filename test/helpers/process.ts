// Real child processes for end-to-end tests: the CLI and the service started as `node src/….ts` (Node strips the types),
// spoken to over loopback HTTP, with every child tracked so that a failing test cannot leak one.
import { type ChildProcess, spawn } from 'node:child_process';
import { cp, mkdir, rm, symlink } from 'node:fs/promises';
import { join, sep } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../support/free-port.ts';
import {
  cleanEnv as cleanProcessEnv,
  type Exit,
  exitOf,
  pollUntil,
  projectRoot,
  stopChild,
} from '../../support/processes.ts';
import { makeTempDir } from './app.ts';
export const cliEntry = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
export const serverEntry = fileURLToPath(new URL('../../src/server.ts', import.meta.url));
export const binEntry = fileURLToPath(new URL('../../bin/parley.js', import.meta.url));

export interface RunResult extends Exit {
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Variables added to the clean environment (see cleanEnv). */
  env?: Record<string, string>;
  cwd?: string;
  /** The child is killed, and the run fails, after this long. */
  timeoutMs?: number;
  /** Node flags before the script; none by default. */
  nodeArgs?: string[];
}

const live = new Set<ChildProcess>();

/** The environment of a child: see support/processes.ts; the test runner's own marker is dropped too. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  return cleanProcessEnv(extra, ['NODE_TEST_CONTEXT']);
}

/** A fresh temporary directory that is removed when the test (or suite) `t` ends. */
export async function tempDir(t: Pick<TestContext, 'after'>, prefix?: string): Promise<string> {
  const dir = await makeTempDir(prefix);
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function track(child: ChildProcess): Promise<Exit> {
  live.add(child);
  return exitOf(child).finally(() => live.delete(child));
}

/** Collects a child's stdout and stderr as text while it runs. */
function captureOutput(child: ChildProcess): { stdout: () => string; stderr: () => string } {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return { stdout: () => stdout, stderr: () => stderr };
}

/** Runs `node <script> <args>` (with `nodeArgs` before the script) to completion. */
export async function runNode(script: string, args: string[], options: RunOptions = {}): Promise<RunResult> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), script, ...args], {
    cwd: options.cwd ?? projectRoot,
    env: cleanEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = captureOutput(child);
  const exited = track(child);
  const timeoutMs = options.timeoutMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`${script} ${args.join(' ')} did not finish within ${timeoutMs} ms\n${output.stderr()}`),
      );
    }, timeoutMs);
  });
  try {
    const exit = await Promise.race([exited, timedOut]);
    // 'exit' can come before the pipes are drained; 'close' cannot.
    if (child.stdout && !child.stdout.readableEnded) await new Promise((r) => child.stdout?.once('end', r));
    if (child.stderr && !child.stderr.readableEnded) await new Promise((r) => child.stderr?.once('end', r));
    return { ...exit, stdout: output.stdout(), stderr: output.stderr() };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs the `parley` CLI from the sources against `dataDir`, with logging silenced. */
export function runCli(
  dataDir: string,
  args: string[],
  options: RunOptions & { script?: string } = {},
): Promise<RunResult> {
  return runNode(options.script ?? cliEntry, args, {
    ...options,
    env: { PARLEY_DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...options.env },
  });
}

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly dataDir: string;
  /** Resolves when the process has exited, however that happened. */
  readonly exited: Promise<Exit>;
  stdout(): string;
  stderr(): string;
  /** stdout parsed as pino JSON lines (lines that are not JSON are skipped). */
  logs(): Array<Record<string, unknown>>;
  /** Sends `signal` and waits for the exit; SIGKILLs and throws when that takes longer than `timeoutMs`. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<Exit>;
  /** SIGKILL unless already gone; for cleanup hooks. */
  kill(): Promise<void>;
}

export interface StartOptions {
  dataDir: string;
  env?: Record<string, string>;
  port?: number;
  /** Defaults to src/server.ts; pass cliEntry with args ['serve'] to start through the CLI. */
  script?: string;
  args?: string[];
  cwd?: string;
  /** How long to wait for GET /healthz to answer. */
  readyTimeoutMs?: number;
}

/** Spawns the service on loopback without waiting for it (see startService for the usual case). */
export async function spawnService(options: StartOptions): Promise<ServiceProcess> {
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, [options.script ?? serverEntry, ...(options.args ?? [])], {
    cwd: options.cwd ?? projectRoot,
    env: cleanEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      PARLEY_DATA_DIR: options.dataDir,
      ...options.env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = captureOutput(child);
  const exited = track(child);
  let exit: Exit | undefined;
  exited.then(
    (e) => {
      exit = e;
    },
    () => {},
  );

  const service: ServiceProcess = {
    child,
    port,
    url: `http://127.0.0.1:${port}`,
    dataDir: options.dataDir,
    exited,
    stdout: output.stdout,
    stderr: output.stderr,
    logs: () => parseJsonLines(output.stdout()),
    async stop(signal = 'SIGTERM', timeoutMs = 15_000) {
      if (exit) return exit;
      if (await stopChild(child, exited, signal, timeoutMs)) {
        throw new Error(`the service did not exit within ${timeoutMs} ms of ${signal}`);
      }
      return exited;
    },
    async kill() {
      if (exit) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
  return service;
}

/** Spawns the service and waits until GET /healthz answers 200; fails with its output if it exits first. */
export async function startService(options: StartOptions): Promise<ServiceProcess> {
  const service = await spawnService(options);
  try {
    await waitForHealth(service, options.readyTimeoutMs ?? 20_000);
  } catch (err) {
    await service.kill();
    throw err;
  }
  return service;
}

export async function waitForHealth(service: ServiceProcess, timeoutMs = 20_000): Promise<void> {
  let gone: Exit | undefined;
  service.exited.then(
    (e) => {
      gone = e;
    },
    () => {},
  );
  let lastError: unknown;
  const healthy = async () => {
    try {
      const response = await fetch(`${service.url}/healthz`, { signal: AbortSignal.timeout(1_000) });
      await response.arrayBuffer();
      if (response.status === 200) return true;
      lastError = new Error(`GET /healthz answered ${response.status}`);
    } catch (err) {
      lastError = err;
    }
    return false;
  };
  const readiness = await pollUntil(healthy, { gone: () => gone !== undefined, timeoutMs, intervalMs: 100 });
  const output = `stderr: ${service.stderr()}\nstdout: ${service.stdout()}`;
  if (readiness === 'gone' && gone) {
    throw new Error(
      `the service exited (code ${gone.code}, signal ${gone.signal}) before answering /healthz\n${output}`,
    );
  }
  if (readiness !== 'ready') {
    throw new Error(
      `the service did not answer /healthz within ${timeoutMs} ms (${String(lastError)})\n${output}`,
    );
  }
}

/** SIGKILLs every child these helpers started that is still running; a safety net for `after` hooks. */
export async function killLeftoverChildren(): Promise<void> {
  await Promise.all(
    [...live].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
}

export function parseJsonLines(text: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const value: unknown = JSON.parse(line);
      if (value && typeof value === 'object' && !Array.isArray(value))
        out.push(value as Record<string, unknown>);
    } catch {
      // Not a log record (a stack trace, say): the caller can still read stdout() as text.
    }
  }
  return out;
}

/** Non-empty lines of a child's output. */
export function lines(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '');
}

/**
 * A copy of the sources (src/, bin/, packages/, package.json; node_modules linked) under a directory whose path
 * contains a space, removed when `t` ends: for checking that nothing depends on where it is installed.
 */
export async function projectCopyWithSpace(t: Pick<TestContext, 'after'>): Promise<string> {
  const root = join(await tempDir(t, 'parley copy-'), 'my parley');
  await mkdir(root);
  for (const entry of ['src', 'bin', 'packages', 'package.json', 'tsconfig.json']) {
    // packages/ without what a build left (dist/): the service runs the sources.
    await cp(join(projectRoot, entry), join(root, entry), {
      recursive: true,
      filter: (from) => !from.split(sep).includes('dist'),
    });
  }
  await symlink(join(projectRoot, 'node_modules'), join(root, 'node_modules'), 'dir');
  return root;
}

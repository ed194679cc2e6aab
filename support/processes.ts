// Child processes as the tests, the bench and `npm run cluster` start them: a clean environment, the exit
// as a promise, a stop that escalates to SIGKILL, and polling until a child is ready.
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

export const projectRoot = fileURLToPath(new URL('../', import.meta.url));

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

// What the service reads: a developer's shell (or CI) must not leak a DATABASE_URL or LOG_LEVEL into a
// child that is meant to start from a known state.
const serviceVariable = /^(PORT|HOST|DATABASE_URL|REDIS_URL|PARLEY_.*|OPENAI_.*|OTEL_.*|LOG_LEVEL)$/;

/** This process's environment without the service's variables nor `alsoDrop`, plus `extra`. */
export function cleanEnv(
  extra: Record<string, string> = {},
  alsoDrop: readonly string[] = [],
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !serviceVariable.test(name) && !alsoDrop.includes(name)) env[name] = value;
  }
  return { ...env, ...extra };
}

/** Resolves when `child` exits, with its code or signal; rejects when it could not be started. */
export function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

export const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/**
 * Sends `signal`, then SIGKILL should the child still run `graceMs` later; resolves once `exited` has,
 * with whether the SIGKILL was needed. A child that has already exited is left alone.
 */
export async function stopChild(
  child: ChildProcess,
  exited: Promise<unknown>,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 5_000,
): Promise<boolean> {
  if (hasExited(child)) return false;
  let killed = false;
  child.kill(signal);
  const timer = setTimeout(() => {
    killed = true;
    child.kill('SIGKILL');
  }, graceMs);
  await exited.catch(() => {});
  clearTimeout(timer);
  return killed;
}

export type Readiness = 'ready' | 'gone' | 'timeout';

/**
 * Asks `ready` every `intervalMs` until it answers true ('ready'), the child is `gone` first ('gone') or
 * `timeoutMs` has passed ('timeout'). A check that throws counts as not ready yet.
 */
export async function pollUntil(
  ready: () => Promise<boolean>,
  options: { gone: () => boolean; timeoutMs: number; intervalMs: number },
): Promise<Readiness> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    if (options.gone()) return 'gone';
    if (await ready().catch(() => false)) return 'ready';
    if (Date.now() > deadline) return 'timeout';
    await sleep(options.intervalMs);
  }
}

// `npm run cluster -- --nodes 3`: a local Parley cluster for development. One redis-server (unless REDIS_URL
// is set), N processes of src/server.ts on consecutive ports sharing one data directory (or DATABASE_URL),
// their log lines prefixed with the node's name. Ctrl-C or SIGTERM drains the nodes, then stops Redis.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort } from '../support/free-port.ts';
import { exitOf, pollUntil, stopChild } from '../support/processes.ts';
import { answersPing, redisServerArgs } from '../support/redis-server.ts';

const serverEntry = fileURLToPath(new URL('../src/server.ts', import.meta.url));
const usage = `usage: npm run cluster -- [--nodes N] [--port-base P] [--data-dir DIR]
  --nodes N       processes to start, 1-32 (default 3)
  --port-base P   port of node1; node2 listens on P+1, and so on (default 3001)
  --data-dir DIR  shared SQLite database and token secret (default ./data/cluster)
REDIS_URL (else a redis-server is started here), DATABASE_URL, PARLEY_TOKEN_SECRET (else kept in
DIR/token-secret), PARLEY_BOOTSTRAP_API_KEY, PARLEY_AGENTS_FILE and LOG_LEVEL reach every node.`;

function fail(message: string): never {
  console.error(`cluster: ${message}\n${usage}`);
  process.exit(2);
}

function integer(value: string, name: string, min: number, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    fail(`${name} must be a whole number from ${min} to ${max}`);
  return Number(value);
}

const str = { type: 'string' } as const;
const options = { nodes: str, 'port-base': str, 'data-dir': str, help: { type: 'boolean' } } as const;
const args = (() => {
  try {
    return parseArgs({ options }).values;
  } catch (err) {
    fail((err as Error).message);
  }
})();
if (args.help) {
  console.log(usage);
  process.exit(0);
}
const nodeCount = integer(args.nodes ?? '3', '--nodes', 1, 32);
const portBase = integer(args['port-base'] ?? '3001', '--port-base', 1, 65_536 - nodeCount);
const dataDir = resolve(args['data-dir'] ?? './data/cluster');

/** The secret every node signs session tokens with: the file and format a single node would generate. */
function tokenSecret(): string {
  if (process.env.PARLEY_TOKEN_SECRET) return process.env.PARLEY_TOKEN_SECRET;
  const file = resolve(dataDir, 'token-secret');
  mkdirSync(dataDir, { recursive: true });
  try {
    writeFileSync(file, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return readFileSync(file, 'utf8').trim();
}

type Child = { name: string; process: ChildProcess; exited: Promise<void>; gone: boolean };
const children: Child[] = [];
let stopping = false;

/** Spawns in its own process group, so that a terminal's Ctrl-C reaches only this script, which then stops
 * the children in order: nodes first, Redis last (the nodes need Redis to hand their shards over). */
function start(name: string, command: string, argv: string[], env = process.env) {
  if (stopping) throw new Error('stopping');
  const child = spawn(command, argv, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = `${name.padEnd(6)}| `;
  createInterface({ input: child.stdout }).on('line', (line) => process.stdout.write(`${prefix}${line}\n`));
  createInterface({ input: child.stderr }).on('line', (line) => process.stderr.write(`${prefix}${line}\n`));
  const entry: Child = { name, process: child, exited: Promise.resolve(), gone: false };
  entry.exited = new Promise<void>((done) => {
    const end = (why: string) => {
      entry.gone = true;
      console.error(`${prefix}${why}`);
      done();
    };
    exitOf(child).then(
      ({ code, signal }) => end(`exited (${signal ?? `code ${code}`})`),
      (err: Error) => end(`cannot start ${command}: ${err.message}`),
    );
  });
  children.push(entry);
  return entry;
}

async function waitFor(child: Child, check: () => Promise<boolean>, what: string, timeoutMs = 30_000) {
  const readiness = await pollUntil(check, { gone: () => child.gone, timeoutMs, intervalMs: 100 });
  if (readiness === 'gone') throw new Error(`${child.name} exited before it could ${what}`);
  if (readiness === 'timeout') throw new Error(`${child.name} did not ${what} within ${timeoutMs / 1000} s`);
}

/** SIGTERM, then SIGKILL if the child outlives `graceMs`. */
async function stop(child: Child, graceMs: number) {
  if (!child.gone) await stopChild(child.process, child.exited, 'SIGTERM', graceMs);
}

async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  console.error('cluster: stopping the nodes (they drain), then the Redis started here, if any');
  await Promise.all(children.filter((c) => c.name !== 'redis').map((c) => stop(c, 20_000)));
  await Promise.all(children.filter((c) => c.name === 'redis').map((c) => stop(c, 5_000)));
  process.exit(code);
}

let firstSignalAt = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    // A second Ctrl-C does not wait for the drain. Under `npm run` one Ctrl-C arrives twice (from the
    // terminal and forwarded by npm), so only a signal a second after the first counts as a second one.
    if (stopping && Date.now() - firstSignalAt > 1_000) {
      for (const c of children.filter((c) => !c.gone)) c.process.kill('SIGKILL');
    }
    firstSignalAt ||= Date.now();
    void shutdown(0);
  });
}
// Should this script die of an error, its detached children must not outlive it.
process.on('exit', () => {
  for (const c of children.filter((c) => !c.gone)) c.process.kill('SIGKILL');
});

try {
  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    const port = await freePort();
    const redis = start('redis', 'redis-server', redisServerArgs(port));
    redisUrl = `redis://127.0.0.1:${port}`;
    const url = redisUrl;
    await waitFor(redis, () => answersPing(url), 'answer PING (or set REDIS_URL)', 10_000);
  }
  const secret = tokenSecret();
  const launch = async (i: number) => {
    const [name, port] = [`node${i + 1}`, portBase + i];
    const url = `http://127.0.0.1:${port}`;
    const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', PARLEY_DATA_DIR: dataDir };
    Object.assign(env, { REDIS_URL: redisUrl, PARLEY_NODE_URL: url, PARLEY_TOKEN_SECRET: secret });
    const child = start(name, process.execPath, [serverEntry], env);
    const healthy = async () => (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) })).ok;
    await waitFor(child, healthy, 'answer /healthz');
    return `${name.padEnd(6)} ${url}  pid ${child.process.pid}`;
  };
  // The first node migrates the database alone; the others find it ready.
  const rest = Array.from({ length: nodeCount - 1 }, (_, i) => i + 1);
  const summary = [await launch(0), ...(await Promise.all(rest.map(launch)))];
  const store = process.env.DATABASE_URL ? 'DATABASE_URL' : dataDir;
  console.log(
    ['', ...summary, `redis  ${redisUrl}`, `store  ${store}`, 'Ctrl-C stops the cluster.', ''].join('\n'),
  );
} catch (err) {
  console.error(`cluster: ${(err as Error).message}`);
  await shutdown(1);
}

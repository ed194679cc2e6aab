// The two servers under test, each its own child process: Parley (scripted agent, zero delay) and the floor;
// W1t's and W6's HTTP tool and W1w's webhook endpoint; plus what the harness asks Parley directly: readiness,
// session creation and /metrics.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Pool } from 'undici';
import { freePort } from '../support/free-port.ts';
import { pollUntil } from '../support/processes.ts';
import { benchDir, type Child, sleep, spawnNode, tempDir } from './processes.ts';

export const AGENT_ID = 'bench';

export interface Server {
  readonly name: string;
  readonly url: string;
  /** X-API-Key for Parley; unused by the floor. */
  readonly apiKey: string;
  readonly child: Child;
  stop(): Promise<void>;
}

/** Starts the floor in a fresh temp dir; resolves once it printed its port. */
export async function startFloor(synchronous: 'full' | 'normal' = 'full'): Promise<Server> {
  const name = synchronous === 'full' ? 'floor' : 'floor (synchronous=NORMAL)';
  return startPrintingPort(name, 'floor-server.ts', [tempDir('floor'), synchronous]);
}

/** Starts W1t's HTTP tool (bench/tool-server.ts), its own process; resolves once it printed its port. */
export function startToolServer(): Promise<Server> {
  return startPrintingPort('tool server', 'tool-server.ts', []);
}

/** Starts W1w's webhook endpoint (bench/webhook-receiver.ts), its own process; resolves once it printed its port. */
export function startWebhookReceiver(): Promise<Server> {
  return startPrintingPort('webhook receiver', 'webhook-receiver.ts', []);
}

/** Spawns a bench script that prints {"port":N} once listening on 127.0.0.1. */
async function startPrintingPort(name: string, script: string, args: string[]): Promise<Server> {
  let buffered = '';
  let onPort: (port: number) => void = () => {};
  const port = new Promise<number>((resolve) => {
    onPort = resolve;
  });
  const child = spawnNode(
    [],
    join(benchDir, script),
    args,
    {},
    {
      onStdout: (chunk) => {
        buffered += chunk;
        const line = /^\{"port":(\d+)\}$/m.exec(buffered);
        if (line) onPort(Number(line[1]));
      },
    },
  );
  const ready = await Promise.race([
    port,
    child.exited.then((code) => {
      throw new Error(`the ${name} exited (${code}) before listening:\n${child.output()}`);
    }),
    sleep(20_000).then(() => {
      throw new Error(`the ${name} did not start within 20 s:\n${child.output()}`);
    }),
  ]);
  return { name, url: `http://127.0.0.1:${ready}`, apiKey: '', child, stop: () => child.stop() };
}

export interface ParleyOptions {
  idleSeconds?: number;
  sweepSeconds?: number;
  /** Preload bench/gc-on-signal.ts with --expose-gc: SIGWINCH then runs a full GC (see fullGc). */
  gcOnSignal?: boolean;
  /** Extra node flags, e.g. ['--cpu-prof', '--cpu-prof-dir=…'] to profile the hot path. */
  nodeArgs?: string[];
  /** Name in the log lines (default `parley`). */
  name?: string;
  /** A data dir to use (and share with another process) instead of a fresh one; its agents file is reused. */
  dataDir?: string;
  /** The bootstrap API key, so processes sharing a data dir accept the same key. */
  apiKey?: string;
  /**
   * Cluster mode (docs/internals/architecture.md#sharding-and-ownership): Redis for the leases; the process
   * announces its own URL to its peers.
   */
  cluster?: { redisUrl: string; tokenSecret: string };
  /** More of the child's environment (limits, timeouts), applied last. */
  env?: Record<string, string>;
  /** The server's entry, when it is another checkout's (bench/tracing-cost.ts compares main's); src/server.ts. */
  script?: string;
  /** Agents besides the bench agent (written to a fresh data dir's agents file), e.g. toolAgent(). */
  moreAgents?: unknown[];
}

const BENCH_AGENT = {
  id: AGENT_ID,
  provider: 'scripted',
  scripted: { token_delay_ms: 0 },
  limits: { messages_per_session: 100_000 },
};

export const TOOL_AGENT_ID = 'bench-tool';
/** The tool W1t's messages ask for, and the variable holding the secret its calls are signed with. */
export const TOOL_NAME = 'echo';
export const TOOL_SECRET_ENV = 'BENCH_TOOL_SECRET';

/** The bench agent with one HTTP tool at `toolUrl`, its calls signed as an integrator's would be. */
export function toolAgent(toolUrl: string) {
  return {
    ...BENCH_AGENT,
    id: TOOL_AGENT_ID,
    tools: [
      {
        name: TOOL_NAME,
        description: 'Echoes its input',
        input_schema: { type: 'object', properties: { n: { type: 'integer' } } },
        url: `${toolUrl}/echo`,
        secret_env: TOOL_SECRET_ENV,
      },
    ],
  };
}

export const APPROVAL_AGENT_ID = 'bench-approval';

/** W6's agent: toolAgent whose tool's every call waits for the integrator's decision (the API key's). */
export function approvalAgent(toolUrl: string) {
  const agent = toolAgent(toolUrl);
  return {
    ...agent,
    id: APPROVAL_AGENT_ID,
    tools: agent.tools.map((tool) => ({ ...tool, approval: 'operator' })),
  };
}

/** A Standard Webhooks secret for the tool's signatures. */
export const toolSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** Starts Parley from src/ with a temp data dir and a one-agent catalogue; resolves once /readyz is 200. */
export async function startParley(options: ParleyOptions = {}): Promise<Server> {
  const dir = options.dataDir ?? tempDir('parley');
  const apiKey = options.apiKey ?? `bench_${randomBytes(13).toString('hex')}`.slice(0, 32);
  const agentsFile = join(dir, 'agents.json');
  // A second process on the same data dir must not rewrite the file under the first.
  if (!existsSync(agentsFile)) {
    writeFileSync(agentsFile, JSON.stringify({ agents: [BENCH_AGENT, ...(options.moreAgents ?? [])] }));
  }
  const port = await freePort();
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    PARLEY_DATA_DIR: dir,
    LOG_LEVEL: 'warn',
    PARLEY_BOOTSTRAP_API_KEY: apiKey,
    PARLEY_AGENTS_FILE: agentsFile,
    // The per-key limit (default 1,200/min) would refuse a load test; the plugin still runs, at its maximum.
    PARLEY_RATE_LIMIT_KEY: '1000000',
  };
  if (options.idleSeconds) env.PARLEY_ACTOR_IDLE_SECONDS = String(options.idleSeconds);
  if (options.sweepSeconds) env.PARLEY_SWEEP_SECONDS = String(options.sweepSeconds);
  const url = `http://127.0.0.1:${port}`;
  if (options.cluster) {
    env.REDIS_URL = options.cluster.redisUrl;
    env.PARLEY_NODE_URL = url;
    env.PARLEY_TOKEN_SECRET = options.cluster.tokenSecret;
    // W5 tells which process served a request by its x-parley-node header.
    env.PARLEY_NODE_HEADER = 'true';
  }
  Object.assign(env, options.env);
  const gcArgs = ['--expose-gc', '--import', pathToFileURL(join(benchDir, 'gc-on-signal.ts')).href];
  const child = spawnNode(
    [...(options.gcOnSignal ? gcArgs : []), ...(options.nodeArgs ?? [])],
    options.script ?? 'src/server.ts',
    [],
    env,
  );
  const ready = async () => {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) });
    await response.arrayBuffer();
    return response.status === 200;
  };
  const gone = () => child.process.exitCode !== null;
  const readiness = await pollUntil(ready, { gone, timeoutMs: 30_000, intervalMs: 100 });
  if (readiness === 'gone') throw new Error(`Parley exited before ready:\n${child.output()}`);
  if (readiness === 'timeout') throw new Error(`Parley was not ready within 30 s:\n${child.output()}`);
  return { name: options.name ?? 'parley', url, apiKey, child, stop: () => child.stop() };
}

/** Creates `count` sessions of an agent (32 at a time); returns their ids in creation order. */
export async function createSessions(server: Server, count: number, agent = AGENT_ID): Promise<string[]> {
  const pool = new Pool(server.url, { connections: 32 });
  const ids: string[] = new Array(count);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const { statusCode, body } = await pool.request({
        method: 'POST',
        path: `/v1/agents/${agent}/sessions`,
        headers: { 'x-api-key': server.apiKey, 'content-type': 'application/json' },
        body: '{}',
      });
      const text = await body.text();
      if (statusCode !== 201) throw new Error(`creating a session answered ${statusCode}: ${text}`);
      ids[i] = (JSON.parse(text) as { id: string }).id;
    }
  };
  try {
    await Promise.all(Array.from({ length: 32 }, worker));
  } finally {
    await pool.close();
  }
  return ids;
}

/** Floor "sessions" are just ids: the floor stores whatever session id the path names. */
export function floorSessions(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `ses_floor_${String(i).padStart(6, '0')}`);
}

/** The samples of GET /metrics, by name, labels included (`parley_forwards_total{outcome="ok"}`). */
export async function readMetrics(server: Server): Promise<Map<string, number>> {
  const response = await fetch(`${server.url}/metrics`);
  const text = await response.text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (match?.[1] && match[2]) samples.set(match[1], Number(match[2]));
  }
  return samples;
}

/** A metric that must be present. */
export function metric(samples: Map<string, number>, name: string): number {
  const value = samples.get(name);
  if (value === undefined || Number.isNaN(value)) throw new Error(`/metrics has no ${name}`);
  return value;
}

/** Asks a Parley started with gcOnSignal for a full GC, and gives it a moment. */
export async function fullGc(server: Server): Promise<void> {
  server.child.process.kill('SIGWINCH');
  await sleep(300);
}

let ticksPerSecond: number | undefined;
/** CPU seconds (user + system) the server's process has used so far; null where /proc is unavailable. */
export function cpuSeconds(server: Server): number | null {
  try {
    const stat = readFileSync(`/proc/${server.child.process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  } catch {
    return null;
  }
}

// What W5 asks of its two Parley processes: wait for the shards to split, who served a request, how many
// requests a process relayed, and the recovery probe after the owner is killed.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { sleep } from './processes.ts';
import { metric, readMetrics, type Server } from './servers.ts';

export const NODE_HEADER = 'x-parley-node';
const SHARDS = 1024;
/** A recovery still failing after this long is reported as not recovered, with the children's logs. */
export const RECOVERY_LIMIT_MS = 30_000;
/** How often the recovery probe sends, and how long each attempt may take. */
export const PROBE_EVERY_MS = 50;
export const PROBE_TIMEOUT_MS = 1_000;

/** Waits until A and B own every shard between them, both some, and the split held for a second. */
export async function waitForSplit(a: Server, b: Server): Promise<{ a: number; b: number; seconds: number }> {
  const t0 = performance.now();
  let last = '';
  let since = 0;
  for (;;) {
    const [ma, mb] = await Promise.all([readMetrics(a), readMetrics(b)]);
    const owned = { a: metric(ma, 'parley_owned_shards'), b: metric(mb, 'parley_owned_shards') };
    const now = performance.now();
    const key = `${owned.a}/${owned.b}`;
    if (key !== last) {
      last = key;
      since = now;
    } else if (owned.a + owned.b === SHARDS && owned.a > 0 && owned.b > 0 && now - since >= 1_000) {
      // A hands shards over in batches: a split that still moved a second ago could move sessions later.
      return { ...owned, seconds: (since - t0) / 1000 };
    }
    if (now - t0 > 30_000)
      throw new Error(`the shards did not split within 30 s: A ${owned.a}, B ${owned.b}`);
    await sleep(200);
  }
}

/** The node id a process answers with (every answer carries it). */
export async function nodeOf(server: Server): Promise<string> {
  const response = await fetch(`${server.url}/readyz`);
  await response.arrayBuffer();
  return response.headers.get(NODE_HEADER) ?? '?';
}

/** Requests this process relayed to a peer, whatever came of them. */
export async function forwards(server: Server): Promise<number> {
  let total = 0;
  for (const [name, value] of await readMetrics(server)) {
    if (name.startsWith('parley_forwards_total{')) total += value;
  }
  return total;
}

/** One plain send; never throws. `status` is the HTTP status and error code, or the failure's name. */
export async function send(
  server: Server,
  sessionId: string,
  idempotencyKey?: string,
): Promise<{ status: number | string; node: string | null }> {
  try {
    const response = await fetch(`${server.url}/v1/agents/sessions/${sessionId}/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': server.apiKey,
        'content-type': 'application/json',
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
      body: JSON.stringify({ content: 'bench: are you there?' }),
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    const text = await response.text();
    const node = response.headers.get(NODE_HEADER);
    if (response.status === 201) return { status: 201, node };
    let code = '';
    try {
      code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? '';
    } catch {}
    return { status: code ? `${response.status} ${code}` : response.status, node };
  } catch (err) {
    const e = err as { name?: string; cause?: { code?: string } };
    return { status: e.name === 'TimeoutError' ? 'timeout' : (e.cause?.code ?? String(err)), node: null };
  }
}

/** Kills A and measures the seconds until a send through B to one of A's sessions answers 201. */
export async function recover(
  a: Server,
  b: Server,
  sessionId: string,
): Promise<{ seconds: number | null; answers: Record<string, number> }> {
  // One key for every attempt: an attempt B answered after its timeout must not store the message twice.
  const key = `bench-w5-${randomBytes(8).toString('hex')}`;
  const answers: Record<string, number> = {};
  const t0 = performance.now();
  a.child.process.kill('SIGKILL');
  while (performance.now() - t0 < RECOVERY_LIMIT_MS) {
    const started = performance.now();
    const { status } = await send(b, sessionId, key);
    if (status === 201) return { seconds: (performance.now() - t0) / 1000, answers };
    answers[status] = (answers[status] ?? 0) + 1;
    await sleep(Math.max(0, PROBE_EVERY_MS - (performance.now() - started)));
  }
  return { seconds: null, answers };
}

/** The last lines each process wrote (warnings and errors: the bench runs Parley at LOG_LEVEL=warn). */
export function tails(servers: Server[]): string {
  return servers
    .map((s) => `--- ${s.name}:\n${s.child.output().trim().split('\n').slice(-20).join('\n') || '(nothing)'}`)
    .join('\n');
}

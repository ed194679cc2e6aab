// `node bench/heavy-turns.ts [--turns=N] [--budget-mib=M]`: what heavy turns hold while a slow model thinks
// (issue 28). N sessions (40 by default) each hold about 4M characters of history; all send at once a message
// naming two 16 MB images to an OpenAI-compatible agent whose model (a fake in this process) answers only
// once every turn is at it or waiting for room. Parley runs with PARLEY_MAX_RESIDENT_BYTES = M MiB (512 by
// default) and --expose-gc. Reported: the resident set (/proc, sampled every 20 ms) before, at its peak and
// after; the live heap and external bytes after a full GC, at baseline and while the turns are held, and their
// growth per turn at the model (all of it, and less what Parley counts as cached; waiting turns' messages are
// in both); what Parley counts, cached and reserved by the turns at the model.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { heavyContent, heavySessions } from '../support/heavy-turns.ts';
import { installCleanup, sleep } from './processes.ts';
import { fullGc, metric, readMetrics, type Server, startParley } from './servers.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) =>
  Number(args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const turns = option('turns', 40);
const budgetMiB = option('budget-mib', 512);
const MiB = 1024 * 1024;

installCleanup();

/** The slow model: bodies read and dropped as they come; every answer waits until open() is called. */
function heldModel() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  const model = { waiting: 0, bytes: 0, open, url: '', close: () => server.close() };
  const server = createServer(async (request: IncomingMessage, response) => {
    for await (const chunk of request) model.bytes += (chunk as Buffer).length;
    model.waiting++;
    await opened;
    model.waiting--;
    const sse = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write(sse({ choices: [{ index: 0, delta: { content: 'Seen.' }, finish_reason: null }] }));
    response.write(sse({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }));
    response.end('data: [DONE]\n\n');
  });
  return new Promise<typeof model>((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      model.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      resolve(model);
    }),
  );
}

const rssOf = (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

/** Live bytes after a full GC: the heap in use, and memory outside it (buffers). */
async function live(parley: Server) {
  await fullGc(parley);
  await fullGc(parley);
  const m = await readMetrics(parley);
  return {
    heap: metric(m, 'parley_nodejs_heap_size_used_bytes'),
    external: metric(m, 'parley_nodejs_external_memory_bytes'),
    rss: rssOf(parley.child.process.pid ?? 0),
    waiting: m.get('parley_admission_waiting') ?? 0,
    /** Counted by Parley (estimates): cached histories and files, and what running turns reserved. */
    cached: m.get('parley_resident_bytes') ?? 0,
    reserved: m.get('parley_admission_reserved_bytes') ?? 0,
  };
}

const model = await heldModel();
const parley = await startParley({
  gcOnSignal: true,
  env: { PARLEY_MAX_RESIDENT_BYTES: String(budgetMiB * MiB) },
  moreAgents: [
    {
      id: 'heavy',
      provider: 'openai-compatible',
      base_url: model.url,
      model: 'heavy',
      context_window: 10_000_000,
      max_tokens: 256,
      timeouts: { total_ms: 3_600_000, stall_ms: 3_600_000 },
    },
  ],
});
const pid = parley.child.process.pid ?? 0;
const post = async (path: string, body: unknown, key?: string) => {
  const response = await fetch(`${parley.url}${path}`, {
    method: 'POST',
    headers: {
      'x-api-key': parley.apiKey,
      'content-type': 'application/json',
      ...(key ? { 'idempotency-key': key } : {}),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
};

const { sessions, images } = await heavySessions(
  { url: parley.url, apiKey: parley.apiKey, post: (path, body) => post(path, body) },
  'heavy',
  turns,
);

const baseline = await live(parley);
let peak = baseline.rss;
let sampling = true;
const sampler = (async () => {
  while (sampling) {
    peak = Math.max(peak, rssOf(pid));
    await sleep(20);
  }
})();
const content = heavyContent(images);
const started = Date.now();
let answered = 0;
const sends = sessions.map((id, i) =>
  post(`/v1/agents/sessions/${id}/messages`, { content }, `heavy-${i}`).finally(() => answered++),
);
// Every turn at the model, waiting for room, or answered, and nothing moving for a second.
for (let still = 0; still < 5; ) {
  await sleep(200);
  const waiting = (await readMetrics(parley)).get('parley_admission_waiting') ?? 0;
  still = model.waiting + waiting + answered === turns ? still + 1 : 0;
}
const burstPeak = peak;
const held = await live(parley);

const atModel = model.waiting;
model.open();
const answers = await Promise.all(sends);
const seconds = (Date.now() - started) / 1000;
sampling = false;
await sampler;
const after = await live(parley);
await parley.stop();
model.close();

const mib = (n: number) => `${(n / MiB).toFixed(0)} MiB`;
const statuses = new Map<number, number>();
for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
const grown = held.heap + held.external - baseline.heap - baseline.external;
const perTurn = grown / Math.max(1, atModel);
const perTurnUncached = (grown - (held.cached - baseline.cached)) / Math.max(1, atModel);
process.stdout.write(
  [
    `${turns} heavy turns, PARLEY_MAX_RESIDENT_BYTES ${budgetMiB} MiB, ${seconds.toFixed(1)} s`,
    `answers: ${[...statuses].map(([status, n]) => `${n} × ${status}`).join(', ')}`,
    `at the model at once: ${atModel}; waiting for room: ${held.waiting}`,
    `RSS: baseline ${mib(baseline.rss)}, peak during the burst ${mib(burstPeak)}, peak ${mib(peak)}, after (GC) ${mib(after.rss)}`,
    `live heap: baseline ${mib(baseline.heap)}, held ${mib(held.heap)}, after ${mib(after.heap)}`,
    `external: baseline ${mib(baseline.external)}, held ${mib(held.external)}, after ${mib(after.external)}`,
    `counted: cached ${mib(held.cached)}, reserved by the turns at the model ${mib(held.reserved)}`,
    `live bytes per turn at the model: ${mib(perTurn)}; without what is cached: ${mib(perTurnUncached)}`,
    `request bytes the model received: ${mib(model.bytes)}`,
    '',
  ].join('\n'),
);

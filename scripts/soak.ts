// `npm run soak -- --minutes=10`: one Parley process under mixed traffic (long sends, uploads, abandoned
// streams, slow bodies, small sends, new sessions) and, once a minute, what it holds: RSS, heap, handles.
import { randomInt } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Dispatcher, FormData, Pool } from 'undici';
import { MAX_BLOCKS, MAX_TEXT } from '#schemas';
import { installCleanup, sleep, tempDir } from '../bench/processes.ts';
import {
  AGENT_ID,
  cpuSeconds,
  createSessions,
  readMetrics,
  type Server,
  startParley,
} from '../bench/servers.ts';
import { summarize } from '../bench/stats.ts';
import { stopChild } from '../support/processes.ts';

const usage = `usage: npm run soak -- [--minutes=N] [--resident-mib=M] [--workers=W] [--slow=S]
                       [--request-timeout-ms=T]
  --minutes N             how long the traffic runs; fractions allowed (default 10)
  --resident-mib M        PARLEY_MAX_RESIDENT_BYTES of the child, in MiB (default 768: what this traffic needs)
  --workers W             concurrent HTTP workers (default 12)
  --slow S                concurrent slow-body sockets, besides the workers (default 2)
  --request-timeout-ms T  PARLEY_REQUEST_TIMEOUT_MS of the child, which cuts the slow bodies (default 5000)
Prints a line a minute and a markdown table at the end; exits 1 if the child dies.`;

function fail(message: string): never {
  console.error(`soak: ${message}\n${usage}`);
  process.exit(2);
}

function numberArg(value: string | undefined, fallback: number, name: string, min: number, max: number) {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || n < min || n > max)
    fail(`${name} must be a number from ${min} to ${max}`);
  return n;
}

const str = { type: 'string' } as const;
const options = {
  minutes: str,
  'resident-mib': str,
  workers: str,
  slow: str,
  'request-timeout-ms': str,
  help: { type: 'boolean' },
} as const;
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
const minutes = numberArg(args.minutes, 10, '--minutes', 0.05, 24 * 60);
const residentMib = Math.round(numberArg(args['resident-mib'], 768, '--resident-mib', 0, 1024 * 1024));
const workerCount = Math.round(numberArg(args.workers, 12, '--workers', 1, 256));
const slowCount = Math.round(numberArg(args.slow, 2, '--slow', 0, 256));
const requestTimeoutMs = Math.round(
  numberArg(args['request-timeout-ms'], 5000, '--request-timeout-ms', 1000, 600_000),
);

// A token delay makes a reply take a while, so that an abandoned stream is left midway (at 0 the whole
// reply is written in one tick, before the client can leave); long texts have long words to keep the
// token count, hence the time, of a 512,000-character echo near a few hundred milliseconds.
const TOKEN_DELAY_MS = 1;
const catalogue = {
  agents: [
    {
      id: AGENT_ID,
      provider: 'scripted',
      scripted: { token_delay_ms: TOKEN_DELAY_MS },
      // A session takes many long sends over a soak; the default 1,000 would end the busiest ones.
      limits: { messages_per_session: 100_000 },
      // Its long sends (512,000 characters) need a window as large as the demo agent's.
      context_window: 8_000_000,
    },
  ],
};

// What each worker does next, by weight. Slow bodies run on their own sockets (slowCount of them).
const MIX = { create: 1, small: 6, long: 2, upload: 1, stream: 2 } as const;
type WorkerKind = keyof typeof MIX;
const KINDS = ['create', 'small', 'long', 'upload', 'stream', 'slow'] as const;
type Kind = (typeof KINDS)[number];

const MiB = 2 ** 20;
const MAX_UPLOAD = 4 * MiB;
const MAX_SESSIONS = 5000;
const MAX_FILES = 256;
const SHOWN_ERRORS = 10;

// ---- what a window (a minute) saw ------------------------------------------------------------------------

interface Tally {
  ok: number;
  expected: Map<string, number>;
  errors: Map<string, number>;
}
const newTally = (): Tally => ({ ok: 0, expected: new Map(), errors: new Map() });

interface Window {
  tallies: Record<Kind, Tally>;
  /** Send latencies (request sent to whole answer read), ms. */
  small: number[];
  long: number[];
  /** Slow bodies: connection to the 408, ms. */
  slowCut: number[];
  /** The child's largest resident set seen, read from /proc every second, bytes. */
  peakRss: number;
}
const newWindow = (): Window => ({
  peakRss: 0,
  tallies: Object.fromEntries(KINDS.map((k) => [k, newTally()])) as Record<Kind, Tally>,
  small: [],
  long: [],
  slowCut: [],
});

let current = newWindow();
const total = newWindow();
let shownErrors = 0;

const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

const sample = (series: 'small' | 'long' | 'slowCut', ms: number) => {
  current[series].push(ms);
  total[series].push(ms);
};

type Outcome = { ok: true } | { expected: string } | { error: string; detail?: string };

function record(kind: Kind, outcome: Outcome) {
  for (const w of [current, total]) {
    const t = w.tallies[kind];
    if ('ok' in outcome) t.ok++;
    else if ('expected' in outcome) bump(t.expected, outcome.expected);
    else bump(t.errors, outcome.error);
  }
  if ('error' in outcome && shownErrors++ < SHOWN_ERRORS) {
    console.error(
      `  error (${kind}): ${outcome.error}${outcome.detail ? ` ${outcome.detail.slice(0, 300)}` : ''}`,
    );
  }
}

/** Statuses that are refusals by design, not faults: the rate limit, a session's full queue, a slow body. */
function classify(kind: Kind, status: number, okStatus: number, text: string): Outcome {
  if (status === okStatus) return { ok: true };
  let code = '';
  try {
    code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? '';
  } catch {}
  const key = code ? `${status} ${code}` : String(status);
  if (status === 429) return { expected: key };
  if (status === 409 && code === 'session_busy' && (kind === 'small' || kind === 'long' || kind === 'stream'))
    return { expected: key };
  return { error: key, detail: text };
}

const networkError = (err: unknown) => ({
  error: (err as { code?: string }).code ?? (err as Error).name ?? 'error',
  detail: (err as Error).message,
});

// ---- traffic ----------------------------------------------------------------------------------------------

installCleanup();
const dataDir = tempDir('soak');
writeFileSync(join(dataDir, 'agents.json'), JSON.stringify(catalogue));
const server: Server = await startParley({
  dataDir,
  name: 'soak',
  env: {
    PARLEY_MAX_RESIDENT_BYTES: String(residentMib * MiB),
    PARLEY_REQUEST_TIMEOUT_MS: String(requestTimeoutMs),
    // Node refuses a headers timeout longer than the request timeout.
    PARLEY_HEADERS_TIMEOUT_MS: String(Math.min(10_000, requestTimeoutMs)),
    PARLEY_RATE_LIMIT_KEY: '1000000',
    PARLEY_RATE_LIMIT_TOKEN: '1000000',
  },
});
const { hostname, port } = new URL(server.url);

let stopping = false;
const rows: Row[] = [];
let trafficStart = 0;
server.child.exited.then(async (code) => {
  if (stopping) return;
  const signal = server.child.process.signalCode;
  const when = trafficStart ? ` ${((Date.now() - trafficStart) / 1000).toFixed(0)} s into the traffic` : '';
  console.error(`\nsoak: the Parley child died (${signal ?? `exit code ${code}`})${when}; its last output:`);
  console.error(server.child.output().slice(-4000));
  // Once the baseline row exists everything a row needs does too: the counts up to the death, no metrics.
  if (rows.length) {
    rows.push(await snapshot('died'));
    console.log(`\n${table(rows)}`);
  }
  process.exit(1);
});

const pool = new Pool(server.url, { connections: workerCount + 4 });
const jsonHeaders = { 'x-api-key': server.apiKey, 'content-type': 'application/json' };
const sessions = await createSessions(server, 32);
const files: string[] = [];
let counter = 0;

const pick = <T>(items: readonly T[]): T => items[randomInt(items.length)] as T;
const keep = (items: string[], item: string, cap: number) => {
  if (items.length < cap) items.push(item);
  else items[randomInt(cap)] = item;
};

// Letters with a space every 500-4,000 characters: sliced for texts and uploads without building each anew.
const corpus = (() => {
  const chars: string[] = [];
  while (chars.length < 256 * 1024) {
    const word = randomInt(500, 4000);
    for (let i = 0; i < word; i++) chars.push(String.fromCharCode(97 + randomInt(26)));
    chars.push(' ');
  }
  return chars.join('');
})();
const corpusBytes = Buffer.from(corpus);
const textOf = (length: number) => {
  const start = randomInt(corpus.length - length);
  return corpus.slice(start, start + length);
};

/** One request through the pool: the outcome is recorded, the latency and the parsed answer returned. */
async function exchange(kind: Kind, request: Dispatcher.RequestOptions, okStatus: number) {
  const started = performance.now();
  try {
    const { statusCode, body } = await pool.request(request);
    const text = await body.text();
    const ms = performance.now() - started;
    const outcome = classify(kind, statusCode, okStatus, text);
    record(kind, outcome);
    return { ms, answer: 'ok' in outcome ? (JSON.parse(text) as { id?: string }) : undefined };
  } catch (err) {
    record(kind, networkError(err));
    return { ms: performance.now() - started, answer: undefined };
  }
}

async function createSession() {
  const { answer } = await exchange(
    'create',
    { method: 'POST', path: `/v1/agents/${AGENT_ID}/sessions`, headers: jsonHeaders, body: '{}' },
    201,
  );
  if (answer?.id) keep(sessions, answer.id, MAX_SESSIONS);
}

const sendPath = (stream = false) =>
  `/v1/agents/sessions/${pick(sessions)}/messages${stream ? '/stream' : ''}`;

async function smallSend() {
  const n = ++counter;
  const content =
    files.length > 0 && Math.random() < 0.1
      ? [
          { type: 'text', text: `soak message ${n}, about a file` },
          { type: 'file', file_id: pick(files) },
        ]
      : `soak message ${n}`;
  const { ms, answer } = await exchange(
    'small',
    { method: 'POST', path: sendPath(), headers: jsonHeaders, body: JSON.stringify({ content }) },
    201,
  );
  if (answer) sample('small', ms);
}

/** Up to 16 blocks of up to 32,000 characters (a quarter of them exactly that), half with files. */
async function longSend() {
  const full = Math.random() < 0.25;
  const fileBlocks = files.length > 0 && Math.random() < 0.5 ? randomInt(1, 4) : 0;
  const textBlocks = full ? MAX_BLOCKS - fileBlocks : randomInt(1, MAX_BLOCKS - fileBlocks + 1);
  const content: object[] = [];
  for (let i = 0; i < textBlocks; i++) {
    content.push({ type: 'text', text: textOf(full ? MAX_TEXT : randomInt(1, MAX_TEXT + 1)) });
  }
  for (let i = 0; i < fileBlocks; i++) content.push({ type: 'file', file_id: pick(files) });
  const { ms, answer } = await exchange(
    'long',
    { method: 'POST', path: sendPath(), headers: jsonHeaders, body: JSON.stringify({ content }) },
    201,
  );
  if (answer) sample('long', ms);
}

/** A text file of 1 KiB to 4 MiB (log-uniform) into the tenant's pool; later sends name some of them. */
async function upload() {
  const size = Math.floor(Math.exp(Math.log(1024) + Math.random() * Math.log(MAX_UPLOAD / 1024)));
  const bytes = Buffer.alloc(size, corpusBytes.subarray(randomInt(corpusBytes.length - 1)));
  const form = new FormData();
  form.append('file', new Blob([bytes], { type: 'text/plain' }), `soak-${++counter}.txt`);
  const { answer } = await exchange(
    'upload',
    { method: 'POST', path: '/v1/agents/files', headers: { 'x-api-key': server.apiKey }, body: form },
    201,
  );
  if (answer?.id) keep(files, answer.id, MAX_FILES);
}

/** A streamed send left after its first delta: the reply goes on without a reader. */
async function abandonedStream() {
  const controller = new AbortController();
  const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
  try {
    const { statusCode, body } = await pool.request({
      method: 'POST',
      path: sendPath(true),
      headers: jsonHeaders,
      body: JSON.stringify({ content: `abandoned stream ${++counter}: ${words}` }),
      signal: controller.signal,
    });
    if (statusCode !== 200) {
      record('stream', classify('stream', statusCode, 200, await body.text()));
      return;
    }
    body.on('error', () => {});
    let seen = '';
    for await (const chunk of body) {
      seen += String(chunk);
      if (seen.includes('event: message.delta')) {
        controller.abort();
        record('stream', { ok: true });
        return;
      }
    }
    record('stream', { error: 'stream:no-delta', detail: seen.slice(-300) });
  } catch (err) {
    if (controller.signal.aborted) return;
    record('stream', networkError(err));
  }
}

/**
 * A raw socket that sends a send's headers, then its body a byte every 250 ms and never the last one, so
 * that only the server's request timeout ends it: a 408, then the connection closed.
 */
function slowBody(): Promise<void> {
  return new Promise((resolve) => {
    const payload = JSON.stringify({ content: `slow body ${'x'.repeat(400)}` });
    const started = performance.now();
    const socket = connect(Number(port), hostname);
    let answer = '';
    let trickle: NodeJS.Timeout | undefined;
    let settled = false;
    const finish = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearInterval(trickle);
      clearTimeout(guard);
      socket.destroy();
      record('slow', outcome);
      if ('expected' in outcome) sample('slowCut', performance.now() - started);
      resolve();
    };
    const guard = setTimeout(
      () => finish({ error: 'slow:no-answer', detail: `nothing after ${3 * requestTimeoutMs} ms` }),
      3 * requestTimeoutMs,
    );
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      socket.write(
        `POST ${sendPath()} HTTP/1.1\r\nHost: ${hostname}\r\nX-API-Key: ${server.apiKey}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n`,
      );
      let sent = 0;
      trickle = setInterval(() => {
        if (sent < payload.length - 1 && socket.writable) socket.write(payload.charAt(sent++));
      }, 250);
    });
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    // After its answer the server closes; writes racing that close fail with EPIPE or ECONNRESET.
    socket.on('error', () => {});
    socket.on('close', () => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1];
      if (status === '408') finish({ expected: '408' });
      else
        finish({ error: status ? `slow:${status}` : 'slow:closed-unanswered', detail: answer.slice(0, 300) });
    });
  });
}

const ops: Record<WorkerKind, () => Promise<void>> = {
  create: createSession,
  small: smallSend,
  long: longSend,
  upload,
  stream: abandonedStream,
};
const weighted = (Object.entries(MIX) as [WorkerKind, number][]).flatMap(([kind, weight]) =>
  Array<WorkerKind>(weight).fill(kind),
);

async function worker(deadline: number, op: () => Promise<void>) {
  while (Date.now() < deadline) await op();
}

// ---- reporting --------------------------------------------------------------------------------------------

interface Row {
  minute: string;
  done: Record<Kind, number>;
  expected: number;
  errors: number;
  expectedText: string;
  errorText: string;
  p99Small: number | null;
  p99Long: number | null;
  rss: number | null;
  peakRss: number | null;
  heap: number | null;
  external: number | null;
  handles: number | null;
  resident: number | null;
  actors: number | null;
  cpu: number | null;
  loaderCpu: number | null;
}

const sum = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0);
const breakdown = (tallies: Record<Kind, Tally>, part: 'expected' | 'errors') =>
  KINDS.flatMap((k) => [...tallies[k][part]].map(([key, n]) => `${k} ${key} ×${n}`)).join(', ');

let lastCpu = { at: performance.now(), seconds: cpuSeconds(server), loader: process.cpuUsage() };

async function snapshot(minute: string): Promise<Row> {
  const w = current;
  current = newWindow();
  const m = await readMetrics(server).catch(() => new Map<string, number>());
  // The minute-end reading is a sample of the peak too.
  const minuteRss = m.get('parley_process_resident_memory_bytes') ?? 0;
  for (const window of [w, total]) window.peakRss = Math.max(window.peakRss, minuteRss);
  const now = { at: performance.now(), seconds: cpuSeconds(server), loader: process.cpuUsage() };
  const wallMs = now.at - lastCpu.at;
  // Percent of one core, as top shows it: up to 200 on this two-core machine.
  // The baseline row's span is a few milliseconds: too short for a share of CPU to mean anything.
  const measured = wallMs >= 1000;
  const cpu =
    measured && now.seconds !== null && lastCpu.seconds !== null
      ? (100_000 * (now.seconds - lastCpu.seconds)) / wallMs
      : null;
  const loaderMicros = now.loader.user + now.loader.system - lastCpu.loader.user - lastCpu.loader.system;
  const loaderCpu = measured ? loaderMicros / 10 / wallMs : null;
  lastCpu = now;
  const p99 = (samples: number[]) => (samples.length ? summarize(samples).p99 : null);
  return {
    minute,
    done: Object.fromEntries(
      KINDS.map((k) => {
        const t = w.tallies[k];
        return [k, t.ok + sum(t.expected) + sum(t.errors)];
      }),
    ) as Record<Kind, number>,
    expected: KINDS.reduce((n, k) => n + sum(w.tallies[k].expected), 0),
    errors: KINDS.reduce((n, k) => n + sum(w.tallies[k].errors), 0),
    expectedText: breakdown(w.tallies, 'expected'),
    errorText: breakdown(w.tallies, 'errors'),
    p99Small: p99(w.small),
    p99Long: p99(w.long),
    rss: m.get('parley_process_resident_memory_bytes') ?? null,
    peakRss: w.peakRss || null,
    heap: m.get('parley_nodejs_heap_size_used_bytes') ?? null,
    external: m.get('parley_nodejs_external_memory_bytes') ?? null,
    handles: m.get('parley_nodejs_active_handles_total') ?? null,
    resident: m.get('parley_resident_bytes') ?? null,
    actors: m.get('parley_actors_resident') ?? null,
    cpu,
    loaderCpu,
  };
}

const fixed = (v: number | null, digits: number, scale = 1) =>
  v === null ? '-' : (v / scale).toFixed(digits);

const percent = (v: number | null) => (v === null ? '-' : `${v.toFixed(0)}%`);

function line(r: Row): string {
  const done = KINDS.map((k) => `${k} ${r.done[k]}`).join(', ');
  return (
    `minute ${r.minute}: ${done} | expected ${r.expected}${r.expectedText ? ` (${r.expectedText})` : ''}` +
    ` | errors ${r.errors}${r.errorText ? ` (${r.errorText})` : ''}` +
    ` | send p99 small ${fixed(r.p99Small, 0)} ms, long ${fixed(r.p99Long, 0)} ms` +
    ` | RSS ${fixed(r.rss, 1, MiB)} MiB (peak ${fixed(r.peakRss, 1, MiB)}), heap ${fixed(r.heap, 1, MiB)} MiB,` +
    ` external ${fixed(r.external, 1, MiB)} MiB, handles ${fixed(r.handles, 0)},` +
    ` parley_resident ${r.resident === null ? '-' : `${fixed(r.resident, 1, MiB)} MiB`},` +
    ` actors ${fixed(r.actors, 0)},` +
    ` CPU ${percent(r.cpu)} (soak script ${percent(r.loaderCpu)})`
  );
}

function table(all: Row[]): string {
  const head = [
    'minute',
    ...KINDS,
    'expected',
    'errors',
    'send p99 small ms',
    'send p99 long ms',
    'RSS MiB',
    'peak RSS MiB',
    'heap MiB',
    'external MiB',
    'handles',
    'parley_resident MiB',
    'actors',
    'CPU %',
    'script CPU %',
  ];
  const cells = (r: Row) => [
    r.minute,
    ...KINDS.map((k) => String(r.done[k])),
    String(r.expected),
    String(r.errors),
    fixed(r.p99Small, 0),
    fixed(r.p99Long, 0),
    fixed(r.rss, 1, MiB),
    fixed(r.peakRss, 1, MiB),
    fixed(r.heap, 1, MiB),
    fixed(r.external, 1, MiB),
    fixed(r.handles, 0),
    fixed(r.resident, 1, MiB),
    fixed(r.actors, 0),
    fixed(r.cpu, 0),
    fixed(r.loaderCpu, 0),
  ];
  const markdown = (values: string[]) => `| ${values.join(' | ')} |`;
  return [markdown(head), markdown(head.map(() => '---')), ...all.map((r) => markdown(cells(r)))].join('\n');
}

// ---- the run ----------------------------------------------------------------------------------------------

const settings =
  `${minutes} min, PARLEY_MAX_RESIDENT_BYTES ${residentMib} MiB, ` +
  `PARLEY_REQUEST_TIMEOUT_MS ${requestTimeoutMs}, ` +
  `${workerCount} workers (weights ${JSON.stringify(MIX)}) + ${slowCount} slow bodies, ` +
  `scripted agent with a token delay of ${TOKEN_DELAY_MS} ms, Node ${process.version}`;
console.log(`soak: Parley ${server.url} (data ${dataDir}); ${settings}`);
const baseline = await snapshot('0');
rows.push(baseline);
console.log(line(baseline));

// The minute's figures are one reading each; the peak is what says whether the process kept within its bound.
const pageBytes = 4096;
const rssSampler = setInterval(() => {
  try {
    const pages = Number(readFileSync(`/proc/${server.child.process.pid}/statm`, 'utf8').split(' ')[1]);
    for (const w of [current, total]) w.peakRss = Math.max(w.peakRss, pages * pageBytes);
  } catch {
    // Gone, or not Linux: the per-minute readings remain.
  }
}, 1000);
const started = Date.now();
trafficStart = started;
const deadline = started + minutes * 60_000;
const running = Promise.all([
  ...Array.from({ length: workerCount }, () => worker(deadline, () => ops[pick(weighted)]())),
  ...Array.from({ length: slowCount }, () => worker(deadline, slowBody)),
]);
for (let minute = 1; started + minute * 60_000 < deadline; minute++) {
  await sleep(started + minute * 60_000 - Date.now());
  const row = await snapshot(String(minute));
  rows.push(row);
  console.log(line(row));
}
await running;
clearInterval(rssSampler);
const last = await snapshot(String(Math.ceil(minutes)));
rows.push(last);
console.log(line(last));
await pool.close();

stopping = true;
const stopAt = performance.now();
const killed = await stopChild(server.child.process, server.child.exited);
const stopSeconds = (performance.now() - stopAt) / 1000;

const cut = summarize(total.slowCut);
console.log(`\ntotals: ${KINDS.map((k) => `${k} ${total.tallies[k].ok} ok`).join(', ')}`);
console.log(`expected: ${breakdown(total.tallies, 'expected') || 'none'}`);
console.log(`errors: ${breakdown(total.tallies, 'errors') || 'none'}`);
if (cut.count) {
  console.log(
    `slow bodies cut after ${(cut.p50 / 1000).toFixed(1)} s (p50), ${(cut.max / 1000).toFixed(1)} s (max); ` +
      `request timeout ${(requestTimeoutMs / 1000).toFixed(1)} s`,
  );
}
if (total.peakRss > 0) {
  const bound = residentMib * MiB;
  console.log(
    `peak RSS ${(total.peakRss / MiB).toFixed(1)} MiB: ${total.peakRss <= bound ? 'within' : 'OVER'} ` +
      `PARLEY_MAX_RESIDENT_BYTES (${residentMib} MiB)`,
  );
}
const small = summarize(total.small);
const long = summarize(total.long);
console.log(
  `sends over the run: small p50 ${small.p50.toFixed(0)} / p99 ${small.p99.toFixed(0)} ms, ` +
    `long p50 ${long.p50.toFixed(0)} / p99 ${long.p99.toFixed(0)} ms`,
);
console.log(
  killed
    ? `SIGTERM: the child had not exited after 5 s and was killed (SIGKILL)`
    : `SIGTERM: the child exited in ${stopSeconds.toFixed(1)} s`,
);
// The child logs at warn and above; what it said is a finding too (only its last 64 KB are kept).
const logLines = server.child.output().split('\n').filter(Boolean);
const byLevel = new Map<string, number>();
for (const entry of logLines) bump(byLevel, /"level":(\d+)/.exec(entry)?.[1] ?? 'not JSON');
const names: Record<string, string> = { '40': 'warn', '50': 'error', '60': 'fatal' };
console.log(
  `child log: ${[...byLevel].map(([level, n]) => `${names[level] ?? level} ${n}`).join(', ') || 'nothing'}`,
);
for (const entry of logLines.filter((l) => !/"level":(30|40)\b/.test(l)).slice(0, 3)) {
  console.log(`  ${entry.slice(0, 400)}`);
}
console.log(`\nSoak: ${settings}.\n\n${table(rows)}`);

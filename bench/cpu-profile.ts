// Reading a V8 .cpuprofile (as `node --cpu-prof` writes it): self time by category of code (Parley's modules,
// SQLite's native calls, XState, Fastify…), the top functions, and Parley's frames by inclusive time.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { projectRoot } from '../support/processes.ts';

interface CallFrame {
  functionName: string;
  url: string;
  /** 0-based, as V8 writes them. */
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
  /** Samples of this node by source line (1-based) of the function, over the whole profile. */
  positionTicks?: Array<{ line: number; ticks: number }>;
}

/** The JSON of a .cpuprofile; times in microseconds on the monotonic clock (process.hrtime's). */
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export const IDLE = '(idle)';

const SQLITE_EXEC = 'SQLite native: exec (BEGIN/COMMIT, fsync)';
const SQLITE_STATEMENTS = 'SQLite native: statements (run/get/all/prepare)';

/** Categories in display order; anything unmatched is `other`. */
export const CATEGORIES = [
  SQLITE_EXEC,
  SQLITE_STATEMENTS,
  'Parley src/store',
  'Parley src/actors',
  'Parley src/machines',
  'Parley src/http',
  'Parley src/auth',
  'Parley src/cluster',
  'Parley src (other)',
  'xstate',
  'fastify & deps',
  'zod',
  'other packages',
  'node internals',
  '(program)',
  '(garbage collector)',
  'other',
  IDLE,
] as const;
export type Category = (typeof CATEGORIES)[number];

const FASTIFY_FAMILY =
  /\/node_modules\/(fastify|@fastify\/[^/]+|avvio|find-my-way|light-my-request|fast-json-stringify|fast-querystring|fast-uri|fast-decode-uri-component|pino[^/]*|@pinojs\/[^/]+|sonic-boom|thread-stream|ajv[^/]*|secure-json-parse|abstract-logging|rfdc|toad-cache|process-warning|fastify-plugin|safe-regex2|ret|json-schema-ref-resolver|on-exit-leak-free|real-require|atomic-sleep|quick-format-unescaped|safe-stable-stringify|fast-redact|slow-redact)\//;
const ZOD = /\/node_modules\/(zod|zod-to-json-schema|fastify-type-provider-zod)\//;
const SQLITE_NATIVE = new Set(['exec', 'run', 'get', 'all', 'iterate', 'prepare', 'step']);
const PARLEY_SRC: ReadonlyArray<[RegExp, Category]> = [
  [/^src\/store\//, 'Parley src/store'],
  [/^src\/actors\//, 'Parley src/actors'],
  [/^src\/machines\//, 'Parley src/machines'],
  [/^src\/http\//, 'Parley src/http'],
  [/^src\/auth\//, 'Parley src/auth'],
  [/^src\/cluster\//, 'Parley src/cluster'],
  [/^src\//, 'Parley src (other)'],
];

/** A url as a path relative to the project root where it is a file in it (`src/store/sqlite/store.ts`). */
export function shortUrl(url: string): string {
  if (!url.startsWith('file://')) return url;
  const path = relative(projectRoot, fileURLToPath(url));
  return path.startsWith('..') ? fileURLToPath(url) : path;
}

/**
 * The category of a frame given its caller's. A native function (no url) takes its caller's category, except
 * node:sqlite's methods called from the store (or better-sqlite3), which are SQLite's own time.
 */
function categorize(frame: CallFrame, parent: Category | undefined): Category {
  const { functionName: name, url } = frame;
  if (name === '(garbage collector)') return '(garbage collector)';
  if (name === '(idle)') return IDLE;
  if (name === '(program)') return '(program)';
  if (name === '(root)') return 'other';
  if (url.includes('node:sqlite') || url.includes('/node_modules/better-sqlite3/'))
    return name === 'exec'
      ? 'SQLite native: exec (BEGIN/COMMIT, fsync)'
      : 'SQLite native: statements (run/get/all/prepare)';
  if (url === '') {
    if (SQLITE_NATIVE.has(name) && (parent === 'Parley src/store' || parent?.startsWith('SQLite native')))
      return name === 'exec' ? SQLITE_EXEC : SQLITE_STATEMENTS;
    return parent ?? 'other';
  }
  const path = shortUrl(url);
  if (url.startsWith('file://') && !path.includes('node_modules/')) {
    for (const [pattern, category] of PARLEY_SRC) if (pattern.test(path)) return category;
  }
  if (url.includes('/node_modules/xstate/')) return 'xstate';
  if (FASTIFY_FAMILY.test(url)) return 'fastify & deps';
  if (ZOD.test(url)) return 'zod';
  if (url.includes('/node_modules/')) return 'other packages';
  if (url.startsWith('node:')) return 'node internals';
  return 'other';
}

// A node:sqlite method called on a source line (`db.q(sql).get(…)`, `this.#db.exec('COMMIT')`, `.all(…)`),
// not the statement cache's Map (`#statements.get`).
const SQLITE_CALL = /(?<!#statements)\.(exec|run|get|all|iterate|prepare)\(/;
const sourceLines = new Map<string, string[] | null>();

/**
 * The node:sqlite method a line of the SQLite store calls, if any. V8 shows no frame for node:sqlite's
 * methods (unlike most of Node's natives): their time is the calling function's self time, on that line.
 */
function sqliteCallAt(url: string, line: number): string | null {
  if (!url.startsWith('file://') || !/^src\/store\/sqlite\/[\w-]+\.ts$/.test(shortUrl(url))) return null;
  let lines = sourceLines.get(url);
  if (lines === undefined) {
    try {
      lines = readFileSync(fileURLToPath(url), 'utf8').split('\n');
    } catch {
      lines = null;
    }
    sourceLines.set(url, lines);
  }
  const text = lines?.[line - 1] ?? '';
  // Transaction control is counted as `exec` however it is run (db.ts prepares BEGIN, COMMIT and savepoints).
  if (TRANSACTION_CONTROL.test(text)) return 'exec';
  return SQLITE_CALL.exec(text)?.[1] ?? null;
}

const TRANSACTION_CONTROL = /'(BEGIN IMMEDIATE|COMMIT|SAVEPOINT write|RELEASE write)'/;

/** The parts of a node's self time spent in node:sqlite calls, by line, as fractions of its samples. */
function sqliteShares(node: ProfileNode): Array<{ line: number; method: string; share: number }> {
  const ticks = node.positionTicks ?? [];
  const total = ticks.reduce((sum, t) => sum + t.ticks, 0);
  if (!total) return [];
  return ticks.flatMap(({ line, ticks: n }) => {
    const method = sqliteCallAt(node.callFrame.url, line);
    return method ? [{ line, method, share: n / total }] : [];
  });
}

export interface FunctionTime {
  name: string;
  /** file:line (1-based), or `(native)`. */
  where: string;
  category: Category;
  ms: number;
}

export interface Aggregate {
  /** The window the samples were taken from, ms. */
  windowMs: number;
  samples: number;
  /** Self time by category, ms. */
  byCategory: Map<Category, number>;
  /** Every category but idle, ms. */
  busyMs: number;
  /** Self time by function, largest first. */
  functions: FunctionTime[];
  /** Inclusive time of Parley's own frames (src/), largest first. */
  parleyInclusive: FunctionTime[];
}

const frameKey = (f: CallFrame) =>
  `${f.functionName}\u0000${f.url}\u0000${f.lineNumber}\u0000${f.columnNumber}`;

function describe(frame: CallFrame, category: Category): Omit<FunctionTime, 'ms'> {
  const name = frame.functionName || '(anonymous)';
  const where = frame.url ? `${shortUrl(frame.url)}:${frame.lineNumber + 1}` : '(native)';
  return { name, where, category };
}

/**
 * Aggregates the samples taken in [fromUs, untilUs] (the profile's clock; all of them when omitted). A sample
 * lasts until the next one (the last until endTime), as DevTools counts it.
 */
export function aggregate(profile: CpuProfile, fromUs = -Infinity, untilUs = Infinity): Aggregate {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const categoryOf = new Map<number, Category>();
  const category = (id: number): Category => {
    const known = categoryOf.get(id);
    if (known) return known;
    // Iteratively up to the first categorised ancestor, then down again: stacks can be deep.
    const chain: number[] = [];
    let at: number | undefined = id;
    while (at !== undefined && !categoryOf.has(at)) {
      chain.push(at);
      at = parentOf.get(at);
    }
    let parent = at === undefined ? undefined : categoryOf.get(at);
    for (let i = chain.length - 1; i >= 0; i--) {
      const node = byId.get(chain[i] as number) as ProfileNode;
      parent = categorize(node.callFrame, parent);
      categoryOf.set(node.id, parent);
    }
    return parent as Category;
  };

  const selfUs = new Map<number, number>();
  const inclusiveUs = new Map<string, { frame: CallFrame; category: Category; us: number }>();
  const { samples, timeDeltas } = profile;
  let t = profile.startTime;
  const times = samples.map((_, i) => {
    t += timeDeltas[i] ?? 0;
    return t;
  });
  let counted = 0;
  let firstUs = Infinity;
  let lastUs = -Infinity;
  for (let i = 0; i < samples.length; i++) {
    const start = times[i] as number;
    const end = i + 1 < samples.length ? (times[i + 1] as number) : profile.endTime;
    const from = Math.max(start, fromUs);
    const until = Math.min(end, untilUs);
    if (until <= from) continue;
    const us = until - from;
    counted++;
    firstUs = Math.min(firstUs, from);
    lastUs = Math.max(lastUs, until);
    const id = samples[i] as number;
    selfUs.set(id, (selfUs.get(id) ?? 0) + us);
    // Inclusive: each Parley frame once per sample, however often it recurs on the stack.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const node = byId.get(at) as ProfileNode;
      const cat = category(at);
      if (!node.callFrame.url || !cat.startsWith('Parley')) continue;
      const key = frameKey(node.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      const entry = inclusiveUs.get(key) ?? { frame: node.callFrame, category: cat, us: 0 };
      entry.us += us;
      inclusiveUs.set(key, entry);
    }
  }

  const byCategory = new Map<Category, number>();
  const functions = new Map<string, FunctionTime>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id) as ProfileNode;
    const frame = node.callFrame;
    const add = (cat: Category, key: string, described: Omit<FunctionTime, 'ms'>, ms: number) => {
      byCategory.set(cat, (byCategory.get(cat) ?? 0) + ms);
      const entry = functions.get(key) ?? { ...described, ms: 0 };
      entry.ms += ms;
      functions.set(key, entry);
    };
    // node:sqlite calls made on the store's lines: shares of the samples (counted over the whole profile).
    let jsUs = us;
    for (const { line, method, share } of sqliteShares(node)) {
      const cat = method === 'exec' ? SQLITE_EXEC : SQLITE_STATEMENTS;
      const where = `${shortUrl(frame.url)}:${line}`;
      add(
        cat,
        `sqlite\u0000${where}`,
        { name: `node:sqlite ${method}`, where, category: cat },
        (us * share) / 1000,
      );
      jsUs -= us * share;
    }
    const cat = category(id);
    // Natives are told apart by the category they were given (a socket's write vs a timer's).
    add(cat, `${frameKey(frame)}\u0000${frame.url ? '' : cat}`, describe(frame, cat), jsUs / 1000);
  }
  let busyMs = 0;
  for (const [cat, ms] of byCategory) if (cat !== IDLE) busyMs += ms;
  const byMs = (a: { ms: number }, b: { ms: number }) => b.ms - a.ms;
  return {
    windowMs: counted ? (lastUs - firstUs) / 1000 : 0,
    samples: counted,
    byCategory,
    busyMs,
    functions: [...functions.values()].sort(byMs),
    parleyInclusive: [...inclusiveUs.values()]
      .map(({ frame, category: cat, us }) => ({ ...describe(frame, cat), ms: us / 1000 }))
      .sort(byMs),
  };
}

const fixed = (v: number, digits: number) => v.toFixed(digits);
const cell = (s: string) => s.replaceAll('|', '\\|');

/** Markdown tables: categories (ms, % of busy, ms per request), the top functions, Parley's inclusive frames. */
export function formatAggregate(a: Aggregate, requests: number, top = 15): string {
  const pct = (ms: number) => (a.busyMs ? (100 * ms) / a.busyMs : 0);
  const perRequest = (ms: number) => (requests ? ms / requests : 0);
  const lines = ['| category | self ms | % of busy | ms per request |', '|---|--:|--:|--:|'];
  for (const cat of CATEGORIES) {
    const ms = a.byCategory.get(cat) ?? 0;
    if (ms === 0 || cat === IDLE) continue;
    lines.push(`| ${cat} | ${fixed(ms, 0)} | ${fixed(pct(ms), 1)} | ${fixed(perRequest(ms), 4)} |`);
  }
  lines.push(
    `| **busy (all but idle)** | ${fixed(a.busyMs, 0)} | 100.0 | ${fixed(perRequest(a.busyMs), 4)} |`,
  );
  lines.push(`| (idle) | ${fixed(a.byCategory.get(IDLE) ?? 0, 0)} | — | — |`);
  const functionTable = (title: string, rows: FunctionTime[], what: string) => [
    '',
    title,
    '',
    `| # | function | where | category | ${what} ms | % of busy | ms per request |`,
    '|--:|---|---|---|--:|--:|--:|',
    ...rows.map(
      (f, i) =>
        `| ${i + 1} | \`${cell(f.name)}\` | ${cell(f.where)} | ${f.category} | ${fixed(f.ms, 0)} | ` +
        `${fixed(pct(f.ms), 1)} | ${fixed(perRequest(f.ms), 4)} |`,
    ),
  ];
  lines.push(
    ...functionTable(
      `Top ${top} functions by self time:`,
      a.functions.filter((f) => f.category !== IDLE).slice(0, top),
      'self',
    ),
    ...functionTable(
      `Parley's frames by inclusive time (self + callees), top ${top}:`,
      a.parleyInclusive.slice(0, top),
      'incl.',
    ),
  );
  return lines.join('\n');
}

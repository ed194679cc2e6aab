// better-sqlite3 against Node's built-in node:sqlite, on the three costs the SQLite store pays: a commit of
// one row, a commit of a batch (group commit), and a point read by key. Both run the same SQL on the same
// kind of file (WAL, synchronous=FULL, as the store opens it), interleaved in rounds so that the machine's
// noise falls on both alike. `node bench/sqlite-drivers.ts [rounds]`; prints a table, writes nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import Database from 'better-sqlite3';

interface Driver {
  name: string;
  exec(sql: string): void;
  insert(id: string, body: string): void;
  get(id: string): unknown;
  close(): void;
}

const schema = 'CREATE TABLE rows (id TEXT PRIMARY KEY, body TEXT NOT NULL)';
const pragmas = ['journal_mode = WAL', 'synchronous = FULL'];
const insertSql = 'INSERT INTO rows (id, body) VALUES (?, ?)';
const getSql = 'SELECT id, body FROM rows WHERE id = ?';

function betterSqlite(file: string): Driver {
  const db = new Database(file);
  for (const p of pragmas) db.pragma(p);
  db.exec(schema);
  const insert = db.prepare(insertSql);
  const get = db.prepare(getSql);
  return {
    name: 'better-sqlite3',
    exec: (sql) => db.exec(sql),
    insert: (id, body) => insert.run(id, body),
    get: (id) => get.get(id),
    close: () => db.close(),
  };
}

function nodeSqlite(file: string): Driver {
  const db = new DatabaseSync(file);
  for (const p of pragmas) db.exec(`PRAGMA ${p}`);
  db.exec(schema);
  const insert = db.prepare(insertSql);
  const get = db.prepare(getSql);
  return {
    name: 'node:sqlite',
    exec: (sql) => db.exec(sql),
    insert: (id, body) => insert.run(id, body),
    get: (id) => get.get(id),
    close: () => db.close(),
  };
}

const body = JSON.stringify({ role: 'user', content: [{ type: 'text', text: 'x'.repeat(200) }] });
let serial = 0;

/** Microseconds per operation over `count` operations. */
function time(count: number, op: () => void): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) op();
  return Number(process.hrtime.bigint() - start) / 1000 / count;
}

const workloads: Record<string, (d: Driver) => number> = {
  'commit, 1 row (µs)': (d) =>
    time(200, () => {
      d.exec('BEGIN IMMEDIATE');
      d.insert(`r${serial++}`, body);
      d.exec('COMMIT');
    }),
  'commit, 32 rows (µs per row)': (d) =>
    time(20, () => {
      d.exec('BEGIN IMMEDIATE');
      for (let i = 0; i < 32; i++) d.insert(`r${serial++}`, body);
      d.exec('COMMIT');
    }) / 32,
  'point read (µs)': (d) => time(20_000, () => d.get(`r${Math.floor(Math.random() * serial)}`)),
};

const rounds = Number(process.argv[2] ?? 5);
const dir = mkdtempSync(join(tmpdir(), 'parley-sqlite-drivers-'));
try {
  const drivers = [betterSqlite(join(dir, 'better.db')), nodeSqlite(join(dir, 'node.db'))];
  const samples = new Map<string, number[]>();
  for (let round = 0; round <= rounds; round++) {
    for (const [workload, run] of Object.entries(workloads)) {
      // Alternate which driver goes first; round 0 warms both up and is not counted.
      const order = round % 2 ? [...drivers].reverse() : drivers;
      for (const d of order) {
        const us = run(d);
        if (round === 0) continue;
        const key = `${workload}\t${d.name}`;
        samples.set(key, [...(samples.get(key) ?? []), us]);
      }
    }
  }
  for (const d of drivers) d.close();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  process.stdout.write(
    `SQLite ${rounds} rounds (median)\n| workload | better-sqlite3 | node:sqlite | ratio |\n|---|--:|--:|--:|\n`,
  );
  for (const workload of Object.keys(workloads)) {
    const b = median(samples.get(`${workload}\tbetter-sqlite3`) ?? []);
    const n = median(samples.get(`${workload}\tnode:sqlite`) ?? []);
    process.stdout.write(`| ${workload} | ${b.toFixed(2)} | ${n.toFixed(2)} | ${(n / b).toFixed(2)}x |\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// Bytes a server writes per turn (from /proc/<pid>/io), and what the rows a turn adds take (read from its
// SQLite file afterwards): the two figures of issue 20's "within 2x of what the turn's rows need".
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';

export interface IoCounters {
  /** Bytes the process caused to be sent to the block layer (counted when it dirties a page-cache page). */
  writeBytes: number;
  /** Bytes passed to write() and the like, pipes and sockets included. */
  wchar: number;
}

/** The process's I/O counters so far (all its threads); null where /proc/<pid>/io is unavailable. */
export function ioCounters(pid: number | undefined): IoCounters | null {
  if (pid === undefined) return null;
  try {
    const fields = new Map(
      readFileSync(`/proc/${pid}/io`, 'utf8')
        .trim()
        .split('\n')
        .map((line) => {
          const [key = '', value = ''] = line.split(': ');
          return [key, Number(value)] as const;
        }),
    );
    const writeBytes = fields.get('write_bytes');
    const wchar = fields.get('wchar');
    return writeBytes === undefined || wchar === undefined ? null : { writeBytes, wchar };
  } catch {
    return null;
  }
}

/** The SQLite database file a running process holds open (found among its file descriptors), or null. */
export function openDatabase(pid: number | undefined): string | null {
  if (pid === undefined) return null;
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue; // closed since the listing
      }
      if (target.endsWith('.db')) return target;
    }
  } catch {
    // not Linux, or the process is gone
  }
  return null;
}

/**
 * Bytes of one row's values, as a simple estimate of what it needs on disk: a text or blob value its byte
 * length, an integer or real 8, a null 0. SQLite's record headers, page slack and index entries are left out.
 */
function rowBytes(db: DatabaseSync, table: string, alias: string): string {
  const columns = db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as Array<{
    name: string;
  }>;
  return columns
    .map(({ name }) => {
      const c = `${alias}."${name}"`;
      return `(CASE typeof(${c}) WHEN 'null' THEN 0 WHEN 'integer' THEN 8 WHEN 'real' THEN 8 ELSE length(CAST(${c} AS BLOB)) END)`;
    })
    .join(' + ');
}

export interface TurnRows {
  /** User messages stored, i.e. turns. */
  turns: number;
  /** Per turn, bytes of: its messages; the session row times the writes of it; tool calls; idempotency records. */
  messages: number;
  sessionRow: number;
  /** Writes of the session row per turn (from sessions.version, which every write increments). */
  sessionWrites: number;
  toolCalls: number;
  idempotency: number;
  total: number;
}

const one = (db: DatabaseSync, sql: string, ...values: string[]) =>
  Number((db.prepare(sql).get(...values) as { v: number | null }).v ?? 0);

/**
 * What one turn of an agent's sessions adds to Parley's database, on average: its two messages' values, the
 * session row as rewritten by each write of the turn (every write updates the whole row, snapshot
 * included), and its tool-call and idempotency rows at their final size. Read-only, while Parley runs.
 */
export function parleyTurnRows(file: string, agentId: string): TurnRows {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const mine = `session_id IN (SELECT id FROM sessions WHERE agent_id = ?)`;
    const turns = one(db, `SELECT count(*) AS v FROM messages WHERE role = 'user' AND ${mine}`, agentId);
    if (turns === 0) throw new Error(`no turns stored for agent ${agentId}`);
    const sum = (table: string) =>
      one(db, `SELECT sum(${rowBytes(db, table, 't')}) AS v FROM ${table} t WHERE ${mine}`, agentId) / turns;
    // Each session's row once per write of it: its current size times its version.
    const sessionBytes =
      one(
        db,
        `SELECT sum((${rowBytes(db, 'sessions', 's')}) * s.version) AS v FROM sessions s WHERE agent_id = ?`,
        agentId,
      ) / turns;
    const sessionWrites =
      one(db, 'SELECT sum(version) AS v FROM sessions WHERE agent_id = ?', agentId) / turns;
    const messages = sum('messages');
    const toolCalls = sum('tool_calls');
    const idempotency = sum('idempotency_records');
    return {
      turns,
      messages,
      sessionRow: sessionBytes,
      sessionWrites,
      toolCalls,
      idempotency,
      total: messages + sessionBytes + toolCalls + idempotency,
    };
  } finally {
    db.close();
  }
}

/** The same for the floor (bench/floor-server.ts): a turn is its two message rows, nothing else. */
export function floorTurnRows(file: string): TurnRows {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const turns = one(db, `SELECT count(*) AS v FROM messages WHERE role = 'user'`);
    if (turns === 0) throw new Error('no turns stored by the floor');
    const messages = one(db, `SELECT sum(${rowBytes(db, 'messages', 't')}) AS v FROM messages t`) / turns;
    return {
      turns,
      messages,
      sessionRow: 0,
      sessionWrites: 0,
      toolCalls: 0,
      idempotency: 0,
      total: messages,
    };
  } finally {
    db.close();
  }
}

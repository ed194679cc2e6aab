// The schema a database holds, read from its catalogue (not from the migrations' text) and put in terms
// both dialects share, so that the migration-parity test can compare SQLite's with PostgreSQL's and name
// what differs: tables, columns (a type family, nullability), primary keys, and indexes.
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';

/** The types as the two stores use them, whatever each dialect calls them. */
export type TypeFamily = 'text' | 'integer' | 'real' | 'blob' | 'boolean' | 'timestamp' | 'json' | 'other';

export interface Column {
  type: TypeFamily;
  notNull: boolean;
}

export interface Table {
  columns: Map<string, Column>;
  /** The primary key's columns, in key order. */
  primaryKey: string[];
}

export interface Index {
  table: string;
  /** Key columns in order; an expression reads `<expression>`, a column with a case-folding collation `<name> nocase`. */
  columns: string[];
  unique: boolean;
  /** The WHERE of a partial index, folded (lower case; no spaces, parentheses or casts); null for a full one. */
  where: string | null;
}

export interface Schema {
  tables: Map<string, Table>;
  /**
   * By name; an index that backs a UNIQUE constraint is named by what it is (`<table> unique (<columns>)`),
   * since each dialect names those itself. Primary-key indexes are left out: Table.primaryKey says it.
   */
  indexes: Map<string, Index>;
}

/** The family of a PostgreSQL type (information_schema's data_type). */
function postgresFamily(dataType: string): TypeFamily {
  if (dataType === 'text' || dataType.startsWith('character')) return 'text';
  if (['smallint', 'integer', 'bigint'].includes(dataType)) return 'integer';
  if (['real', 'double precision', 'numeric'].includes(dataType)) return 'real';
  if (dataType === 'bytea') return 'blob';
  if (dataType === 'boolean') return 'boolean';
  if (dataType.startsWith('timestamp') || dataType === 'date') return 'timestamp';
  if (dataType === 'json' || dataType === 'jsonb') return 'json';
  return 'other';
}

/** The family of a SQLite declared type: the names it has for the other families, then its affinity rules. */
function sqliteFamily(declared: string): TypeFamily {
  const type = declared.toUpperCase();
  if (type === 'BOOLEAN') return 'boolean';
  if (type.startsWith('TIMESTAMP') || type === 'DATETIME' || type === 'DATE') return 'timestamp';
  if (type === 'JSON' || type === 'JSONB') return 'json';
  if (type.includes('INT')) return 'integer';
  if (type.includes('CHAR') || type.includes('CLOB') || type.includes('TEXT')) return 'text';
  if (type === '' || type.includes('BLOB')) return 'blob';
  if (type.includes('REAL') || type.includes('FLOA') || type.includes('DOUB')) return 'real';
  return 'other';
}

/** A partial index's condition, folded so that the two dialects' renderings of one condition are equal. */
const foldWhere = (where: string | null): string | null =>
  where === null
    ? null
    : where
        .toLowerCase()
        .replace(/::[a-z ]+/g, '')
        .replace(/[\s()]/g, '');

const uniqueName = (table: string, columns: string[]) => `${table} unique (${columns.join(', ')})`;

export function sqliteSchema(file: string): Schema {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const schema: Schema = { tables: new Map(), indexes: new Map() };
    const names = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all()
      .map((row) => String(row.name));
    for (const name of names) {
      const info = db.prepare('SELECT name, type, "notnull", pk FROM pragma_table_info(?)').all(name);
      const table: Table = { columns: new Map(), primaryKey: [] };
      for (const c of info) {
        // A primary key other than INTEGER PRIMARY KEY may hold NULL in SQLite (a legacy quirk it keeps);
        // the stores never write one, and PostgreSQL's primary keys are NOT NULL: compare them as such.
        const notNull = c.notnull === 1 || Number(c.pk) > 0;
        table.columns.set(String(c.name), { type: sqliteFamily(String(c.type)), notNull });
      }
      table.primaryKey = info
        .filter((c) => Number(c.pk) > 0)
        .sort((a, b) => Number(a.pk) - Number(b.pk))
        .map((c) => String(c.name));
      schema.tables.set(name, table);

      for (const index of db
        .prepare('SELECT name, "unique", origin, partial FROM pragma_index_list(?)')
        .all(name)) {
        if (index.origin === 'pk') continue;
        const columns = db
          .prepare('SELECT cid, name, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno')
          .all(String(index.name))
          .map((c) =>
            Number(c.cid) === -2 ? '<expression>' : `${c.name}${c.coll === 'NOCASE' ? ' nocase' : ''}`,
          );
        const sql = db.prepare('SELECT sql FROM sqlite_schema WHERE name = ?').get(String(index.name))?.sql;
        const where = index.partial === 1 ? (/\bWHERE\b([\s\S]*)$/i.exec(String(sql))?.[1] ?? '?') : null;
        const key = index.origin === 'u' ? uniqueName(name, columns) : String(index.name);
        schema.indexes.set(key, {
          table: name,
          columns,
          unique: index.unique === 1,
          where: foldWhere(where),
        });
      }
    }
    return schema;
  } finally {
    db.close();
  }
}

export async function postgresSchema(url: string): Promise<Schema> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const schema: Schema = { tables: new Map(), indexes: new Map() };
    const columns = await client.query(
      `SELECT c.table_name, c.column_name, c.data_type, c.is_nullable
         FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'`,
    );
    for (const c of columns.rows) {
      let table = schema.tables.get(c.table_name);
      if (!table) {
        table = { columns: new Map(), primaryKey: [] };
        schema.tables.set(c.table_name, table);
      }
      table.columns.set(c.column_name, {
        type: postgresFamily(c.data_type),
        notNull: c.is_nullable === 'NO',
      });
    }
    // Each index's key columns in order (0 is an expression), and whether a constraint stands behind it.
    const indexes = await client.query(
      `SELECT ix.relname::text AS name, tb.relname::text AS table, i.indisunique AS unique, i.indisprimary AS primary,
              con.contype AS constraint, pg_get_expr(i.indpred, i.indrelid) AS where,
              ARRAY(SELECT CASE WHEN k.attnum = 0 THEN '<expression>' ELSE a.attname::text END
                      FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, position)
                      LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                     WHERE k.position <= i.indnkeyatts
                     ORDER BY k.position) AS columns
         FROM pg_index i
         JOIN pg_class ix ON ix.oid = i.indexrelid
         JOIN pg_class tb ON tb.oid = i.indrelid
         JOIN pg_namespace n ON n.oid = tb.relnamespace
         LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid
        WHERE n.nspname = 'public'`,
    );
    for (const index of indexes.rows) {
      if (index.primary) {
        const table = schema.tables.get(index.table);
        if (table) table.primaryKey = index.columns;
        continue;
      }
      const key = index.constraint === 'u' ? uniqueName(index.table, index.columns) : index.name;
      schema.indexes.set(key, {
        table: index.table,
        columns: index.columns,
        unique: index.unique,
        where: foldWhere(index.where),
      });
    }
    return schema;
  } finally {
    await client.end();
  }
}

const describeColumn = (c: Column) => `${c.type}${c.notNull ? ' not null' : ''}`;
const list = (items: string[]) => `(${items.join(', ')})`;

/** What differs between the two schemas, one sentence each, naming the table, column or index. */
export function schemaDifferences(sqlite: Schema, postgres: Schema): string[] {
  const found: string[] = [];
  const sides = [
    ['sqlite', sqlite, postgres],
    ['postgres', postgres, sqlite],
  ] as const;
  for (const [side, mine, theirs] of sides) {
    for (const name of mine.tables.keys())
      if (!theirs.tables.has(name)) found.push(`table ${name} only in ${side}`);
    for (const name of mine.indexes.keys())
      if (!theirs.indexes.has(name)) found.push(`index ${name} only in ${side}`);
  }
  for (const [name, s] of sqlite.tables) {
    const p = postgres.tables.get(name);
    if (!p) continue;
    for (const [side, mine, theirs] of [
      ['sqlite', s, p],
      ['postgres', p, s],
    ] as const) {
      for (const [column, c] of mine.columns) {
        if (!theirs.columns.has(column))
          found.push(`column ${name}.${column} only in ${side} (${describeColumn(c)})`);
      }
    }
    for (const [column, sc] of s.columns) {
      const pc = p.columns.get(column);
      if (pc && describeColumn(sc) !== describeColumn(pc)) {
        found.push(`column ${name}.${column}: sqlite ${describeColumn(sc)}, postgres ${describeColumn(pc)}`);
      }
    }
    if (list(s.primaryKey) !== list(p.primaryKey)) {
      found.push(`primary key of ${name}: sqlite ${list(s.primaryKey)}, postgres ${list(p.primaryKey)}`);
    }
  }
  for (const [name, s] of sqlite.indexes) {
    const p = postgres.indexes.get(name);
    if (!p) continue;
    if (s.table !== p.table) found.push(`index ${name}: on ${s.table} in sqlite, on ${p.table} in postgres`);
    if (list(s.columns) !== list(p.columns)) {
      found.push(`index ${name}: columns sqlite ${list(s.columns)}, postgres ${list(p.columns)}`);
    }
    if (s.unique !== p.unique)
      found.push(`index ${name}: unique in ${s.unique ? 'sqlite' : 'postgres'} only`);
    if (s.where !== p.where) found.push(`index ${name}: where sqlite ${s.where}, postgres ${p.where}`);
  }
  return found.sort();
}

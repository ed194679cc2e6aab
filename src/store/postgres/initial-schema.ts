// Version 1 of the PostgreSQL schema, as the first release shipped it: the tables and indexes of SQLite's
// version 1 (sqlite/initial-schema.ts) in PostgreSQL types. Kept apart from the later versions, which
// migrations.ts lists after it.
import { SHARD_COUNT } from '../../shards.ts';
import type { Migration } from '../store.ts';

export const postgresInitialSchema: Migration = {
  version: 1,
  name: 'initial schema',
  sql: `
    CREATE TABLE tenants (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      created_at TEXT COLLATE "C" NOT NULL
    );

    CREATE TABLE api_keys (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants(id),
      hash TEXT NOT NULL UNIQUE,
      prefix TEXT NOT NULL,
      agents TEXT NOT NULL,
      created_at TEXT COLLATE "C" NOT NULL,
      revoked_at TEXT COLLATE "C"
    );
    CREATE INDEX api_keys_tenant ON api_keys(tenant_id);

    CREATE TABLE users (
      id TEXT PRIMARY KEY,
      row_order BIGINT GENERATED ALWAYS AS IDENTITY,
      tenant_id TEXT NOT NULL REFERENCES tenants(id),
      reference TEXT,
      name TEXT,
      email TEXT,
      phone TEXT,
      metadata TEXT NOT NULL DEFAULT '{}',
      info TEXT NOT NULL DEFAULT '{}',
      created_at TEXT COLLATE "C" NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL,
      deleted_at TEXT COLLATE "C"
    );
    CREATE UNIQUE INDEX users_live_reference ON users(tenant_id, reference)
      WHERE reference IS NOT NULL AND deleted_at IS NULL;
    CREATE INDEX users_tenant_created ON users(tenant_id, created_at);
    -- SQLite's NOCASE folds ASCII letters only; so does this expression (see postgresDialect in sql.ts).
    CREATE INDEX users_tenant_email ON users(tenant_id,
      translate(email, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'));

    -- Fencing: the epoch of a shard is issued here; every session write checks it.
    CREATE TABLE shard_owner (
      shard INTEGER PRIMARY KEY,
      epoch INTEGER NOT NULL DEFAULT 0,
      owner TEXT,
      updated_at TEXT COLLATE "C" NOT NULL
    );
    -- One row per shard of src/shards.ts; a database keeps the rows it was created with.
    INSERT INTO shard_owner (shard, epoch, owner, updated_at)
      SELECT i, 0, NULL, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
        FROM generate_series(0, ${SHARD_COUNT - 1}) AS i;

    CREATE TABLE sessions (
      id TEXT PRIMARY KEY,
      row_order BIGINT GENERATED ALWAYS AS IDENTITY,
      tenant_id TEXT NOT NULL REFERENCES tenants(id),
      agent_id TEXT NOT NULL,
      user_id TEXT REFERENCES users(id),
      shard INTEGER NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('active', 'closed', 'expired')),
      context TEXT NOT NULL DEFAULT '{}',
      metadata TEXT NOT NULL DEFAULT '{}',
      messages_count INTEGER NOT NULL DEFAULT 0,
      last_message_at TEXT COLLATE "C",
      closed_at TEXT COLLATE "C",
      close_reason TEXT,
      expires_at TEXT COLLATE "C",
      snapshot TEXT,
      version INTEGER NOT NULL DEFAULT 0,
      created_at TEXT COLLATE "C" NOT NULL,
      updated_at TEXT COLLATE "C" NOT NULL
    );
    CREATE INDEX sessions_tenant_created ON sessions(tenant_id, created_at);
    CREATE INDEX sessions_tenant_status_created ON sessions(tenant_id, status, created_at);
    CREATE INDEX sessions_shard_expiry ON sessions(shard, status, expires_at);

    CREATE TABLE messages (
      id TEXT PRIMARY KEY,
      session_id TEXT NOT NULL REFERENCES sessions(id),
      seq INTEGER NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
      content TEXT NOT NULL,
      metadata TEXT,
      turn_id TEXT,
      created_at TEXT COLLATE "C" NOT NULL,
      UNIQUE (session_id, seq)
    );

    CREATE TABLE files (
      id TEXT PRIMARY KEY,
      row_order BIGINT GENERATED ALWAYS AS IDENTITY,
      tenant_id TEXT NOT NULL REFERENCES tenants(id),
      session_id TEXT REFERENCES sessions(id),
      name TEXT NOT NULL,
      name_lower TEXT COLLATE "C" NOT NULL,
      size BIGINT NOT NULL,
      mime_type TEXT NOT NULL,
      metadata TEXT NOT NULL DEFAULT '{}',
      created_at TEXT COLLATE "C" NOT NULL
    );
    CREATE INDEX files_tenant_created ON files(tenant_id, created_at);
    CREATE INDEX files_tenant_name ON files(tenant_id, name_lower);
    CREATE INDEX files_session_created ON files(session_id, created_at);

    CREATE TABLE file_blobs (
      file_id TEXT PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
      data BYTEA NOT NULL
    );

    CREATE TABLE feedback (
      id TEXT PRIMARY KEY,
      session_id TEXT NOT NULL UNIQUE REFERENCES sessions(id),
      score INTEGER NOT NULL CHECK (score BETWEEN 0 AND 10),
      comment TEXT,
      metadata TEXT NOT NULL DEFAULT '{}',
      submitted_at TEXT COLLATE "C" NOT NULL
    );

    CREATE TABLE idempotency_records (
      session_id TEXT NOT NULL REFERENCES sessions(id),
      key TEXT NOT NULL,
      fingerprint TEXT NOT NULL,
      turn_id TEXT NOT NULL,
      user_message_id TEXT,
      status_code INTEGER,
      response TEXT,
      created_at TEXT COLLATE "C" NOT NULL,
      expires_at TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (session_id, key)
    );
    CREATE INDEX idempotency_expiry ON idempotency_records(expires_at);
  `,
};

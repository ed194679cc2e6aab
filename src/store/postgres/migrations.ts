// Versioned PostgreSQL schema: the tables and indexes of sqlite/migrations.ts in PostgreSQL types.
// Instants stay ISO 8601 UTC text with milliseconds (COLLATE "C", so they sort as text, as in SQLite);
// JSON stays text, so values round-trip byte for byte; `row_order` stands in for SQLite's rowid.
import type { Migration } from '../store.ts';
import { postgresInitialSchema } from './initial-schema.ts';

export const postgresMigrations: readonly Migration[] = [
  postgresInitialSchema,
  {
    version: 2,
    name: 'expiry sweep index',
    // The sweep looks for due active sessions across every shard the process owns.
    sql: 'CREATE INDEX sessions_status_expiry ON sessions(status, expires_at);',
  },
  {
    version: 3,
    name: 'message epochs',
    // The fencing epoch each message was written under: an audit trail showing that no write of a shard
    // committed under an older epoch after a newer one (what the cluster tests check).
    sql: 'ALTER TABLE messages ADD COLUMN epoch INTEGER;',
  },
  {
    version: 4,
    name: 'message stop reasons and usage',
    // What the model did for an assistant message: why it stopped (text, unchecked, so that reasons added
    // later need no migration) and its usage as JSON `{ input_tokens, output_tokens }`; both null on
    // messages no model produced.
    sql: `
      ALTER TABLE messages ADD COLUMN stop_reason TEXT;
      ALTER TABLE messages ADD COLUMN usage TEXT;
    `,
  },
  {
    version: 5,
    name: 'tool calls',
    // A turn's tool calls, each committed before it runs and completed with its result
    // (docs/internals/decisions.md#the-durable-step-loop): what a turn resumed after a crash reads. The
    // finished reply keeps them too, as its messages' tool_calls (JSON).
    sql: `
      ALTER TABLE messages ADD COLUMN tool_calls TEXT;
      CREATE TABLE tool_calls (
        session_id TEXT NOT NULL REFERENCES sessions(id),
        turn_id TEXT NOT NULL,
        id TEXT NOT NULL,
        step INTEGER NOT NULL,
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        input TEXT NOT NULL,
        step_text TEXT,
        step_usage TEXT,
        status TEXT,
        output TEXT,
        duration_ms INTEGER,
        created_at TEXT NOT NULL,
        completed_at TEXT,
        epoch INTEGER,
        PRIMARY KEY (session_id, turn_id, id)
      );
    `,
  },
  {
    version: 6,
    name: 'tool results in order',
    // The order a turn's results were committed in (several may share a commit, and so completed_at): the
    // order its stream told them, which a resumed or replayed stream must repeat.
    sql: `ALTER TABLE tool_calls ADD COLUMN completed_seq INTEGER;`,
  },
  {
    version: 7,
    name: 'webhooks',
    // A tenant's endpoints (events: a JSON array of types) and the outbox of their deliveries, written in the
    // transaction of the change each event reports (docs/internals/decisions.md#webhooks). Deliveries of one
    // endpoint and ordering key go out in row_order: only the first pending one has a next_attempt_at, the
    // next gets one when it is done (webhook-sql.ts). So the due index holds only those first ones, however
    // long a backlog is.
    sql: `
      CREATE TABLE webhooks (
        id TEXT PRIMARY KEY,
        row_order BIGINT GENERATED ALWAYS AS IDENTITY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        secret TEXT NOT NULL,
        created_at TEXT COLLATE "C" NOT NULL
      );
      CREATE INDEX webhooks_tenant ON webhooks(tenant_id, created_at);

      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        row_order BIGINT GENERATED ALWAYS AS IDENTITY,
        tenant_id TEXT NOT NULL,
        webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        event_id TEXT NOT NULL,
        type TEXT NOT NULL,
        ordering_key TEXT NOT NULL,
        shard INTEGER NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        last_status_code INTEGER,
        last_attempt_at TEXT COLLATE "C",
        next_attempt_at TEXT COLLATE "C",
        created_at TEXT COLLATE "C" NOT NULL
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at)
        WHERE status = 'pending' AND next_attempt_at IS NOT NULL;
      CREATE INDEX webhook_deliveries_key ON webhook_deliveries(webhook_id, ordering_key, row_order)
        WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_webhook_created
        ON webhook_deliveries(webhook_id, created_at, row_order);
      CREATE INDEX webhook_deliveries_done ON webhook_deliveries(created_at) WHERE status <> 'pending';
    `,
  },
  {
    version: 8,
    name: 'API key epoch',
    // As in SQLite: a counter moved by a trigger in the transaction of every change to a key but its
    // creation, whoever writes it; row-level, so a revocation that finds no active key moves nothing.
    sql: `
      CREATE TABLE api_key_epoch (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        epoch BIGINT NOT NULL
      );
      INSERT INTO api_key_epoch (id, epoch) VALUES (1, 0);
      CREATE FUNCTION api_key_epoch_bump() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          UPDATE api_key_epoch SET epoch = epoch + 1 WHERE id = 1;
          RETURN NULL;
        END
      $$;
      CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys
        FOR EACH ROW EXECUTE FUNCTION api_key_epoch_bump();
    `,
  },
  {
    version: 9,
    name: 'drop the shard expiry index',
    // Every session write paid for it (expires_at moves with each message). PostgreSQL's planner may pick it
    // for the sweep's shard list; without it the sweep reads due sessions in expiry order from
    // sessions_status_expiry and filters their shards, which measured faster (1.3 ms against 6 ms over 500,000
    // sessions, 500 due) and stops at its limit as before. The drop locks the table for a moment.
    sql: 'DROP INDEX IF EXISTS sessions_shard_expiry;',
  },
  {
    version: 10,
    name: 'approvals',
    // As in SQLite: a call waiting for a decision, the decision, and a paused session's wake_at, compared as
    // text in byte order (COLLATE "C") like every other instant the sweep reads.
    sql: `
      ALTER TABLE tool_calls ADD COLUMN approver TEXT;
      ALTER TABLE tool_calls ADD COLUMN expires_at TEXT COLLATE "C";
      ALTER TABLE tool_calls ADD COLUMN decision TEXT;
      ALTER TABLE tool_calls ADD COLUMN decided_by TEXT;
      ALTER TABLE tool_calls ADD COLUMN decision_reason TEXT;
      ALTER TABLE tool_calls ADD COLUMN decided_at TEXT;
      CREATE INDEX tool_calls_awaiting ON tool_calls(session_id) WHERE status = 'awaiting_approval';
      ALTER TABLE sessions ADD COLUMN wake_at TEXT COLLATE "C";
      CREATE INDEX sessions_wake ON sessions(wake_at) WHERE wake_at IS NOT NULL;
    `,
  },
  {
    version: 11,
    name: 'webhook outbox bounds',
    // As in SQLite: payloads once per event while a delivery of it is pending, each tenant's pending
    // deliveries and bytes in 16 stripes (a commit updates the row of its shard's stripe and holds it until
    // it commits: one row per tenant would make a tenant's commits wait for each other), and an endpoint's
    // backoff. The events of pending deliveries are carried over, one per event id (its first delivery's).
    sql: `
      ALTER TABLE webhooks ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE webhooks ADD COLUMN failing_since TEXT COLLATE "C";
      ALTER TABLE webhooks ADD COLUMN retry_at TEXT COLLATE "C";

      CREATE TABLE webhook_events (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at TEXT COLLATE "C" NOT NULL
      );
      INSERT INTO webhook_events (id, tenant_id, payload, created_at)
        SELECT DISTINCT ON (event_id) event_id, tenant_id, payload, created_at FROM webhook_deliveries
        WHERE status = 'pending' ORDER BY event_id, row_order;

      ALTER TABLE webhook_deliveries ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE webhook_deliveries ADD COLUMN error TEXT;
      UPDATE webhook_deliveries SET bytes = octet_length(payload) WHERE status = 'pending';
      ALTER TABLE webhook_deliveries DROP COLUMN payload;

      CREATE TABLE webhook_outbox (
        tenant_id TEXT NOT NULL,
        stripe INTEGER NOT NULL,
        pending_deliveries INTEGER NOT NULL,
        pending_bytes BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, stripe)
      );
      INSERT INTO webhook_outbox (tenant_id, stripe, pending_deliveries, pending_bytes)
        SELECT tenant_id, shard % 16, count(*), sum(bytes) FROM webhook_deliveries WHERE status = 'pending'
        GROUP BY tenant_id, shard % 16;
    `,
  },
  {
    version: 12,
    name: 'session tokens',
    // A conversation's newest session token, for the conversations whose tokens are refreshed by showing
    // the newest one (the demo page's): that one refreshes it, an older one no longer does.
    sql: `
      CREATE TABLE session_tokens (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id),
        jti TEXT NOT NULL,
        updated_at TEXT COLLATE "C" NOT NULL
      );
    `,
  },
  {
    version: 13,
    name: 'usage and budgets',
    // Usage counted per session and UTC day by the commit that stores the replies it counts (agent and
    // user copied from the session, for reports grouped by them), and the budgets of end-users: user_id ''
    // is the tenant's default. Replies stored before this version are counted from their usage (tokens only:
    // no cost was kept then), so that the totals agree with the stored messages from the start.
    sql: `
      CREATE TABLE usage_daily (
        session_id TEXT NOT NULL,
        day TEXT COLLATE "C" NOT NULL,
        tenant_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        user_id TEXT,
        turns BIGINT NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cached_input_tokens BIGINT NOT NULL,
        reasoning_tokens BIGINT NOT NULL,
        cost_micro_usd BIGINT NOT NULL,
        PRIMARY KEY (session_id, day)
      );
      CREATE INDEX usage_daily_tenant_day ON usage_daily(tenant_id, day);
      CREATE INDEX usage_daily_user_day ON usage_daily(tenant_id, user_id, day);
      INSERT INTO usage_daily (session_id, day, tenant_id, agent_id, user_id, turns, input_tokens,
          output_tokens, cached_input_tokens, reasoning_tokens, cost_micro_usd)
        SELECT m.session_id, substr(m.created_at, 1, 10), s.tenant_id, s.agent_id, s.user_id, count(*),
          sum((m.usage::json->>'input_tokens')::bigint), sum((m.usage::json->>'output_tokens')::bigint), 0, 0, 0
        FROM messages m JOIN sessions s ON s.id = m.session_id
        WHERE m.usage IS NOT NULL GROUP BY m.session_id, substr(m.created_at, 1, 10), s.tenant_id, s.agent_id, s.user_id;

      CREATE TABLE budgets (
        tenant_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        period TEXT NOT NULL,
        max_cost_micro_usd BIGINT,
        max_tokens BIGINT,
        created_at TEXT COLLATE "C" NOT NULL,
        updated_at TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (tenant_id, user_id)
      );
    `,
  },
  {
    version: 14,
    name: 'humans in the conversation',
    // Who handles a session (the agent, or people after a handoff) and the handoff in force (JSON: when, why,
    // by whom), the operator who wrote a message (JSON, null on every other message), and the session's
    // event log: each commit appends the events it makes (messages, turn events, handoffs, the session's end),
    // numbered on per session from events_count in the same transaction, so that a conversation's event
    // stream is read from what is committed and resumes after any id, on any process
    // (docs/internals/decisions.md#the-conversation-event-stream).
    sql: `
      ALTER TABLE sessions ADD COLUMN handled_by TEXT NOT NULL DEFAULT 'agent';
      ALTER TABLE sessions ADD COLUMN handoff TEXT;
      ALTER TABLE sessions ADD COLUMN events_count INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE messages ADD COLUMN author TEXT;
      CREATE TABLE session_events (
        session_id TEXT NOT NULL REFERENCES sessions(id),
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (session_id, seq)
      );
    `,
  },
  {
    version: 15,
    name: 'session event batches',
    // The session's event log as one row per commit instead of one per event (a plain turn wrote five rows in
    // its two commits, each an insert with its own key entry and foreign-key check; now two): a batch holds
    // the write's events in order, each `[type, data]` (JSON), under the seq of its last. A write's events are
    // numbered on contiguously from events_count, so the first's seq is last_seq - length + 1 and the ids the
    // streams send are unchanged. No foreign key to sessions, on purpose: the one writer, the session write,
    // has just found and updated the session's row in the same transaction, and deleting a session deletes
    // its log by name (SESSION_CHILD_TABLES in src/store/sql.ts, which a test holds to the schema), so the
    // check would only repeat a lookup in every commit. Existing events are carried over, each a batch of
    // one, its data byte for byte (text put together, not JSON rebuilt by the database).
    sql: `
      CREATE TABLE session_event_batches (
        session_id TEXT NOT NULL,
        last_seq INTEGER NOT NULL,
        events TEXT NOT NULL,
        created_at TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (session_id, last_seq)
      );
      INSERT INTO session_event_batches (session_id, last_seq, events, created_at)
        SELECT session_id, seq, '[[' || to_json(type)::text || ',' || data || ']]', created_at FROM session_events
        ORDER BY session_id, seq;
      DROP TABLE session_events;
    `,
  },
];

// Tenants and API keys of SqliteStore. Keys are found by the SHA-256 of the key; revoking one keeps it
// listed with the time of its revocation.
import { apiKeyRow } from '../new-rows.ts';
import { now, toApiKey, toTenant } from '../rows.ts';
import { insert, sqliteDialect } from '../sql.ts';
import type { TenantStore } from '../store.ts';
import { run, type SqliteDb } from './db.ts';

/** The tenants and API keys of SqliteStore, on its connection. */
export function part(db: SqliteDb): TenantStore {
  // The key epoch with the data_version it was read at. data_version moves only when another connection
  // commits, so while it stands the epoch is read from memory: what a request pays is this pragma. This
  // connection's own changes to api_keys do not move it: each must forget the pair (revokeApiKey).
  let epochAt: { dataVersion: number; epoch: number } | null = null;
  // The pragma itself is read once per turn of the event loop and shared by that turn's requests: outside a
  // transaction it is a read transaction of its own (two fcntl locks), ~5% of a plain turn's time under load.
  // The requests of one poll phase were on their sockets when it began, so before the first of them read it:
  // sent before any commit of another connection it does not see. The next turn reads it again.
  let versionNow: number | null = null;
  const dataVersion = (): number => {
    if (versionNow === null) {
      versionNow = Number(db.q('PRAGMA data_version').get()?.data_version);
      setImmediate(() => {
        versionNow = null;
      });
    }
    return versionNow;
  };

  return {
    async createTenant(id, name) {
      const { sql, values } = insert(sqliteDialect, 'tenants', { id, name, created_at: now() });
      db.write(() => run(db, { sql: `${sql} ON CONFLICT (id) DO NOTHING`, values }));
      return toTenant(db.q('SELECT id, name, created_at FROM tenants WHERE id = ?').get(id) ?? {});
    },

    async getTenant(id) {
      const row = db.q('SELECT id, name, created_at FROM tenants WHERE id = ?').get(id);
      return row ? toTenant(row) : null;
    },

    async listTenants() {
      return db.q('SELECT id, name, created_at FROM tenants ORDER BY created_at, id').all().map(toTenant);
    },

    async createApiKey(key) {
      const { sql, values } = insert(sqliteDialect, 'api_keys', apiKeyRow(key, now()));
      db.write(() => run(db, { sql: `${sql} ON CONFLICT (hash) DO NOTHING`, values }));
      return toApiKey(db.q('SELECT * FROM api_keys WHERE hash = ?').get(key.hash) ?? {});
    },

    async findApiKeyByHash(hash, options = {}) {
      const sql = options.includeRevoked
        ? 'SELECT * FROM api_keys WHERE hash = ?'
        : 'SELECT * FROM api_keys WHERE hash = ? AND revoked_at IS NULL';
      const row = db.q(sql).get(hash);
      return row ? toApiKey(row) : null;
    },

    async getApiKey(id) {
      const row = db.q('SELECT * FROM api_keys WHERE id = ?').get(id);
      return row ? toApiKey(row) : null;
    },

    async listApiKeys(tenantId) {
      const rows =
        tenantId === undefined
          ? db.q('SELECT * FROM api_keys ORDER BY created_at, id').all()
          : db.q('SELECT * FROM api_keys WHERE tenant_id = ? ORDER BY created_at, id').all(tenantId);
      return rows.map(toApiKey);
    },

    async revokeApiKey(id) {
      const result = db.write(() =>
        db.q('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now(), id),
      );
      // The trigger moved the epoch, but this connection's own commit leaves data_version as it was.
      epochAt = null;
      return Number(result.changes) === 1;
    },

    async countActiveApiKeys() {
      const row = db.q('SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL').get();
      return Number(row?.n);
    },

    async apiKeyEpoch() {
      const version = dataVersion();
      if (epochAt?.dataVersion !== version) {
        // Read after the pragma, so at least as recent as the data_version it is kept with.
        const epoch = Number(db.q('SELECT epoch FROM api_key_epoch WHERE id = 1').get()?.epoch);
        epochAt = { dataVersion: version, epoch };
      }
      return epochAt.epoch;
    },
  };
}

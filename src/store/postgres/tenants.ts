// Tenants and API keys of PostgresStore. Keys are found by the SHA-256 of the key; revoking one keeps it
// listed with the time of its revocation.
import { apiKeyRow } from '../new-rows.ts';
import { now, toApiKey, toTenant } from '../rows.ts';
import { insert, postgresDialect } from '../sql.ts';
import type { TenantStore } from '../store.ts';
import type { Db } from './db.ts';

/** The tenants and API keys of PostgresStore, on its connection. */
export function part(db: Db): TenantStore {
  return {
    async createTenant(id, name) {
      const { sql, values } = insert(postgresDialect, 'tenants', { id, name, created_at: now() });
      await db.tx((c) => c.query(`${sql} ON CONFLICT (id) DO NOTHING`, values));
      const [row] = await db.rows('SELECT id, name, created_at FROM tenants WHERE id = $1', [id]);
      return toTenant(row);
    },

    async getTenant(id) {
      const [row] = await db.rows('SELECT id, name, created_at FROM tenants WHERE id = $1', [id]);
      return row ? toTenant(row) : null;
    },

    async listTenants() {
      return (await db.rows('SELECT id, name, created_at FROM tenants ORDER BY created_at, id')).map(
        toTenant,
      );
    },

    async createApiKey(key) {
      const { sql, values } = insert(postgresDialect, 'api_keys', apiKeyRow(key, now()));
      await db.tx((c) => c.query(`${sql} ON CONFLICT (hash) DO NOTHING`, values));
      const [row] = await db.rows('SELECT * FROM api_keys WHERE hash = $1', [key.hash]);
      return toApiKey(row);
    },

    async findApiKeyByHash(hash, options = {}) {
      const sql = options.includeRevoked
        ? 'SELECT * FROM api_keys WHERE hash = $1'
        : 'SELECT * FROM api_keys WHERE hash = $1 AND revoked_at IS NULL';
      const [row] = await db.rows(sql, [hash]);
      return row ? toApiKey(row) : null;
    },

    async getApiKey(id) {
      const [row] = await db.rows('SELECT * FROM api_keys WHERE id = $1', [id]);
      return row ? toApiKey(row) : null;
    },

    async listApiKeys(tenantId) {
      const rows =
        tenantId === undefined
          ? await db.rows('SELECT * FROM api_keys ORDER BY created_at, id')
          : await db.rows('SELECT * FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, id', [tenantId]);
      return rows.map(toApiKey);
    },

    async revokeApiKey(id) {
      const result = await db.tx((c) =>
        c.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now(), id]),
      );
      return result.rowCount === 1;
    },

    async countActiveApiKeys() {
      const [row] = await db.rows('SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL');
      return Number(row?.n);
    },

    async apiKeyEpoch() {
      const [row] = await db.rows('SELECT epoch FROM api_key_epoch WHERE id = 1');
      return Number(row?.epoch);
    },
  };
}

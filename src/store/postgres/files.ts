// Files of PostgresStore: the record and its bytes (BYTEA in file_blobs) written and removed in one
// transaction, which also checks the upload quotas (file-quota.ts) when given.
import { quotaError } from '../file-quota.ts';
import { fileRow, storedFile } from '../new-rows.ts';
import { now, toFile, toPage } from '../rows.ts';
import { fileUsage, insert, listFiles, postgresDialect } from '../sql.ts';
import type { FileStore } from '../store.ts';
import type { Db } from './db.ts';

/** The first key of the advisory lock a tenant's quota-checked uploads take (the second is the tenant's hash). */
const FILE_QUOTA_LOCK = 0x7061_6631;

/** The files of PostgresStore, on its connection. */
export function part(db: Db): FileStore {
  return {
    async createFile(tenantId, file, content, quota) {
      const stored = storedFile(file, content.length, now());
      const { sql, values } = insert(postgresDialect, 'files', fileRow(tenantId, stored));
      await db.tx(async (c) => {
        if (quota) {
          // A tenant's uploads take turns until commit, so that two cannot both fit in the same room.
          await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [FILE_QUOTA_LOCK, tenantId]);
          const usage = fileUsage(postgresDialect, tenantId, file.session_id);
          const refused = quotaError(
            (await c.query(usage.sql, usage.values)).rows[0],
            quota,
            file,
            content.length,
          );
          if (refused) throw refused;
        }
        await c.query(sql, values);
        await c.query('INSERT INTO file_blobs (file_id, data) VALUES ($1, $2)', [stored.id, content]);
      });
      return stored;
    },

    async getFile(tenantId, id) {
      const [row] = await db.rows('SELECT * FROM files WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
      return row ? toFile(row) : null;
    },

    async listFiles(tenantId, filter, page) {
      const { sql, values } = listFiles(postgresDialect, tenantId, filter, page);
      return toPage((await db.rows(sql, values)).map(toFile), page);
    },

    async readFileContent(tenantId, id) {
      const [row] = await db.rows(
        'SELECT b.data FROM file_blobs b JOIN files f ON f.id = b.file_id WHERE f.tenant_id = $1 AND f.id = $2',
        [tenantId, id],
      );
      // pg returns BYTEA as a Buffer.
      const data = row?.data;
      return Buffer.isBuffer(data) ? data : null;
    },

    async deleteFile(tenantId, id) {
      return db.tx(async (c) => {
        const found = await c.query('SELECT 1 FROM files WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [
          tenantId,
          id,
        ]);
        if (found.rowCount === 0) return false;
        await c.query('DELETE FROM file_blobs WHERE file_id = $1', [id]);
        await c.query('DELETE FROM files WHERE id = $1', [id]);
        return true;
      });
    },
  };
}

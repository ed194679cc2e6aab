// Files of PostgresStore: the record and its bytes (BYTEA in file_blobs) written and removed in one
// transaction.
import type { FilePart } from './composed-store.ts';
import type { Db } from './postgres-db.ts';
import { fileRow, now, storedFile, toFile } from './rows.ts';
import { insert, listFiles, postgresDialect } from './sql.ts';
import { toPage } from './store.ts';

/** The files of PostgresStore, on its connection. */
export function part(db: Db): FilePart {
  return {
    async createFile(tenantId, file, content) {
      const stored = storedFile(file, content.length, now());
      const { sql, values } = insert(postgresDialect, 'files', fileRow(tenantId, stored));
      await db.tx(async (c) => {
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

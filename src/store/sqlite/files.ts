// Files of SqliteStore: the record and its bytes (a BLOB in file_blobs) written and removed in one
// transaction, which also checks the upload quotas (file-quota.ts) when given.
import { quotaError } from '../file-quota.ts';
import { fileRow, storedFile } from '../new-rows.ts';
import { now, toFile, toPage } from '../rows.ts';
import { fileUsage, insert, listFiles, sqliteDialect } from '../sql.ts';
import type { FileStore } from '../store.ts';
import { all, get, run, type SqliteDb } from './db.ts';

/** The files of SqliteStore, on its connection. */
export function part(db: SqliteDb): FileStore {
  return {
    async createFile(tenantId, file, content, quota) {
      const stored = storedFile(file, content.length, now());
      db.write(() => {
        // The one write transaction of the connection: no other upload counts between this and the insert.
        if (quota) {
          const usage = get(db, fileUsage(sqliteDialect, tenantId, file.session_id));
          const refused = quotaError(usage, quota, file, content.length);
          if (refused) throw refused;
        }
        run(db, insert(sqliteDialect, 'files', fileRow(tenantId, stored)));
        db.q('INSERT INTO file_blobs (file_id, data) VALUES (?, ?)').run(stored.id, content);
      });
      return stored;
    },

    async getFile(tenantId, id) {
      const row = db.q('SELECT * FROM files WHERE tenant_id = ? AND id = ?').get(tenantId, id);
      return row ? toFile(row) : null;
    },

    async listFiles(tenantId, filter, page) {
      return toPage(all(db, listFiles(sqliteDialect, tenantId, filter, page)).map(toFile), page);
    },

    async readFileContent(tenantId, id) {
      const row = db
        .q(
          'SELECT b.data FROM file_blobs b JOIN files f ON f.id = b.file_id WHERE f.tenant_id = ? AND f.id = ?',
        )
        .get(tenantId, id);
      // node:sqlite returns a BLOB as a Uint8Array; the contract promises a Buffer (on the same memory).
      const data = row?.data;
      return data instanceof Uint8Array ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : null;
    },

    async deleteFile(tenantId, id) {
      return db.write(() => {
        const found = db.q('SELECT 1 FROM files WHERE tenant_id = ? AND id = ?').get(tenantId, id);
        if (!found) return false;
        db.q('DELETE FROM file_blobs WHERE file_id = ?').run(id);
        db.q('DELETE FROM files WHERE id = ?').run(id);
        return true;
      });
    },
  };
}

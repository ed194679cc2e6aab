// Files of SqliteStore: the record and its bytes (a BLOB in file_blobs) written and removed in one
// transaction.
import type { FilePart } from './composed-store.ts';
import { fileRow, now, storedFile, toFile } from './rows.ts';
import { insert, listFiles, sqliteDialect } from './sql.ts';
import { all, run, type SqliteDb } from './sqlite-db.ts';
import { toPage } from './store.ts';

/** The files of SqliteStore, on its connection. */
export function part(db: SqliteDb): FilePart {
  return {
    async createFile(tenantId, file, content) {
      const stored = storedFile(file, content.length, now());
      db.write(() => {
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

// Files of PostgresStore: the record and its bytes (BYTEA) written and removed in one transaction; the
// name prefix filter folds case with toLowerCase on both sides, exactly as SqliteStore does.
import { type Db, json, likePrefix, now, toFile, Where } from './postgres-rows.ts';
import {
  type FileFilter,
  type NewFile,
  type Page,
  type PageRequest,
  type StoredFile,
  toPage,
} from './store.ts';

export async function createFile(
  db: Db,
  tenantId: string,
  file: NewFile,
  content: Buffer,
): Promise<StoredFile> {
  const stored: StoredFile = {
    id: file.id,
    name: file.name,
    size: content.length,
    mime_type: file.mime_type,
    created_at: now(),
    metadata: file.metadata,
    session_id: file.session_id,
  };
  await db.tx(async (c) => {
    await c.query(
      `INSERT INTO files (id, tenant_id, session_id, name, name_lower, size, mime_type, metadata, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        stored.id,
        tenantId,
        stored.session_id,
        stored.name,
        // Folded here, by the same toLowerCase as the filter's prefix: both sides fold alike.
        stored.name.toLowerCase(),
        stored.size,
        stored.mime_type,
        json(stored.metadata),
        stored.created_at,
      ],
    );
    await c.query('INSERT INTO file_blobs (file_id, data) VALUES ($1, $2)', [stored.id, content]);
  });
  return stored;
}

export async function getFile(db: Db, tenantId: string, id: string): Promise<StoredFile | null> {
  const [row] = await db.rows('SELECT * FROM files WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return row ? toFile(row) : null;
}

export async function listFiles(
  db: Db,
  tenantId: string,
  filter: FileFilter,
  page: PageRequest,
): Promise<Page<StoredFile>> {
  const where = new Where().add((p) => `tenant_id = ${p}`, tenantId);
  if (filter.name !== undefined) {
    // Both sides folded by toLowerCase (see createFile), as SqliteStore does.
    where.add((p) => `name_lower LIKE ${p} ESCAPE '\\'`, likePrefix(filter.name.toLowerCase()));
  }
  if (filter.session_id !== undefined) where.add((p) => `session_id = ${p}`, filter.session_id);
  if (filter.mime_type !== undefined) where.add((p) => `mime_type = ${p}`, filter.mime_type);
  const instant = (iso: string) => new Date(iso).toISOString();
  if (filter.created_after !== undefined) {
    where.add((p) => `created_at > ${p}`, instant(filter.created_after));
  }
  if (filter.created_before !== undefined) {
    where.add((p) => `created_at < ${p}`, instant(filter.created_before));
  }
  const sql = `SELECT * FROM files ${where.paged('created_at DESC, row_order DESC', page)}`;
  return toPage((await db.rows(sql, where.params)).map(toFile), page);
}

export async function readFileContent(db: Db, tenantId: string, id: string): Promise<Buffer | null> {
  const [row] = await db.rows(
    'SELECT b.data FROM file_blobs b JOIN files f ON f.id = b.file_id WHERE f.tenant_id = $1 AND f.id = $2',
    [tenantId, id],
  );
  return (row?.data as Buffer | undefined) ?? null;
}

export async function deleteFile(db: Db, tenantId: string, id: string): Promise<boolean> {
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
}

// Users of PostgresStore: live users by tenant, references unique among the live ones (a partial unique
// index), email matched ignoring ASCII case as SQLite's NOCASE does.
import pg from 'pg';
import { AppError } from '../errors.ts';
import { asciiFold, type Db, json, now, toUser, Where } from './postgres-rows.ts';
import { type Page, type PageRequest, toPage, type User, type UserFields, type UserFilter } from './store.ts';

const isReferenceConflict = (err: unknown) =>
  err instanceof pg.DatabaseError && err.code === '23505' && err.constraint === 'users_live_reference';

export async function createUser(db: Db, tenantId: string, id: string, fields: UserFields): Promise<User> {
  const at = now();
  const row = {
    id,
    tenant_id: tenantId,
    reference: fields.reference ?? null,
    name: fields.name ?? null,
    email: fields.email ?? null,
    phone: fields.phone ?? null,
    metadata: json(fields.metadata),
    info: json(fields.info),
    created_at: at,
    updated_at: at,
  };
  try {
    await db.tx((c) =>
      c.query(
        `INSERT INTO users (id, tenant_id, reference, name, email, phone, metadata, info, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        Object.values(row),
      ),
    );
  } catch (err) {
    throw referenceConflict(err, fields.reference);
  }
  return toUser(row);
}

function referenceConflict(err: unknown, reference: string | null | undefined): unknown {
  if (!isReferenceConflict(err)) return err;
  return new AppError('user_reference_conflict', undefined, { context: { reference } });
}

export async function getUser(db: Db, tenantId: string, id: string): Promise<User | null> {
  const [row] = await db.rows('SELECT * FROM users WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL', [
    tenantId,
    id,
  ]);
  return row ? toUser(row) : null;
}

export async function listUsers(
  db: Db,
  tenantId: string,
  filter: UserFilter,
  page: PageRequest,
): Promise<Page<User>> {
  const where = new Where().add((p) => `tenant_id = ${p} AND deleted_at IS NULL`, tenantId);
  if (filter.reference !== undefined) where.add((p) => `reference = ${p}`, filter.reference);
  if (filter.email !== undefined) {
    where.add((p) => `${asciiFold('email')} = ${asciiFold(`${p}::text`)}`, filter.email);
  }
  const sql = `SELECT * FROM users ${where.paged('created_at DESC, row_order DESC', page)}`;
  return toPage((await db.rows(sql, where.params)).map(toUser), page);
}

export async function updateUser(
  db: Db,
  tenantId: string,
  id: string,
  fields: UserFields,
): Promise<User | null> {
  const params: unknown[] = [tenantId, id, now()];
  const sets = ['updated_at = $3'];
  for (const column of ['reference', 'name', 'email', 'phone', 'metadata', 'info'] as const) {
    const value = fields[column];
    if (value === undefined) continue;
    params.push(column === 'metadata' || column === 'info' ? json(value) : value);
    sets.push(`${column} = $${params.length}`);
  }
  try {
    const { rows } = await db.tx((c) =>
      c.query(
        `UPDATE users SET ${sets.join(', ')}
           WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *`,
        params,
      ),
    );
    return rows[0] ? toUser(rows[0]) : null;
  } catch (err) {
    throw referenceConflict(err, fields.reference);
  }
}

export async function deleteUser(db: Db, tenantId: string, id: string): Promise<boolean> {
  const at = now();
  const result = await db.tx((c) =>
    c.query(
      'UPDATE users SET deleted_at = $1, updated_at = $1 WHERE tenant_id = $2 AND id = $3 AND deleted_at IS NULL',
      [at, tenantId, id],
    ),
  );
  return result.rowCount === 1;
}

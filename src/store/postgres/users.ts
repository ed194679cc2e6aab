// Users of PostgresStore: live users by tenant, references unique among the live ones (a partial unique
// index), deletes soft (they free the reference); email matched ignoring ASCII case as SQLite's NOCASE does.
import pg from 'pg';
import { AppError } from '../../errors.ts';
import { userRow } from '../new-rows.ts';
import { now, toPage, toUser } from '../rows.ts';
import { insert, listUsers, postgresDialect, updateUser } from '../sql.ts';
import type { UserStore } from '../store.ts';
import { tellRefused } from '../webhook-outbox.ts';
import type { Db } from './db.ts';
import { queueWebhookEvents } from './webhook-queue.ts';

/** The error to throw for `err`: a taken reference becomes the API's conflict, anything else stays. */
function referenceConflict(err: unknown, reference: string | null | undefined): unknown {
  const taken =
    err instanceof pg.DatabaseError && err.code === '23505' && err.constraint === 'users_live_reference';
  return taken ? new AppError('user_reference_conflict', undefined, { context: { reference } }) : err;
}

/** The users of PostgresStore, on its connection. */
export function part(db: Db): UserStore {
  return {
    async createUser(tenantId, id, fields) {
      const row = userRow(tenantId, id, fields, now());
      const { sql, values } = insert(postgresDialect, 'users', row);
      await db
        .tx((c) => c.query(sql, values))
        .catch((err) => {
          throw referenceConflict(err, fields.reference);
        });
      return toUser(row);
    },

    async getUser(tenantId, id) {
      const [row] = await db.rows(
        'SELECT * FROM users WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL',
        [tenantId, id],
      );
      return row ? toUser(row) : null;
    },

    async listUsers(tenantId, filter, page) {
      const { sql, values } = listUsers(postgresDialect, tenantId, filter, page);
      return toPage((await db.rows(sql, values)).map(toUser), page);
    },

    async updateUser(tenantId, id, fields) {
      const { sql, values } = updateUser(postgresDialect, tenantId, id, fields, now());
      const { rows } = await db
        .tx((c) => c.query(sql, values))
        .catch((err) => {
          throw referenceConflict(err, fields.reference);
        });
      return rows[0] ? toUser(rows[0]) : null;
    },

    async deleteUser(tenantId, id, event) {
      const at = now();
      let refused = 0;
      const deleted = await db.tx(async (c) => {
        const result = await c.query(
          'UPDATE users SET deleted_at = $1, updated_at = $1 WHERE tenant_id = $2 AND id = $3 AND deleted_at IS NULL',
          [at, tenantId, id],
        );
        const done = result.rowCount === 1;
        // Only a delete that happened is reported, with the instant written.
        if (done && event) refused = (await queueWebhookEvents(db, c, [event(at)])).refused;
        return done;
      });
      tellRefused(db, refused);
      return deleted;
    },
  };
}

// Users of SqliteStore: live users by tenant, references unique among the live ones (a partial unique
// index), deletes soft (they free the reference).
import { AppError } from '../../errors.ts';
import { userRow } from '../new-rows.ts';
import { now, toPage, toUser } from '../rows.ts';
import { insert, listUsers, sqliteDialect, updateUser } from '../sql.ts';
import type { UserStore } from '../store.ts';
import { tellRefused } from '../webhook-outbox.ts';
import { all, get, run, SQLITE_CONSTRAINT_UNIQUE, type SqliteDb, sqliteCode } from './db.ts';
import { queueWebhookEvents } from './webhooks.ts';

/** The error to throw for `err`: a taken reference becomes the API's conflict, anything else stays. */
function referenceConflict(err: unknown, reference: string | null | undefined): unknown {
  const taken =
    sqliteCode(err) === SQLITE_CONSTRAINT_UNIQUE && err instanceof Error && err.message.includes('users.');
  return taken ? new AppError('user_reference_conflict', undefined, { context: { reference } }) : err;
}

/** The users of SqliteStore, on its connection. */
export function part(db: SqliteDb): UserStore {
  return {
    async createUser(tenantId, id, fields) {
      const row = userRow(tenantId, id, fields, now());
      try {
        await db.grouped(() => run(db, insert(sqliteDialect, 'users', row)));
      } catch (err) {
        throw referenceConflict(err, fields.reference);
      }
      return toUser(row);
    },

    async getUser(tenantId, id) {
      const row = db
        .q('SELECT * FROM users WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL')
        .get(tenantId, id);
      return row ? toUser(row) : null;
    },

    async listUsers(tenantId, filter, page) {
      return toPage(all(db, listUsers(sqliteDialect, tenantId, filter, page)).map(toUser), page);
    },

    async updateUser(tenantId, id, fields) {
      try {
        const row = await db.grouped(() => get(db, updateUser(sqliteDialect, tenantId, id, fields, now())));
        return row ? toUser(row) : null;
      } catch (err) {
        throw referenceConflict(err, fields.reference);
      }
    },

    async deleteUser(tenantId, id, event) {
      const at = now();
      let refused = 0;
      const deleted = db.write(() => {
        const result = db
          .q(
            'UPDATE users SET deleted_at = ?, updated_at = ? WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL',
          )
          .run(at, at, tenantId, id);
        const done = Number(result.changes) === 1;
        // Only a delete that happened is reported, with the instant written.
        if (done && event) refused = queueWebhookEvents(db, [event(at)]).refused;
        return done;
      });
      tellRefused(db, refused);
      return deleted;
    },
  };
}

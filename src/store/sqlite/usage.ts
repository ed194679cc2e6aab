// Usage and budgets of SqliteStore: totals, reports and a budget's period read from usage_daily (written
// by session commits, see sqlite/sessions.ts), and the budgets themselves.
import type { StoreParts } from '../composed-store.ts';
import { now } from '../rows.ts';
import { sqliteDialect as d } from '../sql.ts';
import * as sql from '../usage-sql.ts';
import { all, get, run, type SqliteDb } from './db.ts';

/** The usage and budgets of SqliteStore, on its connection. */
export function part(db: SqliteDb): StoreParts['usage'] {
  return {
    async sessionUsage(tenantId, sessionIds) {
      return sql.totalsMap(all(db, sql.totalsBy(d, tenantId, 'session_id', sessionIds)));
    },
    async userUsage(tenantId, userIds) {
      return sql.totalsMap(all(db, sql.totalsBy(d, tenantId, 'user_id', userIds)));
    },
    async usageReport(tenantId, query) {
      return sql.toUsagePage(all(db, sql.usageReport(d, tenantId, query)), query);
    },
    async periodUsage(tenantId, scope, fromDay) {
      return sql.toTotals(get(db, sql.periodUsage(d, tenantId, scope, fromDay)));
    },
    async getBudget(tenantId, userId) {
      const row = get(db, sql.getBudget(d, tenantId, userId));
      return row ? sql.toBudget(row) : null;
    },
    async putBudget(tenantId, userId, fields) {
      const row = db.write(() => get(db, sql.putBudget(d, tenantId, userId, fields, now())));
      if (!row) throw new Error('The budget was not stored');
      return sql.toBudget(row);
    },
    async deleteBudget(tenantId, userId) {
      return db.write(() => Number(run(db, sql.deleteBudget(d, tenantId, userId)).changes) === 1);
    },
  };
}

// Usage and budgets of PostgresStore: totals, reports and a budget's period read from usage_daily (written
// by session commits, see postgres/sessions.ts), and the budgets themselves.
import type { StoreParts } from '../composed-store.ts';
import { now } from '../rows.ts';
import { postgresDialect as d, type Statement } from '../sql.ts';
import * as sql from '../usage-sql.ts';
import type { Db } from './db.ts';

/** The usage and budgets of PostgresStore, on its pool. */
export function part(db: Db): StoreParts['usage'] {
  const rows = (s: Statement) => db.rows(s.sql, s.values);
  return {
    async sessionUsage(tenantId, sessionIds) {
      return sql.totalsMap(await rows(sql.totalsBy(d, tenantId, 'session_id', sessionIds)));
    },
    async userUsage(tenantId, userIds) {
      return sql.totalsMap(await rows(sql.totalsBy(d, tenantId, 'user_id', userIds)));
    },
    async usageReport(tenantId, query) {
      return sql.toUsagePage(await rows(sql.usageReport(d, tenantId, query)), query);
    },
    async periodUsage(tenantId, scope, fromDay) {
      return sql.toTotals((await rows(sql.periodUsage(d, tenantId, scope, fromDay)))[0]);
    },
    async getBudget(tenantId, userId) {
      const [row] = await rows(sql.getBudget(d, tenantId, userId));
      return row ? sql.toBudget(row) : null;
    },
    async putBudget(tenantId, userId, fields) {
      const statement = sql.putBudget(d, tenantId, userId, fields, now());
      const [row] = await db.tx(async (c) => (await c.query(statement.sql, statement.values)).rows);
      if (!row) throw new Error('The budget was not stored');
      return sql.toBudget(row);
    },
    async deleteBudget(tenantId, userId) {
      const statement = sql.deleteBudget(d, tenantId, userId);
      const { rowCount } = await db.tx((c) => c.query(statement.sql, statement.values));
      return rowCount === 1;
    },
  };
}

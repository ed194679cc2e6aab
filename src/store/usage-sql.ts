// The usage and budget SQL both stores share. Usage is counted in `usage_daily`, one row per session and
// UTC day, by the same write that stores the replies it counts (countUsage, in every session commit), so
// the totals never drift from the messages; reports, totals and a budget's period sum those rows.
import { budgetRow } from './new-rows.ts';
import { type Row, text, textOrNull, toPage } from './rows.ts';
import { type Dialect, Query, type Statement } from './sql.ts';
import type {
  Budget,
  BudgetFields,
  SessionWrite,
  UsageGroup,
  UsageQuery,
  UsageRow,
  UsageScope,
  UsageTotals,
} from './store.ts';
import { fullUsage } from './store.ts';

const COUNTS = [
  'turns',
  'input_tokens',
  'output_tokens',
  'cached_input_tokens',
  'reasoning_tokens',
  'cost_micro_usd',
] as const;

/** The sums of the counts, named as the counts (coalesced: no row sums to 0). */
const sums = COUNTS.map((c) => `coalesce(sum(${c}), 0) AS ${c}`).join(', ');

/** Totals from a row of `sums` (PostgreSQL's sums of BIGINT arrive as text; all far below 2^53). */
export const toTotals = (r: Row | undefined): UsageTotals => ({
  turns: Number(r?.turns ?? 0),
  input_tokens: Number(r?.input_tokens ?? 0),
  output_tokens: Number(r?.output_tokens ?? 0),
  cached_input_tokens: Number(r?.cached_input_tokens ?? 0),
  reasoning_tokens: Number(r?.reasoning_tokens ?? 0),
  cost_micro_usd: Number(r?.cost_micro_usd ?? 0),
});

/**
 * Adds the usage of the write's model replies (each a turn) to its session's row of the day, or null when
 * it stores none. The session's agent and user are copied from its row, for the reports' groups.
 */
export function countUsage(d: Dialect, write: SessionWrite, at: string): Statement | null {
  const replies = (write.messages ?? []).flatMap((m) => (m.usage ? [fullUsage(m.usage)] : []));
  if (replies.length === 0) return null;
  const q = new Query(d);
  const add = (c: Exclude<(typeof COUNTS)[number], 'turns'>) =>
    `CAST(${q.param(replies.reduce((n, u) => n + u[c], 0))} AS BIGINT)`;
  const values = `${q.param(write.session_id)}, ${q.param(at.slice(0, 10))}, tenant_id, agent_id, user_id,
    CAST(${q.param(replies.length)} AS BIGINT), ${add('input_tokens')}, ${add('output_tokens')},
    ${add('cached_input_tokens')}, ${add('reasoning_tokens')}, ${add('cost_micro_usd')}`;
  return q.statement(`INSERT INTO usage_daily (session_id, day, tenant_id, agent_id, user_id, ${COUNTS.join(', ')})
    SELECT ${values} FROM sessions WHERE id = ${q.param(write.session_id)}
    ON CONFLICT (session_id, day) DO UPDATE SET
      ${COUNTS.map((c) => `${c} = usage_daily.${c} + excluded.${c}`).join(', ')}`);
}

/** Totals per session or per user of the tenant, for the ids given. */
export function totalsBy(
  d: Dialect,
  tenantId: string,
  column: 'session_id' | 'user_id',
  ids: readonly string[],
): Statement {
  const q = new Query(d);
  return q.statement(`SELECT ${column} AS key, ${sums} FROM usage_daily
    WHERE tenant_id = ${q.param(tenantId)} AND ${d.inJsonArray(column, q.param(JSON.stringify(ids)), 'text')}
    GROUP BY ${column}`);
}

export const totalsMap = (rows: Row[]) => new Map(rows.map((r) => [text(r, 'key'), toTotals(r)] as const));

const GROUP_COLUMNS: Record<UsageGroup, string> = {
  day: 'day',
  agent: 'agent_id',
  user: 'user_id',
  session: 'session_id',
};

/** A page of the tenant's usage grouped as asked, keys in order (sessions without a user last). */
export function usageReport(d: Dialect, tenantId: string, query: UsageQuery): Statement {
  const q = new Query(d);
  const where = [
    `tenant_id = ${q.param(tenantId)}`,
    `day >= ${q.param(query.from)}`,
    `day <= ${q.param(query.to)}`,
  ];
  if (query.agent_id !== undefined) where.push(`agent_id = ${q.param(query.agent_id)}`);
  if (query.user_id !== undefined) where.push(`user_id = ${q.param(query.user_id)}`);
  if (query.agent_ids !== undefined)
    where.push(d.inJsonArray('agent_id', q.param(JSON.stringify(query.agent_ids)), 'text'));
  const key = GROUP_COLUMNS[query.group_by];
  return q.statement(`SELECT ${key} AS key, ${sums} FROM usage_daily WHERE ${where.join(' AND ')}
    GROUP BY ${key} ORDER BY ${key} IS NULL, ${key}
    LIMIT ${q.param(query.limit + 1)} OFFSET ${q.param(query.offset)}`);
}

export const toUsagePage = (rows: Row[], query: UsageQuery) =>
  toPage(
    rows.map((r): UsageRow => ({ key: textOrNull(r, 'key'), ...toTotals(r) })),
    query,
  );

/** What the scope used from `fromDay` on. */
export function periodUsage(d: Dialect, tenantId: string, scope: UsageScope, fromDay: string): Statement {
  const q = new Query(d);
  const [column, id] = 'user_id' in scope ? ['user_id', scope.user_id] : ['session_id', scope.session_id];
  return q.statement(`SELECT ${sums} FROM usage_daily WHERE tenant_id = ${q.param(tenantId)}
    AND ${column} = ${q.param(id)} AND day >= ${q.param(fromDay)}`);
}

/** The tenant's default budget is kept under the user id ''. */
const subject = (userId: string | null) => userId ?? '';

export function getBudget(d: Dialect, tenantId: string, userId: string | null): Statement {
  const q = new Query(d);
  return q.statement(`SELECT * FROM budgets WHERE tenant_id = ${q.param(tenantId)}
    AND user_id = ${q.param(subject(userId))}`);
}

export function putBudget(
  d: Dialect,
  tenantId: string,
  userId: string | null,
  fields: BudgetFields,
  at: string,
): Statement {
  const q = new Query(d);
  const row = budgetRow(tenantId, subject(userId), fields, at);
  const placeholders = Object.values(row).map((value) => q.param(value));
  return q.statement(`INSERT INTO budgets (${Object.keys(row).join(', ')}) VALUES (${placeholders.join(', ')})
    ON CONFLICT (tenant_id, user_id) DO UPDATE SET period = excluded.period,
      max_cost_micro_usd = excluded.max_cost_micro_usd, max_tokens = excluded.max_tokens,
      updated_at = excluded.updated_at
    RETURNING *`);
}

export function deleteBudget(d: Dialect, tenantId: string, userId: string | null): Statement {
  const q = new Query(d);
  return q.statement(`DELETE FROM budgets WHERE tenant_id = ${q.param(tenantId)}
    AND user_id = ${q.param(subject(userId))}`);
}

export const toBudget = (r: Row): Budget => ({
  user_id: text(r, 'user_id') === '' ? null : text(r, 'user_id'),
  period: text(r, 'period') === 'month' ? 'month' : 'day',
  max_cost_micro_usd: r.max_cost_micro_usd === null ? null : Number(r.max_cost_micro_usd),
  max_tokens: r.max_tokens === null ? null : Number(r.max_tokens),
  created_at: text(r, 'created_at'),
  updated_at: text(r, 'updated_at'),
});

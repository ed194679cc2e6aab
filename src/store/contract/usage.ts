// The Store's usage and budgets: what model calls cost, counted per session and UTC day in the same write as
// the reply that reports them (so the totals always agree with the stored messages), read back as totals and
// grouped reports, and the budgets an end-user (or the tenant's default) is held to.

/** Summed usage: model-answered turns, tokens, and cost in millionths of a US dollar (exact integers). */
export interface UsageTotals {
  turns: number;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_tokens: number;
  cost_micro_usd: number;
}

/** Nothing counted. */
export const noTotals = (): UsageTotals => ({
  turns: 0,
  input_tokens: 0,
  output_tokens: 0,
  cached_input_tokens: 0,
  reasoning_tokens: 0,
  cost_micro_usd: 0,
});

export const USAGE_GROUPS = ['day', 'agent', 'user', 'session'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

export interface UsageQuery {
  /** First and last UTC day counted (YYYY-MM-DD, both included). */
  from: string;
  to: string;
  group_by: UsageGroup;
  agent_id?: string;
  user_id?: string;
  /** Only these agents (the API key's scope); undefined for every agent. */
  agent_ids?: readonly string[];
  limit: number;
  offset: number;
}

/** A row of a usage report: `key` is the day, agent id, user id (null: sessions without a user) or session id. */
export interface UsageRow extends UsageTotals {
  key: string | null;
}

/** Whose usage a budget weighs: an end-user's sessions, or one session without a user. */
export type UsageScope = { user_id: string } | { session_id: string };

export interface Budget {
  /** Null for the tenant's default. */
  user_id: string | null;
  period: 'day' | 'month';
  max_cost_micro_usd: number | null;
  max_tokens: number | null;
  created_at: string;
  updated_at: string;
}

export type BudgetFields = Pick<Budget, 'period' | 'max_cost_micro_usd' | 'max_tokens'>;

export interface UsageStore {
  /** Totals of each of the tenant's sessions named (absent: nothing counted yet). */
  sessionUsage(tenantId: string, sessionIds: readonly string[]): Promise<Map<string, UsageTotals>>;
  /** Totals of each of the tenant's users named, over all their sessions. */
  userUsage(tenantId: string, userIds: readonly string[]): Promise<Map<string, UsageTotals>>;
  /** A page of usage grouped as asked, ordered by key; `next_offset` null on the last page. */
  usageReport(
    tenantId: string,
    query: UsageQuery,
  ): Promise<{ items: UsageRow[]; next_offset: number | null }>;
  /** The scope's usage from `fromDay` (YYYY-MM-DD, UTC) on: what a budget's period has used. */
  periodUsage(tenantId: string, scope: UsageScope, fromDay: string): Promise<UsageTotals>;
  /** The user's budget, or the tenant's default when `userId` is null. */
  getBudget(tenantId: string, userId: string | null): Promise<Budget | null>;
  /** Sets (replaces) a budget; returns it as stored. The caller checks the user exists. */
  putBudget(tenantId: string, userId: string | null, fields: BudgetFields): Promise<Budget>;
  deleteBudget(tenantId: string, userId: string | null): Promise<boolean>;
}

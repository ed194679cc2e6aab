// Usage and budgets of the server-side family (docs/guides/usage.md), as `ParleyClient.usage`: the usage
// report, and the budgets of end-users and the tenant's default. Types derive from the wire schemas.

import type {
  budgetFields,
  budgetSchema,
  pageOf,
  usageQuery,
  usageRowSchema,
  usageTotalsSchema,
} from '@parley/schemas';
import type { z } from 'zod';
import { seg, type Transport } from './transport.ts';

/** `{ period: 'day' | 'month', max_cost_usd?, max_tokens? }`. */
export type BudgetFields = z.input<typeof budgetFields>;
export type Budget = z.output<typeof budgetSchema>;
/** `from`, `to` (UTC days), `group_by` (day, agent, user, session), `agent_id`, `user_id`, `limit`, `offset`. */
export type UsageQuery = Partial<z.output<typeof usageQuery>>;
export type UsageRow = z.output<typeof usageRowSchema>;
export type UsagePage = z.output<ReturnType<typeof pageOf<typeof usageRowSchema>>>;
/** The `usage` of a Session or a User. */
export type UsageTotals = z.output<typeof usageTotalsSchema>;

type Signal = { signal?: AbortSignal | undefined };

export class UsageApi {
  readonly #t: Transport;

  constructor(transport: Transport) {
    this.#t = transport;
  }

  /** GET /v1/agents/usage */
  report(query: UsageQuery = {}, o: Signal = {}): Promise<UsagePage> {
    return this.#t.json({ method: 'GET', path: '/v1/agents/usage', query, idempotent: true, ...o });
  }

  /** PUT /v1/agents/users/{user_id}/budget, or the tenant's default when `userId` is null. */
  setBudget(userId: string | null, body: BudgetFields, o: Signal = {}): Promise<Budget> {
    return this.#t.json({ method: 'PUT', path: budgetPath(userId), json: body, idempotent: true, ...o });
  }

  /** GET the user's budget, or the tenant's default when `userId` is null. */
  getBudget(userId: string | null, o: Signal = {}): Promise<Budget> {
    return this.#t.json({ method: 'GET', path: budgetPath(userId), idempotent: true, ...o });
  }

  /** DELETE the user's budget, or the tenant's default when `userId` is null. */
  async deleteBudget(userId: string | null, o: Signal = {}): Promise<void> {
    const response = await this.#t.request({
      method: 'DELETE',
      path: budgetPath(userId),
      idempotent: true,
      ...o,
    });
    await response.body?.cancel();
  }
}

const budgetPath = (userId: string | null) =>
  userId === null ? '/v1/agents/budgets/default' : `/v1/agents/users/${seg(userId)}/budget`;

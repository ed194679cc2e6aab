// Budgets, checked before each model call: the end-user's own budget, else the tenant's default (which also
// holds each session without a user to it), weighed against the usage committed in the current UTC day or
// month plus what the running turn has spent and not yet committed. Budgets are cached per process for a few
// seconds, so that a tenant without budgets costs no query per call; a change made through this process is
// seen at once, one made through another within BUDGET_CACHE_MS.
import type { AgentConfig } from '../agents/catalogue.ts';
import { AppError } from '../errors.ts';
import type { Budget, MessageUsage, Store, UsageScope } from '../store/store.ts';
import type { OperationDeps } from './operation-context.ts';

export const BUDGET_CACHE_MS = 5_000;

/** The first day of the period holding `now` (UTC), and the instant it ends. */
export function periodOf(period: Budget['period'], now: Date): { fromDay: string; endsAt: Date } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const d = now.getUTCDate();
  const start = period === 'day' ? new Date(Date.UTC(y, m, d)) : new Date(Date.UTC(y, m, 1));
  const endsAt = period === 'day' ? new Date(Date.UTC(y, m, d + 1)) : new Date(Date.UTC(y, m + 1, 1));
  return { fromDay: start.toISOString().slice(0, 10), endsAt };
}

/** The session a model call is for, as the check needs it. */
export interface BudgetedSession {
  id: string;
  tenant_id: string;
  user: { id: string } | null;
}

export class Budgets {
  readonly #store: Store;
  readonly #now: () => Date;
  /** `${tenant}\0${user or ''}` → the budget (null: none) and when it was read. */
  readonly #cache = new Map<string, { budget: Budget | null; at: number }>();

  constructor(store: Store, now: () => Date = () => new Date()) {
    this.#store = store;
    this.#now = now;
  }

  /** Forgets a budget just changed through this process. */
  changed(tenantId: string, userId: string | null): void {
    this.#cache.delete(`${tenantId}\0${userId ?? ''}`);
  }

  /**
   * Throws 429 budget_exceeded when the budget holding the session is spent: its committed usage in the
   * period, plus `running` (the turn's usage not committed yet), has reached a limit.
   */
  async check(session: BudgetedSession, agent: AgentConfig, running?: MessageUsage): Promise<void> {
    const userId = session.user?.id ?? null;
    const budget =
      (userId !== null ? await this.#budget(session.tenant_id, userId) : null) ??
      (await this.#budget(session.tenant_id, null));
    if (!budget) return;
    const now = this.#now();
    const { fromDay, endsAt } = periodOf(budget.period, now);
    const scope: UsageScope = userId !== null ? { user_id: userId } : { session_id: session.id };
    const used = await this.#store.periodUsage(session.tenant_id, scope, fromDay);
    const cost = used.cost_micro_usd + (running?.cost_micro_usd ?? 0);
    const tokens =
      used.input_tokens + used.output_tokens + (running ? running.input_tokens + running.output_tokens : 0);
    const over =
      budget.max_cost_micro_usd !== null && cost >= budget.max_cost_micro_usd
        ? { limit: { max_cost_usd: budget.max_cost_micro_usd / 1e6 }, used: { cost_usd: cost / 1e6 } }
        : budget.max_tokens !== null && tokens >= budget.max_tokens
          ? { limit: { max_tokens: budget.max_tokens }, used: { tokens } }
          : null;
    if (!over) return;
    const retryAfter = Math.max(1, Math.ceil((endsAt.getTime() - now.getTime()) / 1000));
    throw new AppError('budget_exceeded', undefined, {
      headers: { 'retry-after': String(retryAfter) },
      context: { period: budget.period, ...over, agent_id: agent.id, ...(userId ? { user_id: userId } : {}) },
    });
  }

  async #budget(tenantId: string, userId: string | null): Promise<Budget | null> {
    const key = `${tenantId}\0${userId ?? ''}`;
    const cached = this.#cache.get(key);
    if (cached && performance.now() - cached.at < BUDGET_CACHE_MS) return cached.budget;
    const budget = await this.#store.getBudget(tenantId, userId);
    // Bounded: a process sees at most the budgets of the users it serves in a few seconds.
    if (this.#cache.size >= 10_000) this.#cache.clear();
    this.#cache.set(key, { budget, at: performance.now() });
    return budget;
  }
}

/** Budgets.check for a model call of a turn, counting a refusal by agent. */
export async function checkBudget(
  deps: Pick<OperationDeps, 'store' | 'metrics'>,
  session: BudgetedSession,
  agent: AgentConfig,
  running?: MessageUsage,
): Promise<void> {
  try {
    await budgetsOf(deps.store).check(session, agent, running);
  } catch (err) {
    if (err instanceof AppError && err.code === 'budget_exceeded')
      deps.metrics.budgetRefusals.inc({ agent: agent.id });
    throw err;
  }
}

const byStore = new WeakMap<Store, Budgets>();

/** The process's budgets over `store`: one cache shared by the turns and the routes that change budgets. */
export function budgetsOf(store: Store): Budgets {
  let budgets = byStore.get(store);
  if (!budgets) {
    budgets = new Budgets(store);
    byStore.set(store, budgets);
  }
  return budgets;
}

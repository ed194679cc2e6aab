// Usage and budgets (server-side family): the tenant's usage report grouped by day, agent, user or session
// (a key scoped to some agents sees only theirs), and the budgets of end-users and the tenant's default.
// Totals are exact integers; costs are kept in millionths of a dollar and shown in dollars beside.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  authErrors,
  budgetFields,
  budgetSchema,
  pageOf,
  usageQuery,
  usageRowSchema,
  userParams,
} from '#schemas';
import { budgetsOf } from '../../actors/budgets.ts';
import { AppError } from '../../errors.ts';
import { type Budget, noTotals, type Store, type UsageTotals } from '../../store/store.ts';
import { tenantOf } from '../auth/api-key.ts';

/** Totals as answered: the exact micro-dollars and the same in dollars. */
export const usageView = <T extends UsageTotals>(totals: T) => ({
  ...totals,
  cost_usd: totals.cost_micro_usd / 1e6,
});

/** Each record with its usage from `totals` (none counted: zeros). */
export const withUsage = <T extends { id: string }>(records: T[], totals: Map<string, UsageTotals>) =>
  records.map((r) => ({ ...r, usage: usageView(totals.get(r.id) ?? noTotals()) }));

const budgetView = (b: Budget) => ({
  user_id: b.user_id,
  period: b.period,
  max_cost_usd: b.max_cost_micro_usd === null ? null : b.max_cost_micro_usd / 1e6,
  max_tokens: b.max_tokens,
  created_at: b.created_at,
  updated_at: b.updated_at,
});

const budgetNotFound = (userId: string | null) =>
  new AppError('budget_not_found', undefined, { context: { user_id: userId } });

export const usageRoutes: FastifyPluginAsyncZod<{ store: Store }> = async (app, { store }) => {
  const budgets = budgetsOf(store);

  app.get(
    '/v1/agents/usage',
    {
      schema: {
        tags: ['usage'],
        summary: "The tenant's usage by UTC day, agent, user or session",
        querystring: usageQuery,
        response: { 200: pageOf(usageRowSchema), ...authErrors },
      },
    },
    async (request) => {
      const { from, to, group_by, agent_id, user_id, limit, offset } = request.query;
      const today = new Date().toISOString().slice(0, 10);
      const agents = request.apiKey?.agents ?? [];
      const page = await store.usageReport(tenantOf(request), {
        from: from ?? `${today.slice(0, 8)}01`,
        to: to ?? today,
        group_by,
        ...(agent_id !== undefined ? { agent_id } : {}),
        ...(user_id !== undefined ? { user_id } : {}),
        ...(agents.includes('*') ? {} : { agent_ids: agents }),
        limit,
        offset,
      });
      return { items: page.items.map(usageView), next_offset: page.next_offset };
    },
  );

  /** The budget routes of one subject: a user's (checked to exist) or the tenant's default (null). */
  function budgetRoutes(
    path: string,
    subject: (params: unknown, tenantId: string) => Promise<string | null>,
  ) {
    const params = path.includes(':user_id') ? userParams : z.object({});
    const errors = authErrors;
    app.put(
      path,
      {
        schema: {
          tags: ['usage'],
          summary: 'Set the budget (replacing one set before)',
          params,
          body: budgetFields,
          response: { 200: budgetSchema, ...errors },
        },
      },
      async (request) => {
        const tenantId = tenantOf(request);
        const userId = await subject(request.params, tenantId);
        const { period, max_cost_usd, max_tokens } = request.body;
        const stored = await store.putBudget(tenantId, userId, {
          period,
          max_cost_micro_usd: max_cost_usd == null ? null : Math.round(max_cost_usd * 1e6),
          max_tokens: max_tokens ?? null,
        });
        budgets.changed(tenantId, userId);
        return budgetView(stored);
      },
    );
    app.get(
      path,
      {
        schema: {
          tags: ['usage'],
          summary: 'Read the budget',
          params,
          response: { 200: budgetSchema, ...errors },
        },
      },
      async (request) => {
        const tenantId = tenantOf(request);
        const userId = await subject(request.params, tenantId);
        const budget = await store.getBudget(tenantId, userId);
        if (!budget) throw budgetNotFound(userId);
        return budgetView(budget);
      },
    );
    app.delete(
      path,
      {
        schema: {
          tags: ['usage'],
          summary: 'Remove the budget',
          params,
          response: { 204: z.null().meta({ description: 'Removed' }), ...errors },
        },
      },
      async (request, reply) => {
        const tenantId = tenantOf(request);
        const userId = await subject(request.params, tenantId);
        if (!(await store.deleteBudget(tenantId, userId))) throw budgetNotFound(userId);
        budgets.changed(tenantId, userId);
        return reply.code(204).send(null);
      },
    );
  }

  budgetRoutes('/v1/agents/users/:user_id/budget', async (params, tenantId) => {
    const { user_id } = params as { user_id: string };
    // A deleted user has no budget to set or read: 404, as the user itself.
    if (!(await store.getUser(tenantId, user_id)))
      throw new AppError('user_not_found', undefined, { context: { user_id } });
    return user_id;
  });
  budgetRoutes('/v1/agents/budgets/default', async () => null);
};

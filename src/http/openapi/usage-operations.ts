// The OpenAPI descriptions of the usage report and of budgets (docs/guides/usage.md).
import { A, apiKey, type OperationDoc } from './operation-parts.ts';

const budget = (who: string, path: string, ids: [string, string, string]): Record<string, OperationDoc> => {
  const user = path.includes('{user_id}');
  const missing = user ? (['user_not_found', 'budget_not_found'] as const) : (['budget_not_found'] as const);
  return {
    [`PUT ${A}${path}`]: {
      id: ids[0],
      description: `Sets ${who} (replacing one set before): \`period\` \`day\` or \`month\` (UTC), and \`max_cost_usd\` (from the agents' \`pricing\`), \`max_tokens\` (input plus output) or both. Checked before each model call against the usage committed in the current period: once spent, a send is 429 \`budget_exceeded\` with \`Retry-After\` to the period's end, and a turn between tool steps ends with \`stop_reason: "budget"\`.${user ? ' A deleted user is 404 `user_not_found`.' : ''}`,
      ok: 'The budget as stored',
      errors: [...apiKey, ...(user ? (['user_not_found'] as const) : [])],
    },
    [`GET ${A}${path}`]: {
      id: ids[1],
      description: `Reads ${who}; 404 \`budget_not_found\` when none is set.`,
      ok: 'The budget',
      errors: [...apiKey, ...missing],
    },
    [`DELETE ${A}${path}`]: {
      id: ids[2],
      description: `Removes ${who}; 404 \`budget_not_found\` when none is set.`,
      ok: 'Removed',
      errors: [...apiKey, ...missing],
    },
  };
};

export const usageOperationDocs: Record<string, OperationDoc> = {
  [`GET ${A}/usage`]: {
    id: 'getUsage',
    description:
      "The tenant's usage from `from` to `to` (UTC days, both included; by default this month so far), one row per `group_by` key (`day`, `agent`, `user` or `session`; `null` is the sessions without a user), ordered by key and paged. Rows count the turns the model answered, their tokens and their cost (`cost_micro_usd` exact, `cost_usd` the same in dollars); they agree with the `usage` of the stored replies. A key scoped to some agents sees only theirs.",
    ok: 'A page of usage rows',
    errors: apiKey,
  },
  ...budget("the end-user's budget", '/users/{user_id}/budget', [
    'putUserBudget',
    'getUserBudget',
    'deleteUserBudget',
  ]),
  ...budget(
    "the tenant's default budget, which holds each end-user without a budget of their own and each session without a user",
    '/budgets/default',
    ['putDefaultBudget', 'getDefaultBudget', 'deleteDefaultBudget'],
  ),
};

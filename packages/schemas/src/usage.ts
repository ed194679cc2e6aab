// Schemas of usage and budgets: the totals a Session and a User carry, the usage report's query and rows,
// and a budget as set and as answered. Token counts and costs in millionths of a dollar are exact integers;
// `cost_usd` repeats the cost in dollars for reading.
import { z } from 'zod';
import { pageQuery, timestamp } from './common.ts';

const counts = {
  turns: z.number().int().meta({ description: 'Turns the model answered' }),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cached_input_tokens: z.number().int(),
  reasoning_tokens: z.number().int(),
  cost_micro_usd: z.number().int().meta({ description: 'In millionths of a US dollar (exact)' }),
  cost_usd: z.number().meta({ description: 'The same cost in US dollars' }),
};

const totalsExample = {
  turns: 3,
  input_tokens: 1236,
  output_tokens: 42,
  cached_input_tokens: 0,
  reasoning_tokens: 0,
  cost_micro_usd: 561,
  cost_usd: 0.000561,
};

export const usageTotalsSchema = z.object(counts).meta({ id: 'UsageTotals', examples: [totalsExample] });

/** A UTC day, as the report's bounds and its `day` keys write it. */
const day = z.iso.date().meta({ description: 'A UTC day, YYYY-MM-DD' });

/** GET /v1/agents/usage's query: the days counted, both included, and how rows are grouped. */
export const usageQuery = z.object({
  from: day.optional().meta({ description: 'The first day counted; default the first of this month' }),
  to: day.optional().meta({ description: 'The last day counted (included); default today' }),
  group_by: z.enum(['day', 'agent', 'user', 'session']).default('day'),
  agent_id: z.string().max(64).optional(),
  user_id: z.string().max(200).optional(),
  ...pageQuery,
});

export const usageRowSchema = z
  .object({
    key: z.string().nullable().meta({
      description: 'The day, agent id, user id or session id; null for sessions without a user',
    }),
    ...counts,
  })
  .meta({ id: 'UsageRow', examples: [{ key: '2026-03-02', ...totalsExample }] });

export const budgetPeriod = z.enum(['day', 'month']);

/** At most a million dollars or a quadrillion tokens a period: a larger figure is a mistake. */
export const budgetFields = z
  .strictObject({
    period: budgetPeriod.meta({ description: 'The UTC day or calendar month the limits apply to' }),
    max_cost_usd: z.number().min(0).max(1_000_000).nullable().optional(),
    max_tokens: z.number().int().min(0).max(1e15).nullable().optional(),
  })
  .refine((b) => (b.max_cost_usd ?? null) !== null || (b.max_tokens ?? null) !== null, {
    message: 'Give max_cost_usd, max_tokens or both',
    path: ['max_cost_usd'],
  })
  .meta({ examples: [{ period: 'month', max_cost_usd: 5 }] });

export const budgetSchema = z
  .object({
    user_id: z.string().nullable().meta({ description: "Null for the tenant's default" }),
    period: budgetPeriod,
    max_cost_usd: z.number().nullable(),
    max_tokens: z.number().int().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({
    id: 'Budget',
    examples: [
      {
        user_id: 'usr_kWnxoc3Du91plZkKkpd5N',
        period: 'month',
        max_cost_usd: 5,
        max_tokens: null,
        created_at: '2026-03-02T09:14:07.512Z',
        updated_at: '2026-03-02T09:14:07.512Z',
      },
    ],
  });

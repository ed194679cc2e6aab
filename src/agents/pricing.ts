// What a model call costs: an agent's `pricing` (US dollars per million tokens) applied to the usage its
// provider reported, in millionths of a dollar, so that every sum stays an exact integer. A dollar per
// million tokens is a micro-dollar per token: the prices multiply the token counts as they are.
import { z } from 'zod';
import { fullUsage, type MessageUsage } from '../store/store.ts';
import type { Usage } from './provider.ts';

/** USD per million tokens, at most $10,000 (no model costs near it; a larger figure is a typo). */
const price = z.number().min(0).max(10_000);

export const pricingSchema = z.strictObject({
  input_per_mtok: price,
  output_per_mtok: price,
  /** Cached input tokens; absent, they cost as other input tokens. */
  cached_input_per_mtok: price.optional(),
});

export type Pricing = z.infer<typeof pricingSchema>;

/** A model call's usage as it is kept: the model, the counts (0 where the provider said nothing), the cost. */
export function callUsage(
  agent: { model?: string | undefined; provider: string; pricing?: Pricing | undefined },
  usage: Usage,
): MessageUsage {
  const cached = Math.min(usage.cached_input_tokens ?? 0, usage.input_tokens);
  const pricing = agent.pricing;
  const cost = pricing
    ? (usage.input_tokens - cached) * pricing.input_per_mtok +
      cached * (pricing.cached_input_per_mtok ?? pricing.input_per_mtok) +
      usage.output_tokens * pricing.output_per_mtok
    : 0;
  return fullUsage({
    ...usage,
    cached_input_tokens: cached,
    model: agent.model ?? agent.provider,
    cost_micro_usd: Math.round(cost),
  });
}

/** No model call yet. */
export const noUsage = (): MessageUsage => fullUsage({ input_tokens: 0, output_tokens: 0 });

/** Adds `more` (a call's or a step's usage) to `total`, in place; the model is the latest one named. */
export function addUsage(total: MessageUsage, more: MessageUsage | null): void {
  if (!more) return;
  total.input_tokens += more.input_tokens;
  total.output_tokens += more.output_tokens;
  total.cached_input_tokens += more.cached_input_tokens;
  total.reasoning_tokens += more.reasoning_tokens;
  total.cost_micro_usd += more.cost_micro_usd;
  total.model = more.model ?? total.model;
}

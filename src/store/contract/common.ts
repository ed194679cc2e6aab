// What the records of every resource share: JSON objects, pages of a listing, and what a model call cost.
export type JsonObject = { [key: string]: unknown };

export interface PageRequest {
  limit: number;
  offset: number;
}

/** `next_offset` is null as soon as no item follows the page. */
export interface Page<T> {
  items: T[];
  next_offset: number | null;
}

/**
 * What model calls cost, as their provider reported them: kept on a reply (the turn's calls summed) and on a
 * tool step (its call). Counts a provider does not give are 0; cost is in millionths of a US dollar.
 */
export interface MessageUsage {
  input_tokens: number;
  output_tokens: number;
  /** Of the input tokens, those the provider read from its prompt cache. */
  cached_input_tokens: number;
  reasoning_tokens: number;
  /** The model that answered; null on usage stored before the model was kept. */
  model: string | null;
  cost_micro_usd: number;
}

/** Usage as a write may give it: the token counts, the rest 0 (or null) when absent. */
export type NewUsage = Pick<MessageUsage, 'input_tokens' | 'output_tokens'> & Partial<MessageUsage>;

/** The usage a record keeps of `u`: every field present. */
export const fullUsage = (u: NewUsage): MessageUsage => ({
  input_tokens: u.input_tokens,
  output_tokens: u.output_tokens,
  cached_input_tokens: u.cached_input_tokens ?? 0,
  reasoning_tokens: u.reasoning_tokens ?? 0,
  model: u.model ?? null,
  cost_micro_usd: u.cost_micro_usd ?? 0,
});

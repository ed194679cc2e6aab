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

/** What one model call cost, as its provider reported it: kept on a reply and on a tool step. */
export interface MessageUsage {
  input_tokens: number;
  output_tokens: number;
}

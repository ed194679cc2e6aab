// @parley/client: the typed client of Parley's two HTTP families (docs/internals/decisions.md#front-end-kit).
// ParleyClient speaks the server-side family with an API key; ParleyConversation the public one with a
// session token. Both throw ParleyError, retry 429/503 after Retry-After, and stream turns as TurnStreams
// that resume dropped connections.
export { ConversationEvents, type FollowOptions } from './conversation-events.ts';
export { ParleyError, type ParleyErrorInit } from './errors.ts';
export { newIdempotencyKey } from './idempotency.ts';
export { ParleyClient, type ParleyClientOptions } from './parley-client.ts';
export { ParleyConversation, type ParleyConversationOptions } from './parley-conversation.ts';
export type { ResumeOptions, SendOptions } from './send.ts';
export type { Fetch } from './transport.ts';
export type { CallIds, DecideOptions } from './turn-actions.ts';
export { type AnyTurnEvent, type TurnSource, TurnStream, type TurnStreamOptions } from './turn-stream.ts';
export type * from './types.ts';
export type {
  Budget,
  BudgetFields,
  UsageApi,
  UsagePage,
  UsageQuery,
  UsageRow,
  UsageTotals,
} from './usage.ts';

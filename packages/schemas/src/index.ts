// @parley/schemas: every schema of Parley's HTTP API in zod, the one contract of the wire. The server
// validates requests and describes its OpenAPI document with them; @parley/client takes its types from them.
export * from './agents.ts';
export * from './approvals.ts';
export * from './chat.ts';
export * from './common.ts';
export * from './conversation-events.ts';
export * from './conversations.ts';
export * from './enums.ts';
export * from './files.ts';
export * from './messages.ts';
export * from './open-conversations.ts';
export * from './responses.ts';
export * from './runs.ts';
export * from './sessions.ts';
export * from './turn-events.ts';
export * from './usage.ts';
export * from './users.ts';
export * from './webhooks.ts';

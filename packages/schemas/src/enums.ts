// The enumerations of the wire format: one list each, read by the schemas, the session machine and the stores
// alike (a module without imports, so that a store or the CLI gets them without loading zod or XState).

/** The statuses a session can have; `closed` and `expired` are final. */
export const SESSION_STATUSES = ['active', 'closed', 'expired'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/**
 * Why a model's reply ended; `cancelled` when its turn was cancelled (the text so far is the reply), `budget`
 * when its end-user's budget ran out between two of its steps.
 */
export const STOP_REASONS = [
  'end',
  'max_tokens',
  'max_steps',
  'content_filter',
  'error',
  'cancelled',
  'budget',
] as const;
export type StopReason = (typeof STOP_REASONS)[number];

/** The events a webhook endpoint can subscribe to. */
export const WEBHOOK_EVENT_TYPES = [
  'session.closed',
  'session.expired',
  'turn.completed',
  'turn.failed',
  'turn.awaiting_approval',
  'session.handoff_requested',
  'session.handed_back',
  'message.created',
  'feedback.submitted',
  'user.deleted',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

// The statuses a session can have: one list, read by the machine, the stores and the HTTP schemas alike
// (its own module, so that a store or the CLI gets it without loading XState).
export const SESSION_STATUSES = ['active', 'closed', 'expired'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

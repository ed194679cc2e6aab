// Agent ids appear in paths under /v1/agents/…, so they may not collide with that family's own segments.
import { z } from 'zod';

export const reservedAgentIds: readonly string[] = ['users', 'sessions', 'files', 'conversations'];

export const agentIdSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,63}$/,
    'Agent ids are 1-64 of a-z, 0-9, _ and -, starting with a letter or digit',
  )
  .refine((id) => !reservedAgentIds.includes(id), 'This word is reserved for a path segment');

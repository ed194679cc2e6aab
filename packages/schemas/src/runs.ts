// Schemas of a run: an agent run once on 1 to 10 messages, in a new session that stays active.
import { z } from 'zod';
import { pausedExample, pausedReply } from './approvals.ts';
import { metadataSchema } from './common.ts';
import { messageExample, messageRequest, messageSchema } from './messages.ts';
import { contextSchema, sessionExample, userLookup } from './sessions.ts';
import { userExample } from './users.ts';

export const runRequest = z
  .strictObject({
    messages: z.array(messageRequest).min(1).max(10),
    user: userLookup.nullable().optional(),
    context: contextSchema.nullable().optional(),
    metadata: metadataSchema.nullable().optional(),
    persist: z.boolean().default(true),
  })
  .meta({
    id: 'RunRequest',
    examples: [
      {
        messages: [{ content: 'What are your opening hours?' }],
        user: { reference: userExample.reference },
        context: { plan: 'pro' },
      },
    ],
  });

/** A run whose turn waits for decisions (a send's 202 answer), with the session it created. */
export const runPaused = pausedReply
  .extend({ session_id: z.string() })
  .meta({ id: 'RunPaused', examples: [{ ...pausedExample, session_id: sessionExample.id }] });

export const runResult = z
  .object({ agent_message: messageSchema, session_id: z.string() })
  .meta({ id: 'RunResult', examples: [{ agent_message: messageExample, session_id: sessionExample.id }] });

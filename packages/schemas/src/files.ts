// Schemas of the File resource: the record as the tenant pool shows it, listing them, and the narrower view a
// front-end gets of its conversation's files (no metadata, no session).
import { z } from 'zod';
import { dateTimeQuery, pageQuery, timestamp } from './common.ts';

/** A pool file with the metadata it was uploaded with. */
const fileExample = {
  id: 'file_ZCVmpmayeBdHuO1XVasJi',
  name: 'invoice-1042.pdf',
  size: 48213,
  mime_type: 'application/pdf',
  created_at: '2026-03-02T09:14:30.208Z',
  metadata: { crm_ticket: 'T-1042' },
  session_id: null,
};

/** A file uploaded in the example conversation, which the example messages show. */
export const conversationFileExample = {
  id: 'file_yesRDxY1MdzwnU0RmvsDw',
  name: 'screenshot.png',
  size: 183402,
  mime_type: 'image/png',
  created_at: '2026-03-02T09:15:40.733Z',
};

export const fileSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    size: z.number().int(),
    mime_type: z.string(),
    created_at: timestamp,
    metadata: z.record(z.string(), z.unknown()),
    session_id: z.string().nullable().meta({ description: 'The conversation it was uploaded in, if any' }),
  })
  .meta({ id: 'File', examples: [fileExample] });

export const fileParams = z.object({ file_id: z.string() });

export const conversationFile = fileSchema
  .omit({ metadata: true, session_id: true })
  .meta({ id: 'ConversationFile', examples: [conversationFileExample] });

/** GET /v1/agents/files's query. */
export const fileListQuery = z.object({
  name: z.string().max(200).optional().meta({ description: 'Case-insensitive prefix of the name' }),
  mime_type: z.string().max(255).optional(),
  created_after: dateTimeQuery.optional().meta({ description: 'Exclusive lower bound' }),
  created_before: dateTimeQuery.optional().meta({ description: 'Exclusive upper bound' }),
  session_id: z
    .string()
    .max(200)
    .optional()
    .meta({ description: 'Only the files uploaded in this conversation' }),
  ...pageQuery,
});

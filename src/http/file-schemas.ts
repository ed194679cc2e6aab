// Schemas of the File resource: the record as the tenant pool shows it, and the narrower view a front-end
// gets of its conversation's files (no metadata, no session).
import { z } from 'zod';
import type { StoredFile } from '../store/store.ts';
import { timestamp } from './schemas.ts';

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

export const toConversationFile = ({ metadata: _m, session_id: _s, ...file }: StoredFile) => file;

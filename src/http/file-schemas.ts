// Schemas of the File resource: the record as the tenant pool shows it, and the narrower view a front-end
// gets of its conversation's files (no metadata, no session).
import { z } from 'zod';
import type { StoredFile } from '../store/store.ts';
import { timestamp } from './schemas.ts';

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
  .meta({ id: 'File' });

export const fileParams = z.object({ file_id: z.string() });

export const conversationFile = fileSchema
  .omit({ metadata: true, session_id: true })
  .meta({ id: 'ConversationFile' });

export const toConversationFile = ({ metadata: _m, session_id: _s, ...file }: StoredFile) => file;

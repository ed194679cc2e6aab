// Schemas of the User resource: the fields a request sets, the resource as answered, and the `reference`
// rule that session creation's user lookup shares.
import { z } from 'zod';
import { jsonObject, KiB, metadataSchema, text, timestamp } from './schemas.ts';

export const userReference = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[a-zA-Z0-9_\-:.]+$/, 'Only letters, digits, _, -, : and . are allowed');

export const userFields = z.strictObject({
  reference: userReference.nullable().optional(),
  name: text().min(1).max(200).nullable().optional(),
  email: z.email().max(254).nullable().optional(),
  phone: text().min(1).max(32).nullable().optional(),
  metadata: metadataSchema.nullable().optional(),
  info: jsonObject(8 * KiB)
    .nullable()
    .optional(),
});

export const userSchema = z
  .object({
    id: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
    reference: z.string().nullable(),
    name: z.string().nullable(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    info: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'User' });

export const userParams = z.object({ user_id: z.string() });

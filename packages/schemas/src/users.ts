// Schemas of the User resource: the fields a request sets, the resource as answered, listing them, and the
// `reference` rule that session creation's user lookup shares.
import { z } from 'zod';
import { jsonObject, KiB, metadataSchema, pageQuery, text, timestamp } from './common.ts';
import { usageTotalsSchema } from './usage.ts';

export const userReference = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[a-zA-Z0-9_\-:.]+$/, 'Only letters, digits, _, -, : and . are allowed');

/**
 * zod's default email rule with each domain label also not ending in `-` (it accepted `a@b-.com`), so that
 * the pattern the document shows is no looser than the `email` format it declares.
 */
export const emailPattern =
  /^(?:[A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,}$/;

export const userFields = z
  .strictObject({
    reference: userReference.nullable().optional(),
    name: text().min(1).max(200).nullable().optional(),
    email: z.email({ pattern: emailPattern }).max(254).nullable().optional(),
    phone: text().min(1).max(32).nullable().optional(),
    metadata: metadataSchema.nullable().optional(),
    info: jsonObject(8 * KiB)
      .nullable()
      .optional(),
  })
  .meta({
    examples: [
      { reference: 'crm-42', name: 'Ada Lovelace', email: 'ada@example.com', info: { plan: 'pro' } },
    ],
  });

/** The example User, which the other resources' examples name. */
export const userExample = {
  id: 'usr_kWnxoc3Du91plZkKkpd5N',
  created_at: '2026-03-02T09:14:07.512Z',
  updated_at: '2026-03-02T09:14:07.512Z',
  reference: 'crm-42',
  name: 'Ada Lovelace',
  email: 'ada@example.com',
  phone: null,
  metadata: {},
  info: { plan: 'pro' },
};

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
    usage: usageTotalsSchema.optional().meta({
      description: "What the model calls of the user's sessions cost",
    }),
  })
  .meta({ id: 'User', examples: [userExample] });

export const userParams = z.object({ user_id: z.string() });

/** GET /v1/agents/users's query. */
export const userListQuery = z.object({
  reference: z.string().max(128).optional(),
  email: z.string().max(254).optional(),
  ...pageQuery,
});

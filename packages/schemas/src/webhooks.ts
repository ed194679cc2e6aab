// Schemas of the Webhook resource: registering an endpoint, the endpoint as answered (its secret only in the
// 201), and a delivery.
import { z } from 'zod';
import { timestamp, wellFormed } from './common.ts';
import { WEBHOOK_EVENT_TYPES } from './enums.ts';

export const webhookEventType = z.enum(WEBHOOK_EVENT_TYPES);

/** `whsec_` + base64 of 24 to 64 bytes, as Standard Webhooks libraries read it. */
export const webhookSecret = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/, 'Must be whsec_ followed by base64 of 24 to 64 bytes');

export const webhookCreate = z
  .strictObject({
    // Well-formed first: a lone surrogate would be stored as U+FFFD, another URL than the one answered.
    url: z
      .url({ protocol: /^https?$/, error: 'Must be an http or https URL' })
      .max(2048)
      .check(wellFormed)
      .meta({
        description:
          'Where deliveries are POSTed. Private and loopback addresses are refused unless the server allows them.',
      }),
    events: z
      .array(webhookEventType)
      .min(1)
      .max(WEBHOOK_EVENT_TYPES.length)
      .refine((events) => new Set(events).size === events.length, {
        message: 'Each event at most once',
        params: { type: 'unique' },
      }),
    secret: webhookSecret.optional().meta({
      description: 'The signing secret; generated when left out. Shown only in this answer.',
    }),
  })
  .meta({
    examples: [{ url: 'https://crm.example.com/parley', events: ['session.closed', 'feedback.submitted'] }],
  });

const webhookExample = {
  id: 'wh_TtF0SvGsiXKUFgWV3sG4e',
  url: 'https://crm.example.com/parley',
  events: ['session.closed', 'feedback.submitted'],
  created_at: '2026-03-01T16:02:11.349Z',
};

export const webhookSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(webhookEventType),
    created_at: timestamp,
  })
  .meta({ id: 'Webhook', examples: [webhookExample] });

export const createdWebhookSchema = webhookSchema
  .extend({
    secret: z.string().meta({ description: 'Verifies the webhook-signature header; shown only here.' }),
  })
  .meta({
    id: 'CreatedWebhook',
    examples: [{ ...webhookExample, secret: 'whsec_mteR+UAhK6OcXWunMJsyKdTk0vxirlNM9M4dnwJ+CGE=' }],
  });

export const webhookDeliverySchema = z
  .object({
    id: z.string(),
    event_id: z.string().meta({ description: 'The webhook-id header of every attempt' }),
    type: webhookEventType,
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int(),
    last_status_code: z.number().int().nullable(),
    error: z.string().nullable().meta({
      description:
        "Why it is not delivered: what its last attempt got instead of an answer (`timeout`, `private_address`, a connection error's code such as `ECONNREFUSED`), `outbox_full` when it was never sent because the tenant's outbox was past its cap, or `endpoint_failing` when it was given up unsent because its endpoint failed every attempt for longer than the retry schedule; null once an attempt was answered",
    }),
    last_attempt_at: timestamp.nullable(),
    next_attempt_at: timestamp.nullable(),
    created_at: timestamp,
  })
  .meta({
    id: 'WebhookDelivery',
    examples: [
      {
        id: 'whd_yVLcGGB6HarEmZG48BcEL',
        event_id: 'evt_at07KWb8zBXaJTKtOp2HZ',
        type: 'session.closed',
        status: 'delivered',
        attempts: 1,
        last_status_code: 200,
        error: null,
        last_attempt_at: '2026-03-02T09:20:05.211Z',
        next_attempt_at: null,
        created_at: '2026-03-02T09:20:05.016Z',
      },
    ],
  });

export const webhookParams = z.object({ webhook_id: z.string() });

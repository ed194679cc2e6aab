// Rows and records of webhook endpoints and their deliveries, for both stores (as rows.ts is for the rest).
// An endpoint's secret is written here and read only into a due delivery: no listed record carries it.
import { newId } from '../ids.ts';
import { integer, oneOf, type Row, text, textOrNull } from './rows.ts';
import { instant } from './sql.ts';
import {
  type DueWebhookDelivery,
  type NewWebhook,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_OUTBOX_FULL,
  type Webhook,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type WebhookEvent,
  type WebhookEventType,
} from './store.ts';

const deliveryStatuses: readonly WebhookDeliveryStatus[] = ['pending', 'delivered', 'failed'];

const isEventType = (value: unknown): value is WebhookEventType =>
  WEBHOOK_EVENT_TYPES.some((type) => type === value);

/** The subscribed types; one a newer version wrote and this one does not know is left out, not an error. */
function eventTypes(r: Row): WebhookEventType[] {
  const parsed: unknown = JSON.parse(text(r, 'events'));
  if (!Array.isArray(parsed)) throw new TypeError('Column events holds no array');
  return parsed.filter(isEventType);
}

const integerOrNull = (r: Row, column: string) =>
  r[column] === null || r[column] === undefined ? null : integer(r, column);

export const toWebhook = (r: Row): Webhook => ({
  id: text(r, 'id'),
  url: text(r, 'url'),
  events: eventTypes(r),
  created_at: text(r, 'created_at'),
});

export const toWebhookDelivery = (r: Row): WebhookDelivery => ({
  id: text(r, 'id'),
  webhook_id: text(r, 'webhook_id'),
  event_id: text(r, 'event_id'),
  type: oneOf(r, 'type', WEBHOOK_EVENT_TYPES),
  status: oneOf(r, 'status', deliveryStatuses),
  attempts: integer(r, 'attempts'),
  last_status_code: integerOrNull(r, 'last_status_code'),
  error: textOrNull(r, 'error'),
  last_attempt_at: textOrNull(r, 'last_attempt_at'),
  next_attempt_at: textOrNull(r, 'next_attempt_at'),
  created_at: text(r, 'created_at'),
});

export const toDueWebhookDelivery = (r: Row): DueWebhookDelivery => ({
  id: text(r, 'id'),
  tenant_id: text(r, 'tenant_id'),
  webhook_id: text(r, 'webhook_id'),
  event_id: text(r, 'event_id'),
  type: oneOf(r, 'type', WEBHOOK_EVENT_TYPES),
  ordering_key: text(r, 'ordering_key'),
  shard: integer(r, 'shard'),
  attempts: integer(r, 'attempts'),
  next_attempt_at: text(r, 'next_attempt_at'),
  url: text(r, 'url'),
  secret: text(r, 'secret'),
  created_at: text(r, 'created_at'),
  endpoint_failures: integer(r, 'endpoint_failures'),
  endpoint_retry_at: textOrNull(r, 'endpoint_retry_at'),
});

export const webhookRow = (tenantId: string, webhook: NewWebhook, at: string) => ({
  id: webhook.id,
  tenant_id: tenantId,
  url: webhook.url,
  events: JSON.stringify(webhook.events),
  secret: webhook.secret,
  created_at: at,
});

/** The event's payload, stored once for all its pending deliveries. */
export const eventRow = (event: WebhookEvent) => ({
  id: event.id,
  tenant_id: event.tenant_id,
  payload: event.payload,
  created_at: instant(event.created_at),
});

/**
 * A new delivery of `event` to one endpoint. Pending and due at once (or once its endpoint's backoff ends,
 * `heldUntil`), or blocked (no due time) when it queues behind a pending delivery of its endpoint and key (see
 * webhook-sql.ts); or refused, when its tenant's outbox is full: failed at once, never sent. Instants as
 * stored, so that they compare as text.
 */
export const deliveryRow = (
  event: WebhookEvent,
  webhookId: string,
  bytes: number,
  state: 'due' | 'blocked' | 'refused',
  heldUntil: string | null = null,
) => {
  const createdAt = instant(event.created_at);
  const held = heldUntil === null ? null : instant(heldUntil);
  const dueAt = held !== null && held > createdAt ? held : createdAt;
  return {
    id: newId('whd'),
    tenant_id: event.tenant_id,
    webhook_id: webhookId,
    event_id: event.id,
    type: event.type,
    ordering_key: event.ordering_key,
    shard: event.shard,
    // What it counts in its tenant's outbox while pending; a refused one counts nothing.
    bytes: state === 'refused' ? 0 : bytes,
    status: state === 'refused' ? 'failed' : 'pending',
    attempts: 0,
    last_status_code: null,
    error: state === 'refused' ? WEBHOOK_OUTBOX_FULL : null,
    last_attempt_at: null,
    next_attempt_at: state === 'due' ? dueAt : null,
    created_at: createdAt,
  };
};

// The webhook outbox's bound, for both stores (docs/internals/decisions.md#webhooks): each tenant's pending
// deliveries and their bytes are counted in webhook_outbox, in stripes by shard, and a new delivery is
// queued pending only while its tenant stays within its caps; past them it is stored refused. The caps and
// who hears of refusals are set per store (configureWebhookOutbox) and kept here by the store's handle, so
// that the functions queueing events inside a change's transaction find them.
import type { WebhookOutboxSettings, WebhookOutboxUsage } from './store.ts';

/** The stripes a tenant's counters are split in: a commit updates its shard's, and sums all to check. */
export const OUTBOX_STRIPES = 16;
export const stripeOf = (shard: number) => shard % OUTBOX_STRIPES;

const UNBOUNDED: WebhookOutboxSettings = {
  maxPendingDeliveries: Number.POSITIVE_INFINITY,
  maxPendingBytes: Number.POSITIVE_INFINITY,
};

const settings = new WeakMap<object, WebhookOutboxSettings>();

/** Sets the caps of the store whose handle (its connection, or pool) this is. */
export function configureOutbox(handle: object, value: WebhookOutboxSettings): void {
  settings.set(handle, value);
}

/** The caps of the store whose handle this is: none until configured. */
export const outboxOf = (handle: object): WebhookOutboxSettings => settings.get(handle) ?? UNBOUNDED;

/** How many of `wanted` deliveries of `bytes` each still fit in what the tenant has pending. */
export function deliveriesThatFit(
  limits: WebhookOutboxSettings,
  pending: WebhookOutboxUsage,
  wanted: number,
  bytes: number,
): number {
  const byCount = limits.maxPendingDeliveries - pending.pending_deliveries;
  const byBytes = bytes > 0 ? Math.floor((limits.maxPendingBytes - pending.pending_bytes) / bytes) : wanted;
  return Math.max(0, Math.min(wanted, byCount, byBytes));
}

/** What a queueing call did: deliveries queued pending, and deliveries stored refused. */
export interface QueuedDeliveries {
  queued: number;
  refused: number;
  /** Pending deliveries and bytes added, by tenant and stripe (`tenant\u0000stripe`), applied last. */
  added: Map<string, { tenantId: string; stripe: number; deliveries: number; bytes: number }>;
}

export const nothingQueued = (): QueuedDeliveries => ({ queued: 0, refused: 0, added: new Map() });

/** What the tenant has pending, from outboxUsage's row (none when it never had any). */
export const usageOf = (r: Record<string, unknown> | undefined): WebhookOutboxUsage => ({
  pending_deliveries: Number(r?.pending_deliveries ?? 0),
  pending_bytes: Number(r?.pending_bytes ?? 0),
});

/**
 * Counts what queueing `event` did: `room` of its `wanted` deliveries of `bytes` each queued pending (added to
 * its tenant's stripe and to `usage`, what the tenant has pending as the queueing call goes), the rest refused.
 */
export function countQueued(
  q: QueuedDeliveries,
  usage: Map<string, WebhookOutboxUsage>,
  event: { tenant_id: string; shard: number },
  pending: WebhookOutboxUsage,
  counts: { wanted: number; room: number; bytes: number },
): void {
  const { wanted, room, bytes } = counts;
  const tenantId = event.tenant_id;
  const stripe = stripeOf(event.shard);
  const key = `${tenantId}\u0000${stripe}`;
  const entry = q.added.get(key) ?? { tenantId, stripe, deliveries: 0, bytes: 0 };
  entry.deliveries += room;
  entry.bytes += room * bytes;
  q.added.set(key, entry);
  usage.set(tenantId, {
    pending_deliveries: pending.pending_deliveries + room,
    pending_bytes: pending.pending_bytes + room * bytes,
  });
  q.queued += room;
  q.refused += wanted - room;
}

/** What an endpoint's pending deliveries (pendingOfEndpoint's rows) take off its tenant's stripes. */
export const takenByEndpoint = (rows: readonly Record<string, unknown>[]) =>
  inLockOrder(
    rows.map((r) => ({
      tenantId: String(r.tenant_id),
      stripe: Number(r.stripe),
      deliveries: -Number(r.deliveries),
      bytes: -Number(r.bytes),
    })),
  );

/**
 * The stripes to update, in one order (tenant, then stripe) whoever updates them, so that two transactions
 * holding some stripe rows never wait for each other's.
 */
export const inLockOrder = <T extends { tenantId: string; stripe: number }>(entries: Iterable<T>): T[] =>
  [...entries].sort((a, b) =>
    a.tenantId === b.tenantId ? a.stripe - b.stripe : a.tenantId < b.tenantId ? -1 : 1,
  );

/** What deliveries that left pending (`tenant_id`, `shard`, `bytes` each) take off their tenants' outboxes. */
export function leftOutbox(rows: readonly Record<string, unknown>[]) {
  const taken = new Map<string, { tenantId: string; stripe: number; deliveries: number; bytes: number }>();
  for (const row of rows) {
    const tenantId = String(row.tenant_id);
    const stripe = stripeOf(Number(row.shard));
    const key = `${tenantId}\u0000${stripe}`;
    const entry = taken.get(key) ?? { tenantId, stripe, deliveries: 0, bytes: 0 };
    entry.deliveries -= 1;
    entry.bytes -= Number(row.bytes);
    taken.set(key, entry);
  }
  return taken.values();
}

/** Tells the store's listener of refusals, once their change has committed. */
export function tellRefused(handle: object, refused: number): void {
  if (refused > 0) outboxOf(handle).onRefused?.(refused);
}

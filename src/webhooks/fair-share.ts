// Which due webhook deliveries a round of the deliverer sends (docs/internals/decisions.md#webhooks): the
// slots free are shared round-robin across tenants, then across a tenant's endpoints, the least busy first,
// and a tenant or an endpoint holds at most its share of the slots, so that one tenant's slow or dead
// endpoints cannot take every slot from the others. With nobody else due or sending, a tenant or an endpoint
// may use more, but never the last quarter of the slots: a delivery of another tenant due meanwhile finds
// one free.
// A failing endpoint gets one slot (its probe), for the delivery of it tried least.
import type { DueWebhookDelivery } from '../store/store.ts';

/**
 * The most slots a tenant, and a healthy endpoint, may hold at once while others have due deliveries, and
 * what either may hold while nobody else has.
 */
export interface Shares {
  tenant: number;
  endpoint: number;
  alone: number;
}

/** Half the slots a tenant, a quarter an endpoint, three quarters alone (at least one each). */
export const sharesOf = (concurrency: number): Shares => ({
  tenant: Math.max(1, Math.floor(concurrency / 2)),
  endpoint: Math.max(1, Math.floor(concurrency / 4)),
  alone: Math.max(1, concurrency - Math.floor(concurrency / 4)),
});

/** What holds a slot: an attempt's tenant and endpoint. */
export interface Holder {
  tenant_id: string;
  webhook_id: string;
}

/** The slots an endpoint may hold: one (its probe) while it is failing. */
export const endpointShare = (
  d: Pick<DueWebhookDelivery, 'endpoint_failures'>,
  shares: Shares,
  alone = false,
) => (d.endpoint_failures > 0 ? 1 : alone ? shares.alone : shares.endpoint);

const tally = (holders: Iterable<Holder>) => {
  const tenants = new Map<string, number>();
  const endpoints = new Map<string, number>();
  for (const h of holders) {
    tenants.set(h.tenant_id, (tenants.get(h.tenant_id) ?? 0) + 1);
    endpoints.set(h.webhook_id, (endpoints.get(h.webhook_id) ?? 0) + 1);
  }
  return { tenants, endpoints };
};

export interface Picked {
  picked: DueWebhookDelivery[];
  /** Whether a candidate was left for its tenant's or endpoint's share, not for want of room. */
  heldBack: boolean;
}

/**
 * Picks at most `room` of `candidates` (earliest due first) beside the attempts `busy` holds: in passes, each
 * tenant with room in its share (the least busy first, then the earliest due) gets one, from its endpoint with
 * room that is least busy (then earliest due); an endpoint's own deliveries go earliest due first. A tenant
 * (an endpoint) that is the only one among the candidates and in `busy` has the larger share `alone`.
 */
export function pickFairly(
  candidates: readonly DueWebhookDelivery[],
  room: number,
  busy: Iterable<Holder>,
  shares: Shares,
): Picked {
  const { tenants, endpoints } = tally(busy);
  // Per tenant, its endpoints' queues, in the order of their first candidate (due order).
  const queues = new Map<string, Map<string, DueWebhookDelivery[]>>();
  const firstOfTenant = new Map<string, number>();
  const firstOfEndpoint = new Map<string, number>();
  candidates.forEach((d, i) => {
    const ofTenant = queues.get(d.tenant_id) ?? new Map<string, DueWebhookDelivery[]>();
    queues.set(d.tenant_id, ofTenant);
    const queue = ofTenant.get(d.webhook_id) ?? [];
    ofTenant.set(d.webhook_id, queue);
    queue.push(d);
    if (!firstOfTenant.has(d.tenant_id)) firstOfTenant.set(d.tenant_id, i);
    if (!firstOfEndpoint.has(d.webhook_id)) firstOfEndpoint.set(d.webhook_id, i);
  });
  // A failing endpoint's probe is the delivery tried least (each is the first of its key: any order keeps
  // the keys'), so that one it always refuses (a payload it cannot take) does not keep it failing for all.
  for (const ofTenant of queues.values()) {
    for (const queue of ofTenant.values()) {
      if ((queue[0]?.endpoint_failures ?? 0) > 0) queue.sort((a, b) => a.attempts - b.attempts);
    }
  }
  const load = (counts: Map<string, number>, id: string) => counts.get(id) ?? 0;
  const byLoad = (counts: Map<string, number>, first: Map<string, number>) => (a: string, b: string) =>
    load(counts, a) - load(counts, b) || (first.get(a) ?? 0) - (first.get(b) ?? 0);
  // Alone: nobody else has a due delivery among the candidates, nor an attempt in flight.
  const tenantAlone = new Set([...queues.keys(), ...tenants.keys()]).size === 1;
  const endpointAlone = new Set([...firstOfEndpoint.keys(), ...endpoints.keys()]).size === 1;
  const tenantShare = tenantAlone ? shares.alone : shares.tenant;
  const picked: DueWebhookDelivery[] = [];
  let progress = true;
  while (picked.length < room && progress) {
    progress = false;
    for (const tenant of [...queues.keys()].sort(byLoad(tenants, firstOfTenant))) {
      if (picked.length >= room) break;
      if (load(tenants, tenant) >= tenantShare) continue;
      const ofTenant = queues.get(tenant) ?? new Map<string, DueWebhookDelivery[]>();
      const endpoint = [...ofTenant.keys()].sort(byLoad(endpoints, firstOfEndpoint)).find((id) => {
        const next = ofTenant.get(id)?.[0];
        return next !== undefined && load(endpoints, id) < endpointShare(next, shares, endpointAlone);
      });
      const next = endpoint === undefined ? undefined : ofTenant.get(endpoint)?.shift();
      if (!endpoint || !next) continue;
      picked.push(next);
      tenants.set(tenant, load(tenants, tenant) + 1);
      endpoints.set(endpoint, load(endpoints, endpoint) + 1);
      progress = true;
    }
  }
  const left = [...queues.values()].some((ofTenant) => [...ofTenant.values()].some((q) => q.length > 0));
  return { picked, heldBack: left && picked.length < room };
}

/**
 * The tenants and endpoints whose shares (with others due) `busy` fills: a query for the others' candidates
 * need not return theirs.
 */
export function saturated(
  busy: readonly (Holder & Pick<DueWebhookDelivery, 'endpoint_failures'>)[],
  shares: Shares,
) {
  const { tenants, endpoints } = tally(busy);
  const full = new Set<string>();
  for (const h of busy)
    if ((endpoints.get(h.webhook_id) ?? 0) >= endpointShare(h, shares)) full.add(h.webhook_id);
  return {
    tenants: [...tenants].filter(([, n]) => n >= shares.tenant).map(([id]) => id),
    webhooks: [...full],
  };
}

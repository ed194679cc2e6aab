// Metrics of shard ownership and forwarding: owned shards, lease renewals and losses, forwarded requests,
// and writes refused for a stale epoch. Registered on the app's own registry (see http/server/metrics.ts).
import { Counter, Gauge, type Registry } from 'prom-client';

export function createClusterMetrics(registry: Registry) {
  return {
    ownedShards: new Gauge({
      name: 'parley_owned_shards',
      help: 'Shards whose lease this process holds',
      registers: [registry],
    }),
    leaseRenewals: new Counter({
      name: 'parley_lease_renewals_total',
      help: 'Shard leases renewed',
      registers: [registry],
    }),
    leaseLosses: new Counter({
      name: 'parley_lease_losses_total',
      help: 'Shard leases lost without a handover, by reason (lapsed: not renewed in time; taken: another owner)',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    forwards: new Counter({
      name: 'parley_forwards_total',
      help: 'Requests forwarded to the owner of their shard, by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    staleEpochRejections: new Counter({
      name: 'parley_stale_epoch_rejections_total',
      help: 'Session writes the store refused, or answers from memory it did not confirm, because another process owns the shard now',
      registers: [registry],
    }),
  };
}

export type ClusterMetrics = ReturnType<typeof createClusterMetrics>;

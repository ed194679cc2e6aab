// The Host check (PARLEY_ALLOWED_HOSTS): a request naming a host this service does not answer for is refused
// with 421 `host_not_allowed` before any route or forward runs. A page on another site whose DNS name is
// rebound to this machine's address sends its own name as Host, so it cannot read /demo, /metrics or the API
// of a service listening on loopback. The health checks answer whatever the Host: probes name an address.
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../errors.ts';
import { type AllowedHosts, bareHost, hostAllowed } from '../../hosts.ts';

/** What a load balancer or an orchestrator polls by address; they tell nothing a page could use. */
const PROBES = new Set(['/healthz', '/readyz']);

/**
 * The hosts a request may name: `allowed`, and the host of this process's own URL (PARLEY_NODE_URL), which
 * the other processes of a cluster name when they forward a request here.
 */
export function acceptedHosts(allowed: AllowedHosts, nodeUrl: string | undefined): AllowedHosts {
  if (allowed === null || nodeUrl === undefined) return allowed;
  return [...allowed, bareHost(new URL(nodeUrl).host)];
}

/** Registers the check as an onRequest hook of `app`: call it before any other hook that acts on a request. */
export function registerHostCheck(app: FastifyInstance, allowed: AllowedHosts): void {
  if (allowed === null) return;
  // The last Host found allowed: nearly every request names the same one, and the check (a parse, and an
  // address test for `loopback`) is then one comparison. One string, so nothing a client sends accumulates.
  let lastAllowed: string | undefined;
  // A callback hook, not an async one: no promise per request.
  app.addHook('onRequest', (request, _reply, done) => {
    const host = request.headers.host;
    if (host !== undefined && host === lastAllowed) return done();
    if (PROBES.has(request.routeOptions.url ?? '')) return done();
    if (hostAllowed(host, allowed)) {
      lastAllowed = host;
      return done();
    }
    done(new AppError('host_not_allowed', undefined, { context: { host: host ?? null } }));
  });
}

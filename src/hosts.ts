// Host names and addresses: whether HOST is a loopback one (which decides several safe defaults), and which
// `Host` a request may name (PARLEY_ALLOWED_HOSTS), so that a page from elsewhere cannot reach this service
// through a DNS name rebound to its address.
import { BlockList, isIP } from 'node:net';

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');
loopback.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/** A name or address without brackets, port or trailing dot, lower-cased: `[::1]:3000` → `::1`. */
export function bareHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    h = end < 0 ? h.slice(1) : h.slice(1, end);
  } else {
    // One colon is a port; more are an IPv6 address written without brackets (HOST=::1).
    const colon = h.indexOf(':');
    if (colon >= 0 && colon === h.lastIndexOf(':')) h = h.slice(0, colon);
  }
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/**
 * Whether `host` (a name or an address) can only be reached from this machine: `localhost` and its
 * subdomains (which resolvers must keep on loopback), 127.0.0.0/8 and ::1. `0.0.0.0` and `::` are every
 * interface, not loopback.
 */
export function isLoopbackHost(host: string): boolean {
  const h = bareHost(host);
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  const family = isIP(h);
  if (family === 0) return false;
  return loopback.check(h, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Which `Host` a request may name: any (null), or those of a list. An entry is a name or address (`[::1]` or
 * `::1`), `*.example.com` for the subdomains of a name, or `loopback` for every loopback name and address.
 */
export type AllowedHosts = readonly string[] | null;

/** PARLEY_ALLOWED_HOSTS read: blank means the default, `*` any host. */
export function parseAllowedHosts(value: string | undefined, hostIsLoopback: boolean): AllowedHosts {
  if (value === undefined) return hostIsLoopback ? ['loopback'] : null;
  const entries = value
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  if (entries.includes('*')) return null;
  return entries.map((e) => (e.startsWith('*.') ? e : bareHost(e)));
}

/** Whether a request naming `host` (its Host header, with or without a port) may be served. */
export function hostAllowed(host: string | undefined, allowed: AllowedHosts): boolean {
  if (allowed === null) return true;
  if (host === undefined || host === '') return false;
  const h = bareHost(host);
  return allowed.some((entry) => {
    if (entry === 'loopback') return isLoopbackHost(h);
    if (entry.startsWith('*.')) return h.endsWith(entry.slice(1)) && h.length > entry.length - 1;
    return h === entry;
  });
}

// Keeps webhooks off private networks (docs/internals/decisions.md#webhooks): an endpoint's URL is checked
// when it is created, and the address a delivery connects to is checked again at connection time, so that a
// name which later resolves to a private address (DNS rebinding) is refused too — unless
// PARLEY_WEBHOOK_ALLOW_PRIVATE is on.
import { lookup as dnsLookup } from 'node:dns';
import { lookup as lookupAll } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';

/** IPv4 blocks no webhook goes to: this network, private, shared (CGNAT), loopback, link-local, reserved. */
const PRIVATE_V4: ReadonlyArray<readonly [base: string, bits: number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  // Multicast, then the reserved 240/4 with the broadcast address.
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

const v4ToNumber = (ip: string) => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);

const PRIVATE_V4_RANGES = PRIVATE_V4.map(([base, bits]) => {
  const size = 2 ** (32 - bits);
  const start = v4ToNumber(base);
  return [start, start + size] as const;
});

function isPrivateV4(n: number): boolean {
  return PRIVATE_V4_RANGES.some(([start, end]) => n >= start && n < end);
}

/** The eight 16-bit groups of an IPv6 address (valid per isIP, without a zone). */
function v6Groups(ip: string): number[] {
  let text = ip;
  const tail: number[] = [];
  // A dotted IPv4 tail (::ffff:127.0.0.1) is the last two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4ToNumber(dotted[1]);
    tail.push(Math.floor(n / 65536), n % 65536);
    text = text.slice(0, -dotted[1].length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const [head, rest] = text.split('::');
  const left = parse(head);
  const right = [...(rest === undefined ? [] : parse(rest)), ...tail];
  if (rest === undefined) return [...left, ...right];
  return [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
}

const v4Of = (high: number, low: number) => high * 65536 + low;

function isPrivateV6(g: number[]): boolean {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  // IPv4-mapped ::ffff:a.b.c.d, and NAT64 64:ff9b::a.b.c.d: the IPv4 address decides.
  if (zeros(0, 5) && g[5] === 0xffff) return isPrivateV4(v4Of(g[6], g[7]));
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return isPrivateV4(v4Of(g[6], g[7]));
  // Outside global unicast 2000::/3: unspecified, loopback, IPv4-compatible, discard, unique-local
  // fc00::/7, link-local fe80::/10, site-local, multicast ff00::/8 and the unassigned rest.
  if ((g[0] & 0xe000) !== 0x2000) return true;
  // Documentation 2001:db8::/32.
  if (g[0] === 0x2001 && g[1] === 0x0db8) return true;
  // 6to4 2002::/16 carries an IPv4 address in its next 32 bits.
  if (g[0] === 0x2002) return isPrivateV4(v4Of(g[1], g[2]));
  return false;
}

/**
 * Whether a webhook must not go to `ip`: loopback, private (RFC 1918, unique-local), link-local, CGNAT,
 * unspecified, multicast or reserved, in IPv4, IPv6 or IPv4-mapped IPv6. A string that is not an IP
 * address counts as private: the guard fails closed.
 */
export function isPrivateAddress(ip: string): boolean {
  const address = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const version = isIP(address);
  if (version === 4) return isPrivateV4(v4ToNumber(address));
  if (version === 6) return isPrivateV6(v6Groups(address.split('%')[0]));
  return true;
}

/** A URL's host as an address or a name: IPv6 without its brackets, a name without its trailing dot. */
function hostOf(url: URL): string {
  const { hostname } = url;
  if (hostname.startsWith('[')) return hostname.slice(1, -1);
  return hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
}

const isLocalhost = (host: string) => {
  const name = host.toLowerCase();
  return name === 'localhost' || name.endsWith('.localhost');
};

/**
 * Whether a webhook may be sent to `url` now: null when it may; 'private' when its host is, or resolves to
 * any, private address; 'unresolvable' when its host does not resolve (or the URL does not parse). With
 * `allowPrivate` every address is allowed, so nothing is looked up.
 */
export async function checkWebhookUrl(
  url: string,
  allowPrivate: boolean,
): Promise<null | 'private' | 'unresolvable'> {
  if (allowPrivate) return null;
  let host: string;
  try {
    host = hostOf(new URL(url));
  } catch {
    return 'unresolvable';
  }
  if (isIP(host) !== 0) return isPrivateAddress(host) ? 'private' : null;
  if (isLocalhost(host)) return 'private';
  try {
    const addresses = await lookupAll(host, { all: true });
    if (addresses.length === 0) return 'unresolvable';
    return addresses.some((a) => isPrivateAddress(a.address)) ? 'private' : null;
  } catch {
    return 'unresolvable';
  }
}

/**
 * Whether the literal address in a URL's host is private; false for a name, which `guardedLookup` checks
 * when it is resolved (connections to a literal address resolve nothing).
 */
export function isPrivateLiteral(url: URL): boolean {
  const host = hostOf(url);
  return isIP(host) !== 0 && isPrivateAddress(host);
}

/** The error a connection to a private address fails with. */
export class PrivateAddressError extends Error {
  static readonly code = 'EPRIVATEADDRESS';
  override name = 'PrivateAddressError';
  readonly code = PrivateAddressError.code;
  constructor(host: string) {
    super(`${host} resolves to a private address; webhooks may not be sent there`);
  }
}

/**
 * A `lookup` for net.connect and tls.connect (undici's `connect.lookup`): resolves as dns.lookup does, and
 * fails with PrivateAddressError when any address the name has is private.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    if (addresses.some((a) => isPrivateAddress(a.address)))
      return callback(new PrivateAddressError(hostname), []);
    const [first] = addresses;
    if (options.all) callback(null, addresses);
    else if (first) callback(null, first.address, first.family);
    else callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
  });
};

// The private-address guard of webhooks (docs/internals/decisions.md#webhooks): which addresses count as
// private in IPv4, IPv6 and IPv4-mapped IPv6, how an endpoint's URL is judged when it is created, and the
// lookup that refuses a name resolving to a private address when a delivery connects.
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { test } from 'node:test';
import { checkWebhookUrl, guardedLookup, isPrivateAddress } from '../../src/webhooks/address-guard.ts';

test('private, loopback, link-local, CGNAT, unspecified, multicast and reserved IPv4 addresses are private', () => {
  for (const ip of [
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.1',
    '10.255.255.255',
    '100.64.0.1',
    '100.127.255.254',
    '127.0.0.1',
    '127.255.0.9',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.0.0.8',
    '192.0.2.10',
    '192.168.1.1',
    '198.18.0.1',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
  ]) {
    assert.equal(isPrivateAddress(ip), true, ip);
  }
});

test('public IPv4 addresses, including the neighbours of private blocks, are not private', () => {
  for (const ip of [
    '8.8.8.8',
    '1.1.1.1',
    '9.255.255.255',
    '11.0.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.167.255.255',
    '192.169.0.0',
    '223.255.255.255',
  ]) {
    assert.equal(isPrivateAddress(ip), false, ip);
  }
});

test('loopback, unspecified, unique-local, link-local, multicast and documentation IPv6 addresses are private', () => {
  for (const ip of [
    '::',
    '::1',
    '0:0:0:0:0:0:0:1',
    'fc00::1',
    'fd12:3456:789a::1',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'fec0::1',
    'ff02::1',
    '100::1',
    '2001:db8::1',
    '[::1]',
  ]) {
    assert.equal(isPrivateAddress(ip), true, ip);
  }
  for (const ip of ['2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '2001:4860:4860::8888']) {
    assert.equal(isPrivateAddress(ip), false, ip);
  }
});

test('an IPv4 address inside IPv6 (mapped, NAT64, 6to4) is judged by its IPv4 address', () => {
  for (const ip of [
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.1.2.3',
    '::ffff:169.254.169.254',
    '0:0:0:0:0:ffff:c0a8:0101',
    '64:ff9b::10.0.0.1',
    '2002:0a00:0001::1',
  ]) {
    assert.equal(isPrivateAddress(ip), true, ip);
  }
  for (const ip of ['::ffff:8.8.8.8', '::ffff:808:808', '64:ff9b::1.1.1.1', '2002:0808:0808::1']) {
    assert.equal(isPrivateAddress(ip), false, ip);
  }
});

test('a string that is not an IP address counts as private: the guard fails closed', () => {
  for (const text of ['', 'localhost', 'example.com', '256.1.1.1', '1.2.3', '::g']) {
    assert.equal(isPrivateAddress(text), true, text);
  }
});

test('a URL on a literal address is judged without a lookup; localhost is private', async () => {
  assert.equal(await checkWebhookUrl('https://127.0.0.1/hooks', false), 'private');
  assert.equal(await checkWebhookUrl('http://[::1]:8080/hooks', false), 'private');
  assert.equal(await checkWebhookUrl('http://[::ffff:192.168.0.1]/', false), 'private');
  // The URL parser turns other spellings of an IPv4 address into dotted form first.
  assert.equal(await checkWebhookUrl('http://2130706433/', false), 'private');
  assert.equal(await checkWebhookUrl('http://0x7f.1/', false), 'private');
  assert.equal(await checkWebhookUrl('https://8.8.8.8/hooks', false), null);
  assert.equal(await checkWebhookUrl('https://[2606:4700:4700::1111]/hooks', false), null);
  for (const url of ['http://localhost:3000/', 'http://LOCALHOST./', 'http://api.localhost/']) {
    assert.equal(await checkWebhookUrl(url, false), 'private', url);
  }
});

test('a name that does not resolve, or a URL that does not parse, is unresolvable', async () => {
  // .invalid names never resolve (RFC 6761).
  assert.equal(await checkWebhookUrl('https://hooks.parley.invalid/in', false), 'unresolvable');
  assert.equal(await checkWebhookUrl('not a url', false), 'unresolvable');
});

test('with allowPrivate every URL passes, and nothing is looked up', async () => {
  assert.equal(await checkWebhookUrl('http://127.0.0.1:9/', true), null);
  assert.equal(await checkWebhookUrl('http://localhost/', true), null);
  assert.equal(await checkWebhookUrl('https://hooks.parley.invalid/in', true), null);
});

const lookupOnce = (hostname: string, all: boolean) =>
  new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>(
    (resolve) =>
      guardedLookup(hostname, { all }, (err, address, family) => resolve({ err, address, family })),
  );

test('the connection-time lookup refuses a name that resolves to a private address, in both calling forms', async () => {
  for (const all of [false, true]) {
    const { err } = await lookupOnce('localhost', all);
    assert.equal(err?.code, 'EPRIVATEADDRESS');
    assert.match(String(err?.message), /localhost resolves to a private address/);
  }
  const missing = await lookupOnce('hooks.parley.invalid', true);
  assert.equal(missing.err?.code, 'ENOTFOUND');
});

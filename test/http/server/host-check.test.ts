// The Host check (PARLEY_ALLOWED_HOSTS): a service listening on loopback answers only requests naming a loopback
// host by default, so that a page whose DNS name is rebound to 127.0.0.1 reads nothing; a list names the hosts
// exactly; `*`, or a HOST that is not loopback, allows any; health checks answer whatever the Host. Checked
// in the app, on the real service listening on loopback, and across a cluster whose processes forward to one
// another by PARLEY_NODE_URL.
import assert from 'node:assert/strict';
import { after, describe, it, test } from 'node:test';
import { loadConfig } from '../../../src/config.ts';
import { bareHost, hostAllowed, isLoopbackHost, parseAllowedHosts } from '../../../src/hosts.ts';
import { useTestApp } from '../../helpers/app.ts';
import { startCluster } from '../../helpers/cluster.ts';
import { killLeftoverChildren, startService, tempDir } from '../../helpers/process.ts';
import { requestAs } from '../../helpers/wire.ts';

after(killLeftoverChildren);

describe('hosts', () => {
  it('tells loopback names and addresses from every other one', () => {
    for (const host of [
      '127.0.0.1',
      '127.8.9.10',
      '::1',
      '[::1]',
      'localhost',
      'LOCALHOST.',
      'app.localhost',
    ]) {
      assert.equal(isLoopbackHost(host), true, host);
    }
    for (const host of ['0.0.0.0', '::', '192.168.1.2', '10.0.0.1', 'example.com', 'localhost.example.com']) {
      assert.equal(isLoopbackHost(host), false, host);
    }
    assert.equal(bareHost('[::1]:3000'), '::1');
    assert.equal(bareHost('Parley.Example.com.:443'), 'parley.example.com');
  });

  it('reads PARLEY_ALLOWED_HOSTS: loopback by default on loopback, any otherwise, `*` any, a list exactly', () => {
    assert.deepEqual(parseAllowedHosts(undefined, true), ['loopback']);
    assert.equal(parseAllowedHosts(undefined, false), null);
    assert.equal(parseAllowedHosts('parley.example.com, *', true), null);
    const list = parseAllowedHosts('Parley.example.com, *.corp.example, [::1], loopback', false);
    assert.deepEqual(list, ['parley.example.com', '*.corp.example', '::1', 'loopback']);
    assert.equal(hostAllowed('parley.example.com:8443', list), true);
    assert.equal(hostAllowed('a.corp.example', list), true);
    assert.equal(hostAllowed('corp.example', list), false);
    assert.equal(hostAllowed('evilcorp.example', list), false);
    assert.equal(hostAllowed('127.0.0.1:3000', list), true);
    assert.equal(hostAllowed('example.com', list), false);
    assert.equal(hostAllowed(undefined, list), false);
    assert.equal(hostAllowed(undefined, null), true);
    assert.deepEqual(loadConfig({}).allowedHosts, ['loopback']);
    assert.equal(loadConfig({ HOST: '0.0.0.0' }).allowedHosts, null);
  });
});

describe('a service on loopback, by default', () => {
  const t = useTestApp({ env: { PARLEY_DEMO: 'true' } });
  const as = (host: string, url: string) => t.app.inject({ url, headers: { host } });

  it('answers requests naming a loopback host', async () => {
    for (const host of ['localhost:3000', '127.0.0.1:3000', '[::1]:3000', 'parley.localhost']) {
      assert.equal((await as(host, '/metrics')).statusCode, 200, host);
    }
  });

  it('refuses any other host with 421 host_not_allowed before any route, an unknown one included', async () => {
    for (const url of ['/metrics', '/demo', '/v1/agents/users', '/openapi.json', '/docs', '/no/such/route']) {
      const res = await as('rebound.example:3000', url);
      assert.equal(res.statusCode, 421, url);
      assert.equal(res.json().error.code, 'host_not_allowed');
      assert.deepEqual(res.json().error.context, { host: 'rebound.example:3000' });
      assert.ok(res.headers['x-request-id']);
    }
    // Nothing was started for the refused page.
    assert.equal((await t.store.listSessions('demo', {}, { limit: 10, offset: 0 })).items.length, 0);
  });

  it('answers the health checks whatever the host: probes name an address', async () => {
    assert.equal((await as('10.1.2.3:3000', '/healthz')).statusCode, 200);
    assert.equal((await as('10.1.2.3:3000', '/readyz')).statusCode, 200);
  });
});

describe('PARLEY_ALLOWED_HOSTS', () => {
  const t = useTestApp({ env: { PARLEY_ALLOWED_HOSTS: 'parley.example.com,*.corp.example' } });

  it('allows exactly the names it lists, and no longer loopback ones', async () => {
    const status = async (host: string) =>
      (await t.app.inject({ url: '/metrics', headers: { host } })).statusCode;
    assert.equal(await status('parley.example.com'), 200);
    assert.equal(await status('chat.corp.example:8443'), 200);
    assert.equal(await status('localhost'), 421);
    assert.equal(await status('parley.example.com.evil.example'), 421);
  });
});

describe('a service that is not on loopback', () => {
  const t = useTestApp({ env: { HOST: '0.0.0.0' } });

  it('answers any host by default (its operator names the hosts, if any, in PARLEY_ALLOWED_HOSTS)', async () => {
    const res = await t.app.inject({ url: '/metrics', headers: { host: 'anything.example' } });
    assert.equal(res.statusCode, 200);
  });
});

test('the real service listening on 127.0.0.1 refuses a rebound host, and answers its own', async (t) => {
  const service = await startService({ dataDir: await tempDir(t), env: { PARLEY_DEMO: 'true' } });
  t.after(() => service.stop());
  for (const path of ['/metrics', '/demo']) {
    const rebound = await requestAs(service.url, `rebound.example:${service.port}`, { path });
    assert.equal(rebound.status, 421, path);
    assert.equal(JSON.parse(rebound.body).error.code, 'host_not_allowed');
    assert.equal((await requestAs(service.url, `localhost:${service.port}`, { path })).status, 200, path);
  }
  assert.equal((await fetch(`${service.url}/demo`)).status, 200);
});

test('a cluster forwards between its processes whose Host the list does not name', async (t) => {
  const cluster = await startCluster(t, {
    nodes: 2,
    env: { PARLEY_ALLOWED_HOSTS: 'parley.example.com', PARLEY_NODE_HEADER: 'true' },
  });
  if (!cluster) return;
  await cluster.waitUntilSettled();
  const headers = { 'x-api-key': cluster.apiKey };
  const entry = cluster.urls[0] as string;
  // Sessions created through node 0 until one lives on node 1: its requests through node 0 are forwarded.
  let forwarded: string | undefined;
  for (let i = 0; i < 50 && !forwarded; i++) {
    const created = await requestAs(cluster.urls[i % 2] as string, 'parley.example.com', {
      method: 'POST',
      path: '/v1/agents/demo/sessions',
      body: {},
      headers,
    });
    assert.equal(created.status, 201, created.body);
    const id = JSON.parse(created.body).id as string;
    const owner = await cluster.indexOf((await cluster.ownerOfSession(id)) ?? '');
    if (owner === 1) forwarded = id;
  }
  assert.ok(forwarded, 'a session on node 1');
  const sent = await requestAs(entry, 'parley.example.com', {
    method: 'POST',
    path: `/v1/agents/sessions/${forwarded}/messages`,
    body: { content: 'Hello through node 0' },
    headers,
  });
  assert.equal(sent.status, 201, sent.body);
  assert.notEqual(sent.headers['x-parley-node'], undefined);
  // The process that answered is node 1, which the request reached by node 1's own URL.
  assert.equal(await cluster.indexOf(String(sent.headers['x-parley-node'])), 1);
  const refused = await requestAs(entry, 'rebound.example', {
    path: `/v1/agents/sessions/${forwarded}/messages`,
    headers,
  });
  assert.equal(refused.status, 421);
  assert.equal(JSON.parse(refused.body).error.code, 'host_not_allowed');
});

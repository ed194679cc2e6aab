// Acceptance of webhooks (docs/internals/decisions.md#webhooks) on three real processes with Redis leases, on
// SQLite and PostgreSQL: a session.closed delivery reaches a real receiver, verified, within seconds of the
// terminate, sent by one process only; and when the owner is SIGKILLed right after the terminate was
// acknowledged (its delivery unsent, or in flight and never answered), the process that takes the shard over
// delivers it; and when the owner is SIGKILLed with its attempt in flight, that attempt is counted.
import assert from 'node:assert/strict';
import { after, type TestContext, test } from 'node:test';
import { type Cluster, startCluster } from '../helpers/cluster.ts';
import { callAnyNode } from '../helpers/load.ts';
import { killLeftoverChildren } from '../helpers/process.ts';
import { waitFor } from '../helpers/wait.ts';
import {
  type ReceivedRequest,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.ts';

after(killLeftoverChildren);

/**
 * "Within seconds": the lease TTL (3 s here) for a takeover, then, when the killed owner's attempt was in
 * flight, its claim's lapse (the 10 s attempt timeout and 2 s), a poll, and a loaded machine's slack.
 */
const DELIVERED_WITHIN_MS = 45_000;

async function webhookCluster(t: TestContext, store: 'sqlite' | 'postgres') {
  const receiver = await startWebhookReceiver();
  t.after(() => receiver.close());
  // A cluster refuses loopback endpoints by default; the receiver is on loopback.
  const cluster = await startCluster(t, { nodes: 3, store, env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true' } });
  if (!cluster) return null;
  await cluster.waitUntilSettled();
  const hook = await callAnyNode(cluster.urls, cluster.apiKey, 'POST', '/v1/agents/webhooks', {
    url: receiver.url,
    events: ['session.closed'],
  });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  return { cluster, receiver, secret: String(hook.body.secret), webhookId: String(hook.body.id) };
}

/** A new session, and the index of its owner and of another process. */
async function sessionOn(cluster: Cluster) {
  const created = await callAnyNode(cluster.urls, cluster.apiKey, 'POST', '/v1/agents/demo/sessions', {});
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const sessionId = String(created.body.id);
  const ownerId = await cluster.ownerOfSession(sessionId);
  assert.ok(ownerId, 'the session lies in a shard with an owner');
  const owner = await cluster.indexOf(ownerId);
  const other = [0, 1, 2].find((i) => i !== owner) as number;
  return { sessionId, owner, other };
}

/** Terminates the session through process `node` first (the owner, or another that forwards to it). */
async function terminateOn(cluster: Cluster, sessionId: string, node: number) {
  const terminated = await callAnyNode(
    cluster.urls,
    cluster.apiKey,
    'POST',
    `/v1/agents/sessions/${sessionId}/terminate`,
    {},
    { first: node },
  );
  assert.equal(terminated.status, 200, JSON.stringify(terminated.body));
}

/** The delivery of `eventId` as the API lists it (through process `node` first), once recorded delivered. */
async function listedDelivered(cluster: Cluster, webhookId: string, eventId: unknown, node: number) {
  let listed: { event_id: string; status: string; attempts: number } | undefined;
  await waitFor('the delivery is recorded as delivered', async () => {
    const page = await callAnyNode(
      cluster.urls,
      cluster.apiKey,
      'GET',
      `/v1/agents/webhooks/${webhookId}/deliveries`,
      undefined,
      { first: node },
    );
    const items = page.body.items as { event_id: string; status: string; attempts: number }[];
    listed = items.find((d) => d.event_id === eventId);
    return listed?.status === 'delivered';
  });
  assert.ok(listed);
  return listed;
}

const closedAbout = (receiver: WebhookReceiver, sessionId: string) =>
  receiver.requests.filter((d) => d.body?.type === 'session.closed' && d.body?.data.id === sessionId);

async function answeredDelivery(receiver: WebhookReceiver, sessionId: string): Promise<ReceivedRequest> {
  await waitFor(
    `the session.closed delivery of ${sessionId}`,
    () => closedAbout(receiver, sessionId).some((d) => d.status === 200),
    DELIVERED_WITHIN_MS,
  );
  const answered = closedAbout(receiver, sessionId).find((d) => d.status === 200);
  assert.ok(answered);
  return answered;
}

for (const store of ['sqlite', 'postgres'] as const) {
  test(`on ${store}, a terminate is delivered as a verified session.closed within seconds, by one process once`, {
    timeout: 180_000,
  }, async (t) => {
    const started = await webhookCluster(t, store);
    if (!started) return;
    const { cluster, receiver, secret } = started;
    const { sessionId, other } = await sessionOn(cluster);
    const terminated = await callAnyNode(
      cluster.urls,
      cluster.apiKey,
      'POST',
      `/v1/agents/sessions/${sessionId}/terminate`,
      { reason: 'done' },
      { first: other },
    );
    assert.equal(terminated.status, 200, JSON.stringify(terminated.body));
    const delivery = await answeredDelivery(receiver, sessionId);
    const payload = receiver.verify(delivery, secret);
    assert.equal(payload.data.status, 'closed');
    assert.equal(payload.data.reason, 'done');
    // Time for a second sender to show itself: another session's delivery comes after this one's.
    const { sessionId: later } = await sessionOn(cluster);
    await callAnyNode(cluster.urls, cluster.apiKey, 'POST', `/v1/agents/sessions/${later}/terminate`, {});
    await answeredDelivery(receiver, later);
    assert.equal(closedAbout(receiver, sessionId).length, 1, 'sent once, by one process');
  });

  test(`on ${store}, when the owner is SIGKILLed right after acknowledging a terminate, another process delivers the session.closed`, {
    timeout: 180_000,
  }, async (t) => {
    const started = await webhookCluster(t, store);
    if (!started) return;
    const { cluster, receiver, secret, webhookId } = started;
    const { sessionId, owner, other } = await sessionOn(cluster);
    // Whatever the owner sends before it dies is never answered: only the next owner can deliver.
    receiver.otherwise('hold');
    await terminateOn(cluster, sessionId, owner);
    await cluster.nodes[owner]?.stop('SIGKILL');
    const killedAt = Date.now();
    receiver.otherwise(200);

    const delivery = await answeredDelivery(receiver, sessionId);
    receiver.verify(delivery, secret);
    assert.ok(Date.now() - killedAt < DELIVERED_WITHIN_MS);
    const ids = new Set(closedAbout(receiver, sessionId).map((d) => d.headers['webhook-id']));
    assert.equal(ids.size, 1, 'every attempt is the same event');

    await listedDelivered(cluster, webhookId, delivery.headers['webhook-id'], other);
  });

  test(`on ${store}, an attempt cut off by SIGKILL of its sender is counted in the delivery's attempts`, {
    timeout: 180_000,
  }, async (t) => {
    const started = await webhookCluster(t, store);
    if (!started) return;
    const { cluster, receiver, webhookId } = started;
    const { sessionId, owner, other } = await sessionOn(cluster);
    receiver.otherwise('hold');
    await terminateOn(cluster, sessionId, owner);
    // The owner's attempt is in flight (the receiver holds it) when the owner dies.
    await waitFor('the owner’s attempt held', () => closedAbout(receiver, sessionId).length === 1);
    await cluster.nodes[owner]?.stop('SIGKILL');
    receiver.otherwise(200);

    const delivery = await answeredDelivery(receiver, sessionId);
    const listed = await listedDelivered(cluster, webhookId, delivery.headers['webhook-id'], other);
    assert.equal(closedAbout(receiver, sessionId).length, 2, 'the cut-off attempt and the one answered');
    assert.equal(listed.attempts, 2, 'the attempt cut off is counted');
  });
}

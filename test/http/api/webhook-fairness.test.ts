// Webhook fairness through the API, with the deliverer's own defaults (16 attempts in flight, 10 s each): a
// tenant whose 20 endpoints are black holes (a real server on loopback that accepts the connection and never
// answers) runs a few turns, and another tenant's delivery still arrives within seconds.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { after, before, it } from 'node:test';
import { client, createSession, send, useSessionApp } from '../../helpers/sessions.ts';
import { waitFor } from '../../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.ts';

const t = useSessionApp({ env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: 'true' } });

/** Accepts every connection and never answers (nor closes): each attempt takes its whole timeout. */
const sockets = new Set<Socket>();
const blackHole = createServer((socket) => {
  sockets.add(socket);
  socket.on('error', () => {});
  socket.resume();
});
let receiver: WebhookReceiver;
before(async () => {
  blackHole.listen(0, '127.0.0.1');
  await once(blackHole, 'listening');
  receiver = await startWebhookReceiver();
});
after(async () => {
  for (const socket of sockets) socket.destroy();
  blackHole.close();
  await receiver.close();
});

async function turns(key: string, count: number) {
  const session = await createSession(t, 'demo', {}, key);
  for (let n = 0; n < count; n++) {
    const res = await send(t, session.id, { content: `turn ${n}` }, {}, key);
    assert.equal(res.statusCode, 201, res.body);
  }
  return session.id;
}

it("a tenant with 20 black-holed endpoints does not delay another tenant's delivery by more than a few seconds", {
  timeout: 120_000,
}, async () => {
  const port = (blackHole.address() as { port: number }).port;
  const hog = await t.createKey('t-hog');
  for (let n = 0; n < 20; n++) {
    const res = await client(t, hog).post('/v1/agents/webhooks', {
      url: `http://127.0.0.1:${port}/hook/${n}`,
      events: ['turn.completed'],
    });
    assert.equal(res.statusCode, 201, res.body);
  }
  const other = await t.createKey('t-other');
  const res = await client(t, other).post('/v1/agents/webhooks', {
    url: receiver.url,
    events: ['turn.completed'],
  });
  assert.equal(res.statusCode, 201, res.body);

  // Six turns of the hog, 120 deliveries to its black holes; its attempts fill the slots they are given.
  await turns(hog, 6);
  await waitFor('the black holes hold attempts', () => sockets.size >= 8);
  const started = Date.now();
  const sessionId = await turns(other, 1);
  await waitFor(
    "the other tenant's turn.completed delivered",
    () => receiver.requests.some((r) => r.status === 200 && r.body?.data.session_id === sessionId),
    5_000,
  );
  const took = Date.now() - started;
  assert.ok(took < 5_000, `${took} ms`);
});

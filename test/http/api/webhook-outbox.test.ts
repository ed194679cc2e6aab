// The webhook outbox's cap through the API: a tenant whose endpoints are down keeps queueing events as its
// turns run, and its outbox stays within its cap; the deliveries past it are listed failed with the error
// `outbox_full` and counted on /metrics, and the turns themselves are answered as usual.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freePort } from '../../../support/free-port.ts';
import { client, createSession, send, useSessionApp } from '../../helpers/sessions.ts';

const CAP = 10;
// Retries an hour apart: the endpoints' deliveries stay pending once tried.
const t = useSessionApp({
  env: { PARLEY_WEBHOOK_OUTBOX_MAX_DELIVERIES: String(CAP), PARLEY_WEBHOOK_RETRY_SCHEDULE: '1h' },
});

interface Listed {
  status: string;
  error: string | null;
  attempts: number;
}

describe('a tenant whose endpoints are down', () => {
  it('keeps its pending deliveries within its cap; the rest are listed failed as outbox_full and counted', async () => {
    const key = await t.createKey('t-down');
    // Nothing listens there: every attempt is refused at once.
    const down = `http://127.0.0.1:${await freePort()}/hooks`;
    const hooks: string[] = [];
    for (let n = 0; n < 3; n++) {
      const res = await client(t, key).post('/v1/agents/webhooks', {
        url: `${down}/${n}`,
        events: ['turn.completed'],
      });
      assert.equal(res.statusCode, 201, res.body);
      hooks.push(res.json().id);
    }
    const session = await createSession(t, 'demo', {}, key);
    for (let n = 0; n < 8; n++) {
      const res = await send(t, session.id, { content: `turn ${n}` }, {}, key);
      assert.equal(res.statusCode, 201, 'the turn is answered whatever its webhooks');
    }

    const listed: Listed[] = [];
    for (const id of hooks) {
      const res = await client(t, key).get(`/v1/agents/webhooks/${id}/deliveries?limit=100`);
      assert.equal(res.statusCode, 200, res.body);
      listed.push(...(res.json().items as Listed[]));
    }
    assert.equal(listed.length, 24, 'a delivery of each turn to each endpoint, refused or not');
    const pending = listed.filter((d) => d.status === 'pending');
    const refused = listed.filter((d) => d.error === 'outbox_full');
    assert.equal(pending.length, CAP);
    assert.equal(refused.length, 24 - CAP);
    assert.ok(refused.every((d) => d.status === 'failed' && d.attempts === 0));

    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.match(metrics.body, new RegExp(`^parley_webhook_refused_total ${24 - CAP}$`, 'm'));
    assert.equal((await t.store.webhookOutboxUsage('t-down')).pending_deliveries, CAP);
  });
});

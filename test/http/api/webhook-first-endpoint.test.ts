// The first webhook endpoint of a database registered after turns ran without any: the next turn's event is
// queued and delivered (a group commit asks once per transaction whether any endpoint exists, never longer).
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { client, createSession, turn, useSessionApp } from '../../helpers/sessions.ts';
import { waitFor } from '../../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.ts';

const t = useSessionApp();
let receiver: WebhookReceiver;
before(async () => {
  receiver = await startWebhookReceiver();
});
after(() => receiver.close());

it('delivers the turn.completed of a turn after the first endpoint was registered, though turns ran before with none', async () => {
  const s = await createSession(t);
  await turn(t, s.id, 'before any endpoint');
  const res = await client(t).post('/v1/agents/webhooks', { url: receiver.url, events: ['turn.completed'] });
  assert.equal(res.statusCode, 201, res.body);
  await turn(t, s.id, 'after the first endpoint');
  await waitFor('the turn.completed delivery', () =>
    receiver.requests.some((d) => d.status === 200 && d.body?.type === 'turn.completed'),
  );
  const events = receiver.requests.filter((d) => d.body?.type === 'turn.completed');
  assert.equal(events.length, 1, 'the turn before the endpoint is not delivered');
  assert.equal(events[0]?.body?.data.session_id, s.id);
});

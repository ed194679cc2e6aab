// The Store contract: one suite that every Store implementation must pass, so that SQLite and PostgreSQL
// behave alike behind the API. An implementation's test file calls storeContract with a factory; the
// areas of the suite are the other modules of this folder.
import { describe } from 'node:test';
import { approvals } from './approvals.ts';
import { commitSession } from './commits.ts';
import { feedback } from './feedback.ts';
import { fileQuotas } from './file-quota.ts';
import { files } from './files.ts';
import { idempotencyRecords } from './idempotency.ts';
import { lifecycle } from './lifecycle.ts';
import { deleteSession, sessionsByAge } from './session-deletion.ts';
import { humansAndEvents } from './session-events.ts';
import { sessionList } from './session-list.ts';
import { claimShards, createAndRead, dueForExpiry, listSessions, readMessages } from './sessions.ts';
import { type OpenStore, sessionFixture, useStore } from './support.ts';
import { apiKeys, tenants } from './tenants.ts';
import { toolCalls } from './tool-calls.ts';
import { usageAndBudgets } from './usage.ts';
import { users } from './users.ts';
import { webhookBackoff } from './webhook-backoff.ts';
import { webhookOutbox } from './webhook-outbox.ts';
import { webhooks } from './webhooks.ts';

export type { OpenStore } from './support.ts';

export function storeContract(name: string, open: OpenStore): void {
  describe(`${name} meets the Store contract`, () => {
    lifecycle(open);
    tenants(open);
    apiKeys(open);
    users(open);
    files(open);
    fileQuotas(open);
    describe('sessions, messages, fencing and idempotency records', () => {
      const f = sessionFixture(useStore(open, { migrate: true }));
      claimShards(f);
      createAndRead(f);
      commitSession(f);
      toolCalls(f);
      approvals(f);
      idempotencyRecords(f);
      listSessions(f);
      sessionList(f);
      dueForExpiry(f);
      readMessages(f);
      sessionsByAge(f);
      deleteSession(f);
      humansAndEvents(f);
      usageAndBudgets(f);
    });
    feedback(open);
    webhooks(open);
    webhookOutbox(open);
    webhookBackoff(open);
  });
}

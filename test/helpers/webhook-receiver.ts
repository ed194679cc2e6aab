// A real webhook receiver on loopback: records every request as it arrived (headers, raw body, the payload
// parsed), answers with the statuses a test scripts (or holds its answers: a delivery in flight), and
// verifies Standard Webhooks signatures as an integrator would, with the `standardwebhooks` package on the
// raw body.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';

/** What every delivery posts. */
export interface WebhookPayload {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export interface ReceivedRequest {
  url: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as it arrived. */
  raw: Buffer;
  /** The payload parsed, `{ type, timestamp, data }`; null when the body is not JSON. */
  body: WebhookPayload | null;
  /** The status it was answered with; 0 while held (and for good when never released). */
  status: number;
  /** When it arrived (Date.now()), and how many requests were open then, itself included. */
  at: number;
  openOnArrival: number;
}

/** How the receiver answers a request: with a status, or not at all until release(). */
export type Answer = number | 'hold';

export interface WebhookReceiver {
  readonly url: string;
  readonly port: number;
  readonly requests: readonly ReceivedRequest[];
  /** Requests received and not answered yet, at most ever. */
  readonly mostOpen: number;
  /** The next requests are answered so, in order; then `otherwise`. */
  script(...answers: Answer[]): void;
  /** How requests past the script are answered (200 unless set). */
  otherwise(answer: Answer): void;
  /** Answers every held request with 200. */
  release(): void;
  /** The payload, once `secret` verifies the request's signature (throws otherwise). */
  verify(request: ReceivedRequest, secret: string): WebhookPayload;
  close(): Promise<void>;
}

const parsed = (raw: Buffer): ReceivedRequest['body'] => {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return null;
  }
};

/** A receiver on 127.0.0.1, closed when the test (or suite) `t` ends, if given. */
export async function startWebhookReceiver(t?: Pick<TestContext, 'after'>): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  const scripted: Answer[] = [];
  const held: { res: ServerResponse; request: ReceivedRequest }[] = [];
  let fallback: Answer = 200;
  let open = 0;
  let mostOpen = 0;
  const answer = (res: ServerResponse, request: ReceivedRequest, status: number) => {
    open--;
    request.status = status;
    if (!res.destroyed) res.writeHead(status, { 'content-type': 'text/plain' }).end(`answered ${status}`);
  };
  const server = createServer(async (req, res) => {
    res.on('error', () => {});
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk);
    } catch {
      return;
    }
    const raw = Buffer.concat(chunks);
    open++;
    mostOpen = Math.max(mostOpen, open);
    const request: ReceivedRequest = {
      url: req.url ?? '',
      headers: req.headers,
      raw,
      body: parsed(raw),
      status: 0,
      at: Date.now(),
      openOnArrival: open,
    };
    requests.push(request);
    const next = scripted.shift() ?? fallback;
    if (next === 'hold') {
      held.push({ res, request });
      res.on('close', () => {
        const index = held.findIndex((h) => h.res === res);
        if (index !== -1) {
          held.splice(index, 1);
          open--;
        }
      });
    } else answer(res, request, next);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${address.port}/hooks`,
    port: address.port,
    requests,
    get mostOpen() {
      return mostOpen;
    },
    script: (...answers) => scripted.push(...answers),
    otherwise: (next) => {
      fallback = next;
    },
    release: () => {
      for (const { res, request } of held.splice(0)) answer(res, request, 200);
    },
    verify: (request, secret) => {
      new Webhook(secret).verify(request.raw.toString('utf8'), {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      });
      return JSON.parse(request.raw.toString('utf8'));
    },
    close: async () => {
      server.closeAllConnections();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
  t?.after(() => receiver.close());
  return receiver;
}

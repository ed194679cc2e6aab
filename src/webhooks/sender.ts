// One attempt of a webhook delivery (docs/internals/decisions.md#webhooks): a Standard Webhooks signed POST
// of the stored payload, no redirect followed, bounded in time and in the bytes of the answer read. Loaded
// only once a delivery is due (deliverer.ts imports it then), so that a process without webhooks never loads
// undici for it.
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { errorCode, readBounded } from '../outbound/bounded-read.ts';
import type { DueWebhookDelivery } from '../store/store.ts';
import { VERSION } from '../version.ts';
import { guardedLookup, isPrivateLiteral, PrivateAddressError } from './address-guard.ts';

/** The most of an answer read; the answer is ignored but for its status, and read only to reuse the connection. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** What came of an attempt: the receiver's status, or why none came. */
export type AttemptResult =
  | { status_code: number }
  | { status_code: null; error: 'timeout' | 'private_address' | (string & {}) };

export class WebhookSender {
  readonly #allowPrivate: boolean;
  readonly #agent: Agent;

  constructor(options: { allowPrivate: boolean }) {
    this.#allowPrivate = options.allowPrivate;
    // The attempt's own timeout (an abort signal) bounds the whole attempt, so undici's per-phase ones are off.
    // Without allowPrivate every name is resolved through the guard when a connection opens.
    this.#agent = new Agent({
      headersTimeout: 0,
      bodyTimeout: 0,
      connect: options.allowPrivate ? {} : { lookup: guardedLookup },
    });
  }

  /**
   * Sends `delivery` (its `payload`) once, within `timeoutMs`. Resolves with the outcome whatever the receiver
   * did; rejects only when `signal` (the deliverer stopping) aborts, with its reason.
   */
  async send(
    delivery: DueWebhookDelivery,
    payload: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<AttemptResult> {
    signal.throwIfAborted();
    let url: URL;
    try {
      url = new URL(delivery.url);
    } catch {
      return { status_code: null, error: 'invalid_url' };
    }
    // A literal address is connected to without a lookup, so the guard looks at it here.
    if (!this.#allowPrivate && isPrivateLiteral(url)) return { status_code: null, error: 'private_address' };

    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error('webhook timeout')), timeoutMs);
    try {
      const sentAt = new Date();
      const headers = {
        'content-type': 'application/json',
        'user-agent': `Parley-Webhooks/${VERSION}`,
        'webhook-id': delivery.event_id,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': new Webhook(delivery.secret).sign(delivery.event_id, sentAt, payload),
      };
      const response = await request(url, {
        dispatcher: this.#agent,
        method: 'POST',
        headers,
        body: payload,
        signal: AbortSignal.any([signal, timeout.signal]),
      });
      // The status is the answer: a body that is large, slow or cut short does not change it.
      await readBounded(response.body, MAX_ANSWER_BYTES).catch(() => {});
      return { status_code: response.statusCode };
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (timeout.signal.aborted) return { status_code: null, error: 'timeout' };
      const code = errorCode(err);
      // The guard refused the address a name resolved to (guardedLookup).
      return { status_code: null, error: code === PrivateAddressError.code ? 'private_address' : code };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Drops every connection, aborting what is still in flight. */
  async close(): Promise<void> {
    await this.#agent.destroy();
  }
}

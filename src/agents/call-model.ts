// Every model call goes through here: an AbortSignal, a total timeout and a stall timeout (no text for too
// long, the wait for the first byte included), and one mapping of failures to the catalogue
// (docs/internals/decisions.md#provider-failures): 504 agent_timeout; by upstream status 502
// agent_misconfigured (401, 403), 503 agent_rate_limited (429), 502 agent_rejected (other 4xx), 502
// agent_unavailable (5xx, or no answer).
import { AppError } from '../errors.ts';
import { type ModelReply, type ModelRequest, type Provider, ProviderError } from './provider.ts';

export interface CallLimits {
  totalMs: number;
  /** The total limit as configured, for the error, when `totalMs` is what is left of it (default: totalMs). */
  totalLimitMs?: number;
  stallMs: number;
  /** Aborts the call from outside (shutdown); a client going away does not. */
  signal?: AbortSignal;
}

export async function callModel(
  provider: Provider,
  request: Omit<ModelRequest, 'signal' | 'onRetry' | 'onActivity' | 'deadline'>,
  limits: CallLimits,
): Promise<ModelReply> {
  const controller = new AbortController();
  let timedOut: 'total' | 'stall' | null = null;
  const expire = (which: 'total' | 'stall') => () => {
    timedOut = which;
    controller.abort(new Error(`model ${which} timeout`));
  };
  const total = setTimeout(expire('total'), limits.totalMs);
  let stall = setTimeout(expire('stall'), limits.stallMs);
  const outside = () => controller.abort(limits.signal?.reason);
  limits.signal?.addEventListener('abort', outside, { once: true });
  try {
    return await provider.generate({
      ...request,
      signal: controller.signal,
      onDelta: (text) => {
        clearTimeout(stall);
        stall = setTimeout(expire('stall'), limits.stallMs);
        request.onDelta(text);
      },
      deadline: Date.now() + limits.totalMs,
      onActivity: () => {
        clearTimeout(stall);
        stall = setTimeout(expire('stall'), limits.stallMs);
      },
      onRetry: (delayMs) => {
        clearTimeout(stall);
        stall = setTimeout(expire('stall'), limits.stallMs + delayMs);
      },
    });
  } catch (err) {
    if (timedOut) {
      const limit = timedOut === 'total' ? (limits.totalLimitMs ?? limits.totalMs) : limits.stallMs;
      throw new AppError(
        'agent_timeout',
        timedOut === 'total'
          ? `The agent did not finish its reply within ${limit} ms.`
          : `The agent sent nothing for ${limit} ms.`,
        { context: { timeout: timedOut, limit_ms: limit }, cause: err },
      );
    }
    throw providerFailure(err, provider.name);
  } finally {
    clearTimeout(total);
    clearTimeout(stall);
    limits.signal?.removeEventListener('abort', outside);
  }
}

/** A provider's failure as the catalogue error a client can act on, with what the upstream said. */
export function providerFailure(err: unknown, provider: string): AppError {
  const status = err instanceof ProviderError ? err.status : undefined;
  if (!(err instanceof ProviderError) || status === undefined || status >= 500) {
    return new AppError('agent_unavailable', undefined, {
      context: { provider, ...(status === undefined ? {} : { upstream_status: status }) },
      cause: err,
    });
  }
  const context = {
    provider,
    upstream_status: status,
    ...(err.upstreamMessage ? { upstream_message: err.upstreamMessage } : {}),
  };
  if (status === 401 || status === 403)
    return new AppError('agent_misconfigured', undefined, { context, cause: err });
  if (status === 429) {
    const retryAfter = String(Math.max(1, err.retryAfterSeconds ?? 1));
    return new AppError('agent_rate_limited', undefined, {
      context,
      headers: { 'retry-after': retryAfter },
      cause: err,
    });
  }
  return new AppError('agent_rejected', undefined, { context, cause: err });
}

// Every model call goes through here: an AbortSignal, a total timeout and a stall timeout (no text for
// too long), and one mapping of failures to the catalogue: 504 agent_timeout, 502 agent_unavailable.
import { AppError } from '../errors.ts';
import type { ModelReply, ModelRequest, Provider } from './provider.ts';

export interface CallLimits {
  totalMs: number;
  stallMs: number;
  /** Aborts the call from outside (shutdown); a client going away does not. */
  signal?: AbortSignal;
}

export async function callModel(
  provider: Provider,
  request: Omit<ModelRequest, 'signal'>,
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
    });
  } catch (err) {
    if (timedOut) {
      const limit = timedOut === 'total' ? limits.totalMs : limits.stallMs;
      throw new AppError(
        'agent_timeout',
        timedOut === 'total'
          ? `The agent did not finish its reply within ${limit} ms.`
          : `The agent sent nothing for ${limit} ms.`,
        { context: { timeout: timedOut, limit_ms: limit }, cause: err },
      );
    }
    throw new AppError('agent_unavailable', undefined, { context: { provider: provider.name }, cause: err });
  } finally {
    clearTimeout(total);
    clearTimeout(stall);
    limits.signal?.removeEventListener('abort', outside);
  }
}

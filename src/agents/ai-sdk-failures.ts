// How the AI SDK's failures reach callModel (ai-sdk-provider.ts makes the calls): each as a ProviderError with
// the upstream's status, its own message (capped) and its Retry-After, an input the model cannot take as a
// refusal (400); and which of them are worth another try, after how long.
import { AISDKError, APICallError, RetryError } from 'ai';
import { ProviderError } from './provider.ts';

const UPSTREAM_MESSAGE_CAP = 500;
/** How servers refuse an input their model cannot take (llama.cpp answers 500 with the first). */
const UNSUPPORTED_INPUT =
  /(image|audio|file|document|pdf)s? input is not supported|does not support (image|audio|file|document|pdf)|only 'text' content type is supported/i;
/** The SDK's errors for an input its provider cannot take (an unsupported file type, say), raised before any request. */
const REFUSED_INPUT = new Set([
  'AI_UnsupportedFunctionalityError',
  'AI_InvalidPromptError',
  'AI_InvalidArgumentError',
  'AI_InvalidDataContentError',
]);
/** The longest Retry-After honoured: a longer one is the upstream saying no for now. */
const MAX_RETRY_WAIT_MS = 30_000;

/** How long to wait before trying again, or undefined when `err` is not worth another try. */
export function retryWait(err: unknown, attempt: number): number | undefined {
  if (!(err instanceof ProviderError)) return undefined;
  const { status } = err;
  if (status !== undefined && status !== 429 && status < 500) return undefined;
  const asked = err.retryAfterSeconds === undefined ? undefined : err.retryAfterSeconds * 1000;
  if (asked !== undefined && asked > MAX_RETRY_WAIT_MS) return undefined;
  return asked ?? 1000 * 2 ** attempt;
}

/**
 * An SDK failure as a ProviderError: the last attempt's status, the server's own message (capped) and its
 * Retry-After. Aborts pass through untouched: callModel tells a timeout from a broken model by them.
 */
export function failure(err: unknown, signal: AbortSignal, provider: string, streamed: boolean): unknown {
  if (signal.aborted || err instanceof ProviderError) return err;
  const last = RetryError.isInstance(err) ? err.lastError : err;
  const statusCode = (last as { statusCode?: unknown } | null)?.statusCode;
  if (APICallError.isInstance(last) || (AISDKError.isInstance(last) && typeof statusCode === 'number')) {
    const call = APICallError.isInstance(last) ? last : undefined;
    const upstream = upstreamMessage(call?.responseBody) ?? last.message;
    const retryAfter = retryAfterSeconds(call?.responseHeaders);
    // A model that cannot take an input says so in many ways, llama.cpp's even with a 500: a refusal.
    const refused = UNSUPPORTED_INPUT.test(upstream);
    const status = typeof statusCode === 'number' && statusCode >= 300 ? statusCode : undefined;
    return new ProviderError(`${provider}: ${upstream}`, {
      // A stream that broke after its 200, or after text, has no failing status: the connection failed.
      ...(refused ? { status: 400 } : status !== undefined && !streamed ? { status } : {}),
      upstreamMessage: upstream.slice(0, UPSTREAM_MESSAGE_CAP),
      ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }),
      cause: err,
    });
  }
  // Refused by the SDK before any request (an input the provider cannot take): the model's side said no.
  if (AISDKError.isInstance(last) && REFUSED_INPUT.has(last.name)) {
    return new ProviderError(`${provider}: ${last.message}`, {
      status: 400,
      upstreamMessage: last.message.slice(0, UPSTREAM_MESSAGE_CAP),
      cause: err,
    });
  }
  if (err instanceof Error && err.name === 'AbortError') return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ProviderError(`${provider}: ${message}`, { cause: err });
}

/** The server's own words: `{error:{message}}` (OpenAI, vLLM, Anthropic), `{error:"…"}` (Ollama), `{message}`. */
function upstreamMessage(body: string | undefined): string | undefined {
  if (!body) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return body.trim().slice(0, UPSTREAM_MESSAGE_CAP) || undefined;
  }
  if (typeof json !== 'object' || json === null) return undefined;
  const { error, message } = json as { error?: unknown; message?: unknown };
  const found =
    typeof error === 'string' ? error : ((error as { message?: unknown } | null)?.message ?? message);
  return typeof found === 'string' && found ? found : undefined;
}

function retryAfterSeconds(headers: Record<string, string> | undefined): number | undefined {
  const value = headers?.['retry-after'];
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

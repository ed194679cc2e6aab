// The model providers that speak to a server, on the AI SDK: `openai` (Chat Completions), `openai-compatible`
// (vLLM, Ollama, llama.cpp server, gateways) and `anthropic` (Messages). Always streamed, so that callModel's
// stall timeout sees text as it arrives. Tools are offered without `execute`: the SDK hands back the model's
// calls after one step and Parley's step loop runs them. A 429, a 5xx or a refused connection before the
// first token is tried again, twice (after the upstream's Retry-After, else 1 s then 2 s; callModel's stall
// timer makes room for the wait, its total timeout does not). Every failure becomes a ProviderError with the
// upstream status, message and Retry-After, which callModel maps to the catalogue.

import { setTimeout as sleep } from 'node:timers/promises';
import {
  AISDKError,
  APICallError,
  type JSONValue,
  jsonSchema,
  type LanguageModel,
  RetryError,
  type ModelMessage as SdkMessage,
  streamText,
  type ToolSet,
  tool,
} from 'ai';
import { newId } from '../ids.ts';
import { fileBlock } from './prompt.ts';
import {
  type ModelMessage,
  type ModelPart,
  type ModelReply,
  type ModelRequest,
  type ModelStopReason,
  type ModelToolCall,
  type ModelToolResult,
  type ModelToolSpec,
  type Provider,
  ProviderError,
} from './provider.ts';

/** The SDK's provider options: `{ openai: {...}, anthropic: {...} }`. */
type ProviderOptions = NonNullable<Parameters<typeof streamText>[0]['providerOptions']>;

/** What an agent sets for every call (DESIGN §13), passed through as the SDK names them. */
export interface CallSettings {
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string[];
  seed?: number;
  /** Provider-specific options, keyed by provider (`{ openai: {...} }`), passed through untouched. */
  providerOptions?: ProviderOptions;
}

export interface AiSdkProviderOptions {
  name: string;
  /** The SDK's model for a model id. */
  model: (modelId: string) => LanguageModel;
  settings: CallSettings;
}

// Inlined as text because most compatible servers (vLLM, Ollama, llama.cpp) reject `file` parts.
const INLINE_MIMES = new Set(['text/plain', 'text/markdown', 'text/csv', 'application/json']);
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
const RETRIES = 2;
/** The longest Retry-After honoured: a longer one is the upstream saying no for now. */
const MAX_RETRY_WAIT_MS = 30_000;

export class AiSdkProvider implements Provider {
  readonly name: string;
  readonly #o: AiSdkProviderOptions;

  constructor(options: AiSdkProviderOptions) {
    this.name = options.name;
    this.#o = options;
  }

  async generate(request: ModelRequest): Promise<ModelReply> {
    for (let attempt = 0; ; attempt++) {
      let streamed = false;
      try {
        return await this.#attempt({
          ...request,
          onDelta: (text) => {
            streamed = true;
            request.onDelta(text);
          },
        });
      } catch (err) {
        const wait = streamed || attempt >= RETRIES ? undefined : retryWait(err, attempt);
        // A retry happens within the call's total time, or not at all: the upstream's failure is the answer.
        if (wait === undefined || Date.now() + wait >= (request.deadline ?? Number.POSITIVE_INFINITY))
          throw err;
        request.onRetry?.(wait);
        await sleep(wait, undefined, { signal: request.signal });
      }
    }
  }

  async #attempt(request: ModelRequest): Promise<ModelReply> {
    const { settings } = this.#o;
    const result = streamText({
      model: this.#o.model(request.model),
      system: request.system,
      messages: request.messages.map(toSdkMessage),
      // Without `execute` the SDK runs no tool and, its default being one step, stops at the model's calls.
      ...(request.tools?.length ? { tools: toolSet(request.tools) } : {}),
      ...(request.tools?.length && request.toolChoice === 'none' ? { toolChoice: 'none' as const } : {}),
      abortSignal: request.signal,
      // Failures come out of fullStream and are answered there; the SDK would also print them.
      onError: () => {},
      // Retried here, where a retry can tell callModel's stall timer that the wait is not the model's silence.
      maxRetries: 0,
      ...(settings.temperature === undefined ? {} : { temperature: settings.temperature }),
      ...(settings.topP === undefined ? {} : { topP: settings.topP }),
      ...(settings.maxTokens === undefined ? {} : { maxOutputTokens: settings.maxTokens }),
      ...(settings.stop === undefined ? {} : { stopSequences: settings.stop }),
      ...(settings.seed === undefined ? {} : { seed: settings.seed }),
      ...(settings.providerOptions === undefined ? {} : { providerOptions: settings.providerOptions }),
    });
    let text = '';
    const toolCalls: ModelToolCall[] = [];
    // What onDelta throws is the caller's own failure, not the model's: it passes through unchanged.
    let own: { error: unknown } | undefined;
    try {
      for await (const part of result.fullStream) {
        // Any part is a sign of life (reasoning, tool input): the stall timer counts silence, not text.
        request.onActivity?.();
        if (part.type === 'text-delta') {
          text += part.text;
          try {
            request.onDelta(part.text);
          } catch (error) {
            own = { error };
            throw error;
          }
        } else if (part.type === 'tool-call') {
          // The wire's id is dropped: the next step sends Parley's own, which the stored call keeps.
          // A botched input is kept as an empty object (what every wire takes back) and answered with an error.
          toolCalls.push(
            part.invalid
              ? { id: newId('call'), name: part.toolName, input: {}, invalid: invalidWhy(part.error) }
              : { id: newId('call'), name: part.toolName, input: part.input },
          );
        } else if (part.type === 'error') {
          throw part.error;
        } else if (part.type === 'abort') {
          throw request.signal.reason ?? new Error('aborted');
        } else if (part.type === 'finish') {
          // Ended without the model's finish (a proxy closed the response): the text may be cut anywhere.
          if (part.finishReason === 'error' || (part.finishReason as string) === 'interrupted') {
            throw new ProviderError(`${this.name}: the stream ended without the model finishing`);
          }
          return {
            text,
            usage: {
              input_tokens: part.totalUsage.inputTokens ?? 0,
              output_tokens: part.totalUsage.outputTokens ?? 0,
            },
            stop_reason: stopReasonOf(part.finishReason),
            tool_calls: toolCalls,
          };
        }
      }
    } catch (err) {
      if (own && err === own.error) throw err;
      throw failure(err, request.signal, this.name, text !== '');
    }
    throw new ProviderError(`${this.name}: the stream ended without finishing`);
  }
}

function invalidWhy(error: unknown): string {
  return error instanceof Error ? error.message : 'not JSON, or not what the tool asks';
}

/** How long to wait before trying again, or undefined when `err` is not worth another try. */
function retryWait(err: unknown, attempt: number): number | undefined {
  if (!(err instanceof ProviderError)) return undefined;
  const { status } = err;
  if (status !== undefined && status !== 429 && status < 500) return undefined;
  const asked = err.retryAfterSeconds === undefined ? undefined : err.retryAfterSeconds * 1000;
  if (asked !== undefined && asked > MAX_RETRY_WAIT_MS) return undefined;
  return asked ?? 1000 * 2 ** attempt;
}

function toolSet(specs: readonly ModelToolSpec[]): ToolSet {
  return Object.fromEntries(
    specs.map((spec) => [
      spec.name,
      tool({ description: spec.description, inputSchema: jsonSchema(spec.input_schema) }),
    ]),
  );
}

function toSdkMessage(message: ModelMessage): SdkMessage {
  if (message.role === 'tool') {
    return { role: 'tool', content: message.results.map(toSdkResult) };
  }
  if (message.role === 'assistant') {
    const text = message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n\n');
    if (!message.tool_calls?.length) return { role: 'assistant', content: text };
    return {
      role: 'assistant',
      content: [
        ...(text === '' ? [] : [{ type: 'text' as const, text }]),
        ...message.tool_calls.map((call) => ({
          type: 'tool-call' as const,
          toolCallId: call.id,
          toolName: call.name,
          input: call.input,
        })),
      ],
    };
  }
  return { role: 'user', content: message.content.map(toSdkPart) };
}

function toSdkResult(result: ModelToolResult) {
  const value = jsonValue(result.output);
  return {
    type: 'tool-result' as const,
    toolCallId: result.call_id,
    toolName: result.name,
    // An error result is flagged as one where the wire can say so (Anthropic's `is_error`).
    output:
      result.status === 'ok' ? { type: 'json' as const, value } : { type: 'error-json' as const, value },
  };
}

/** A tool's output as JSON: it came as JSON (an HTTP body, an MCP result); a missing one is null. */
function jsonValue(output: unknown): JSONValue {
  return JSON.parse(JSON.stringify(output) ?? 'null');
}

function toSdkPart(part: ModelPart) {
  if (part.type === 'text') return { type: 'text' as const, text: part.text };
  const mediaType = part.mime_type;
  if (part.type === 'file' && INLINE_MIMES.has(mediaType.split(';')[0]?.trim().toLowerCase() ?? '')) {
    return { type: 'text' as const, text: fileBlock(part.name, part.data.toString('utf8')) };
  }
  if (part.type === 'image') return { type: 'image' as const, image: part.data, mediaType };
  return { type: 'file' as const, data: part.data, mediaType, filename: part.name };
}

/** The SDK's finish reasons as a stop_reason: a step ending in tool calls, or an unknown one, is `end`. */
function stopReasonOf(finishReason: string): ModelStopReason {
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'content-filter') return 'content_filter';
  return 'end';
}

/**
 * An SDK failure as a ProviderError: the last attempt's status, the server's own message (capped) and its
 * Retry-After. Aborts pass through untouched: callModel tells a timeout from a broken model by them.
 */
function failure(err: unknown, signal: AbortSignal, provider: string, streamed: boolean): unknown {
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

/** The wire protocols Parley speaks to a model server. */
export type RemoteProviderKind = 'openai' | 'openai-compatible' | 'anthropic';

/**
 * A provider for `kind` at `baseUrl`. The SDK packages load on first use: a process whose agents are all
 * scripted never loads them.
 */
export async function remoteProvider(
  kind: RemoteProviderKind,
  options: { baseUrl: string; apiKey?: string; settings: CallSettings },
): Promise<AiSdkProvider> {
  const { baseUrl: baseURL, apiKey = '', settings } = options;
  let model: (modelId: string) => LanguageModel;
  if (kind === 'openai') {
    const { createOpenAI } = await import('@ai-sdk/openai');
    const openai = createOpenAI({ baseURL, apiKey });
    model = (id) => openai.chat(id);
  } else if (kind === 'openai-compatible') {
    const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
    const compatible = createOpenAICompatible({
      name: 'openai-compatible',
      baseURL,
      apiKey,
      includeUsage: true,
    });
    model = (id) => compatible.chatModel(id);
  } else {
    const { createAnthropic } = await import('@ai-sdk/anthropic');
    const anthropic = createAnthropic({ baseURL, apiKey });
    model = (id) => anthropic(id);
  }
  return new AiSdkProvider({ name: kind, model, settings });
}

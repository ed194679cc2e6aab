// The model providers that speak to a server, on the AI SDK: `openai` (Chat Completions), `openai-compatible`
// (vLLM, Ollama, llama.cpp server, gateways) and `anthropic` (Messages). Always streamed, so that callModel's
// stall timeout sees text as it arrives. Tools are offered without `execute`: the SDK hands back the model's
// calls after one step and Parley's step loop runs them. A 429, a 5xx or a refused connection before the
// first token is tried again, twice (after the upstream's Retry-After, else 1 s then 2 s; callModel's stall
// timer makes room for the wait, its total timeout does not). Every failure becomes a ProviderError with the
// upstream status, message and Retry-After (ai-sdk-failures.ts), which callModel maps to the catalogue.
// Messages are given as the SDK takes them by ai-sdk-messages.ts, files as stand-ins the providers' fetch
// replaces with their base64 as it streams the body (file-stand-ins.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import { type LanguageModel, streamText } from 'ai';
import { newId } from '../ids.ts';
import { failure, retryWait } from './ai-sdk-failures.ts';
import { toolSet, toSdkMessage } from './ai-sdk-messages.ts';
import { FileStandIns, fetchWithFiles } from './file-stand-ins.ts';
import {
  type ModelReply,
  type ModelRequest,
  type ModelStopReason,
  type ModelToolCall,
  type Provider,
  ProviderError,
} from './provider.ts';

/** The SDK's provider options: `{ openai: {...}, anthropic: {...} }`. */
type ProviderOptions = NonNullable<Parameters<typeof streamText>[0]['providerOptions']>;

/**
 * What an agent sets for every call (docs/internals/decisions.md#providers-and-model-settings), passed
 * through as the SDK names them.
 */
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

/** Further attempts after a failure worth another try (ai-sdk-failures.ts says which, and after how long). */
const RETRIES = 2;

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
    const files = new FileStandIns();
    try {
      return await this.#stream(request, files);
    } finally {
      files.release();
    }
  }

  async #stream(request: ModelRequest, files: FileStandIns): Promise<ModelReply> {
    const { settings } = this.#o;
    const result = streamText({
      model: this.#o.model(request.model),
      system: request.system,
      messages: request.messages.map((message) => toSdkMessage(message, files)),
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
              cached_input_tokens: part.totalUsage.inputTokenDetails?.cacheReadTokens ?? 0,
              reasoning_tokens: part.totalUsage.outputTokenDetails?.reasoningTokens ?? 0,
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

/** The SDK's finish reasons as a stop_reason: a step ending in tool calls, or an unknown one, is `end`. */
function stopReasonOf(finishReason: string): ModelStopReason {
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'content-filter') return 'content_filter';
  return 'end';
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
  // Files go out as a stream of their base64 made from their bytes (file-stand-ins.ts).
  const fetch = fetchWithFiles();
  let model: (modelId: string) => LanguageModel;
  if (kind === 'openai') {
    const { createOpenAI } = await import('@ai-sdk/openai');
    const openai = createOpenAI({ baseURL, apiKey, fetch });
    model = (id) => openai.chat(id);
  } else if (kind === 'openai-compatible') {
    const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
    const compatible = createOpenAICompatible({
      name: 'openai-compatible',
      baseURL,
      apiKey,
      includeUsage: true,
      fetch,
    });
    model = (id) => compatible.chatModel(id);
  } else {
    const { createAnthropic } = await import('@ai-sdk/anthropic');
    const anthropic = createAnthropic({ baseURL, apiKey, fetch });
    model = (id) => anthropic(id);
  }
  return new AiSdkProvider({ name: kind, model, settings });
}

// The hand-written Chat Completions client that the `openai` provider was before the AI SDK (issue 16), kept
// only as the baseline of bench/provider-overhead.ts: what a model call costs without the SDK.
import { createParser } from 'eventsource-parser';
import { type Dispatcher, Pool } from 'undici';
import { fileBlock } from '../src/agents/prompt.ts';
import type {
  ModelMessage,
  ModelPart,
  ModelReply,
  ModelRequest,
  ModelStopReason,
  Provider,
  Usage,
} from '../src/agents/provider.ts';
import { ProviderError } from '../src/agents/provider.ts';

export interface OpenAiOptions {
  baseUrl: string;
  apiKey?: string;
  temperature?: number;
  maxTokens?: number;
}

// Inlined as text because most compatible servers (vLLM, Ollama, llama.cpp) reject `file` parts.
const INLINE_MIMES = new Set(['text/plain', 'text/markdown', 'text/csv', 'application/json']);
const ERROR_BODY_CAP = 4096;
// A line or event bigger than this is a broken server, not a reply worth buffering.
const SSE_BUFFER_CAP = 1 << 20;

type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } }
  | { type: 'file'; file: { filename: string; file_data: string } };

interface Chunk {
  choices?: { delta?: { content?: unknown }; finish_reason?: unknown }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null;
  error?: unknown;
}

export class OpenAiProvider implements Provider {
  readonly name = 'openai';
  readonly #options: OpenAiOptions;
  readonly #pool: Pool;
  readonly #path: string;

  constructor(options: OpenAiOptions) {
    const url = new URL(options.baseUrl);
    this.#options = options;
    this.#pool = new Pool(url.origin);
    this.#path = `${url.pathname.replace(/\/+$/, '')}/chat/completions${url.search}`;
  }

  async generate(request: ModelRequest): Promise<ModelReply> {
    const { signal } = request;
    const { apiKey } = this.#options;
    const auth = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
    const headers = { 'content-type': 'application/json', accept: 'text/event-stream', ...auth };
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#pool.request({
        method: 'POST',
        path: this.#path,
        headers,
        body: JSON.stringify(this.#body(request)),
        signal,
      });
    } catch (err) {
      throw failure(err, signal);
    }
    const { statusCode, body } = response;
    try {
      if (statusCode < 200 || statusCode >= 300) {
        const detail = errorDetail(await readCapped(body, signal));
        const message = `chat completions answered status ${statusCode}${detail ? `: ${detail}` : ''}`;
        throw new ProviderError(message, { status: statusCode });
      }
      return await readStream(body, request);
    } finally {
      // Frees the socket when we stop early; a no-op once the body has ended.
      if (!body.destroyed) body.on('error', () => {}).destroy();
    }
  }

  close(): Promise<void> {
    return this.#pool.close();
  }

  #body(request: ModelRequest): Record<string, unknown> {
    const { temperature, maxTokens } = this.#options;
    return {
      model: request.model,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'system', content: request.system }, ...request.messages.map(toMessage)],
      ...(temperature === undefined ? {} : { temperature }),
      ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
    };
  }
}

function toMessage(message: ModelMessage): { role: string; content: string | ContentPart[] } {
  // The baseline of a plain chat call: tool steps are the AI SDK's to send.
  if (message.role === 'tool') throw new Error('The hand-written client sends no tool results');
  const { role, content } = message;
  if (role === 'assistant' || content.every((part) => part.type === 'text')) {
    const texts = content.flatMap((part) => (part.type === 'text' ? [part.text] : []));
    return { role, content: texts.join('\n\n') };
  }
  return { role, content: content.map(toPart) };
}

function toPart(part: ModelPart): ContentPart {
  if (part.type === 'text') return { type: 'text', text: part.text };
  if (part.type === 'file' && INLINE_MIMES.has(part.mime_type.split(';')[0]?.trim().toLowerCase() ?? '')) {
    return { type: 'text', text: fileBlock(part.name, part.data.toString('utf8')) };
  }
  const url = `data:${part.mime_type};base64,${part.data.toString('base64')}`;
  if (part.type === 'image') return { type: 'image_url', image_url: { url } };
  return { type: 'file', file: { filename: part.name, file_data: url } };
}

async function readStream(body: Dispatcher.ResponseData['body'], request: ModelRequest): Promise<ModelReply> {
  let text = '';
  let usage: Usage = { input_tokens: 0, output_tokens: 0 };
  let done = false;
  let finished = false;
  let stopReason: ModelStopReason = 'end';
  const parser = createParser({
    maxBufferSize: SSE_BUFFER_CAP,
    onError: (err) => {
      if (err.type === 'max-buffer-size-exceeded')
        throw new ProviderError('stream event too large', { cause: err });
    },
    onEvent: (event) => {
      if (done) return;
      if (event.data.trim() === '[DONE]') {
        done = true;
        return;
      }
      const chunk = parseChunk(event.data);
      if (chunk.error)
        throw new ProviderError(`stream error: ${messageOf(chunk) ?? JSON.stringify(chunk.error)}`);
      const choice = chunk.choices?.[0];
      const piece = choice?.delta?.content;
      if (typeof piece === 'string' && piece !== '') {
        text += piece;
        request.onDelta(piece);
      }
      if (choice?.finish_reason) {
        finished = true;
        stopReason = stopReasonOf(choice.finish_reason);
      }
      if (chunk.usage) {
        usage = {
          input_tokens: Number(chunk.usage.prompt_tokens) || 0,
          output_tokens: Number(chunk.usage.completion_tokens) || 0,
        };
      }
    },
  });
  const decoder = new TextDecoder();
  for await (const bytes of network(body, request.signal)) {
    parser.feed(decoder.decode(bytes, { stream: true }));
    if (done) break;
  }
  if (!done && !finished) throw new ProviderError('stream ended early');
  return { text, usage, stop_reason: stopReason, tool_calls: [] };
}

/** Chat Completions' `finish_reason`: `stop`, `tool_calls` and whatever a server invents are a finished reply. */
function stopReasonOf(finishReason: unknown): ModelStopReason {
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'content_filter') return 'content_filter';
  return 'end';
}

function parseChunk(data: string): Chunk {
  try {
    const chunk: unknown = JSON.parse(data);
    return typeof chunk === 'object' && chunk !== null ? chunk : {};
  } catch (err) {
    throw new ProviderError('stream sent invalid JSON', { cause: err });
  }
}

// Only failures of the connection itself become ProviderErrors; a throwing onDelta stays what it is.
async function* network(body: AsyncIterable<Buffer>, signal: AbortSignal): AsyncGenerator<Buffer> {
  try {
    for await (const bytes of body) yield bytes;
  } catch (err) {
    throw failure(err, signal);
  }
}

// Aborts pass through untouched: callModel tells a timeout from a broken model by them.
function failure(err: unknown, signal: AbortSignal): unknown {
  if (signal.aborted || err instanceof ProviderError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ProviderError(`chat completions request failed: ${message}`, { cause: err });
}

async function readCapped(body: AsyncIterable<Buffer>, signal: AbortSignal): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const bytes of body) {
      chunks.push(bytes);
      size += bytes.length;
      if (size >= ERROR_BODY_CAP) break;
    }
  } catch (err) {
    // The status alone is worth reporting when the error body is lost, unless we were aborted.
    if (signal.aborted) throw err;
  }
  return Buffer.concat(chunks).subarray(0, ERROR_BODY_CAP).toString('utf8');
}

/** The server's own words: `{error:{message}}` (OpenAI, vLLM), `{error:"…"}` (Ollama), `{message}`. */
function messageOf(json: unknown): string | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const { error, message } = json as { error?: unknown; message?: unknown };
  const found =
    typeof error === 'string' ? error : ((error as { message?: unknown } | null)?.message ?? message);
  return typeof found === 'string' && found ? found : undefined;
}

function errorDetail(raw: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    // not JSON: the raw text is the best we have
  }
  return messageOf(json) ?? (raw.trim().slice(0, 300) || undefined);
}

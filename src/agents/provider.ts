// What a model provider is to the runtime: one call that turns a system prompt and a conversation into
// a reply, streaming text deltas as they come. Timeouts and error mapping live in call-model.ts.

/** A part of a message as the model sees it; files are already read from the store. */
export type ModelPart =
  | { type: 'text'; text: string }
  | { type: 'image'; mime_type: string; data: Buffer }
  | { type: 'file'; name: string; mime_type: string; data: Buffer };

export interface ModelMessage {
  role: 'user' | 'assistant';
  content: ModelPart[];
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export interface ModelRequest {
  model: string;
  /** The assembled system prompt: instructions, `<session_context>` and `<user_info>` blocks. */
  system: string;
  messages: ModelMessage[];
  /** Aborted on timeout or shutdown; a provider must stop its request when it fires. */
  signal: AbortSignal;
  /** Called with each piece of text as it arrives (streaming and stall detection). */
  onDelta: (text: string) => void;
  /**
   * The provider waits `delayMs` before trying again (a 429 or 5xx before the first token): the wait is no
   * silence of the model, so callModel's stall timer makes room for it. Set by callModel.
   */
  onRetry?: (delayMs: number) => void;
  /** Any sign of life from the provider (reasoning, tool input, text): the stall timer counts silence. */
  onActivity?: () => void;
  /** When the call's total time is up (epoch ms): a retry that could not start before it is not made. */
  deadline?: number;
}

/**
 * Why the model stopped: it finished (`end`), reached the agent's `max_tokens` (the text is cut), or its
 * provider withheld the rest (`content_filter`). The stored column also takes `max_steps` and `error`.
 */
export type ModelStopReason = 'end' | 'max_tokens' | 'content_filter';

export interface ModelReply {
  text: string;
  usage: Usage;
  stop_reason: ModelStopReason;
}

export interface Provider {
  readonly name: string;
  generate(request: ModelRequest): Promise<ModelReply>;
}

/** A provider's failure that is the model's fault (bad status, broken stream), not ours: 502. */
export class ProviderError extends Error {
  override name = 'ProviderError';
  /** The upstream HTTP status; undefined when no answer came (refused, reset, a broken stream). */
  readonly status: number | undefined;
  /** What the upstream said, as a client may be shown it (capped). */
  readonly upstreamMessage: string | undefined;
  /** The upstream's Retry-After, in seconds, on a 429 or 503. */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    message: string,
    options: { status?: number; upstreamMessage?: string; retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = options.status;
    this.upstreamMessage = options.upstreamMessage;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

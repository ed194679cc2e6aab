// What a model provider is to the runtime: one call that turns a system prompt and a conversation into
// a reply, streaming text deltas as they come. Timeouts and error mapping live in call-model.ts.

/** A part of a message as the model sees it; files are already read from the store. */
export type ModelPart =
  | { type: 'text'; text: string }
  | { type: 'image'; mime_type: string; data: Buffer }
  | { type: 'file'; name: string; mime_type: string; data: Buffer };

/** A tool the model may call: its name, what it is for, and the JSON Schema of its input. */
export interface ModelToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/** A call the model asked for. `id` is Parley's (`call_…`), given back with the call's result. */
export interface ModelToolCall {
  id: string;
  name: string;
  input: unknown;
  /** Set when the model's input could not be used (not JSON, or not what the schema asks): why. */
  invalid?: string;
}

/** What a tool call gave, as the model is shown it on the next step. */
export interface ModelToolResult {
  call_id: string;
  name: string;
  status: 'ok' | 'error';
  output: unknown;
}

/** A message of the conversation. */
export interface ContentMessage {
  role: 'user' | 'assistant';
  content: ModelPart[];
  /** On an assistant step only: the calls it asked for; their results follow in a `tool` message. */
  tool_calls?: readonly ModelToolCall[];
}

/** The results of the previous assistant step's tool calls. */
export interface ToolResultsMessage {
  role: 'tool';
  results: readonly ModelToolResult[];
}

export type ModelMessage = ContentMessage | ToolResultsMessage;

/** A call's tokens as its provider reported them; cached input tokens are counted in `input_tokens` too. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens?: number;
  reasoning_tokens?: number;
}

export interface ModelRequest {
  model: string;
  /** The assembled system prompt: instructions, `<session_context>` and `<user_info>` blocks. */
  system: string;
  messages: ModelMessage[];
  /** The tools the model may call in this step; absent or empty, it must answer in text. */
  tools?: readonly ModelToolSpec[];
  /**
   * `none`: the tools are declared (a history with tool calls needs them, for some providers) but the model
   * must answer in text: the last call of a turn that used up its steps.
   */
  toolChoice?: 'auto' | 'none';
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
  /**
   * The tools the model asked to call, in its order; empty when it answered. The provider gives each call a
   * fresh `call_…` id (ids.ts `newId('call')`): the wire's own ids are not kept, the next step sends Parley's.
   */
  tool_calls: ModelToolCall[];
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

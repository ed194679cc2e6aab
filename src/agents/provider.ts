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
}

export interface ModelReply {
  text: string;
  usage: Usage;
}

export interface Provider {
  readonly name: string;
  generate(request: ModelRequest): Promise<ModelReply>;
}

/** A provider's failure that is the model's fault (bad status, broken stream), not ours: 502. */
export class ProviderError extends Error {
  override name = 'ProviderError';
  readonly status: number | undefined;
  constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.status = options.status;
  }
}

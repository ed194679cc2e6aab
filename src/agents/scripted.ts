// The scripted provider: deterministic, no network; the embedded default, used by tests and benchmarks.
// Its reply echoes what it was given (the user's name, the session context, the last message), so that
// prompt assembly is visible from outside. `[[fail]]` or `[[stall]]` in the last message simulate a
// failing or silent model; an agent's `max_tokens` cuts the reply at that many words, as a real model would.
import { setTimeout as sleep } from 'node:timers/promises';
import { type ModelReply, type ModelRequest, type Provider, ProviderError } from './provider.ts';

const unescapeBlock = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** The lines of a tagged block of the system prompt. */
function blockLines(system: string, tag: string): string[] {
  const match = new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`).exec(system);
  return match?.[1] ? match[1].split('\n').map(unescapeBlock) : [];
}

export function scriptedReply(request: Pick<ModelRequest, 'system' | 'messages'>): string {
  const last = request.messages.findLast((m) => m.role === 'user');
  const said = last?.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join(' ') ?? '';
  const attachments = last?.content.filter((p) => p.type !== 'text').length ?? 0;
  const nameLine = blockLines(request.system, 'user_info').find((l) => l.startsWith('name: '));
  const name = nameLine ? String(JSON.parse(nameLine.slice('name: '.length))) : undefined;
  const context = blockLines(request.system, 'session_context');
  const parts = [name ? `Hello ${name}!` : 'Hello!', `You said: "${said}".`];
  if (context.length > 0) parts.push(`Context: ${context.join(', ')}.`);
  if (attachments > 0) parts.push(`Attachments: ${attachments}.`);
  return parts.join(' ');
}

export class ScriptedProvider implements Provider {
  readonly name = 'scripted';
  readonly #tokenDelayMs: number;
  readonly #maxTokens: number | undefined;

  /** `maxTokens`: the agent's `max_tokens`; a longer reply stops there with stop_reason `max_tokens`. */
  constructor(options: { tokenDelayMs: number; maxTokens?: number }) {
    this.#tokenDelayMs = options.tokenDelayMs;
    this.#maxTokens = options.maxTokens;
  }

  async generate(request: ModelRequest): Promise<ModelReply> {
    const whole = scriptedReply(request);
    if (whole.includes('[[fail]]'))
      throw new ProviderError('The scripted model was asked to fail', { status: 500 });
    if (whole.includes('[[stall]]')) await sleep(2 ** 31 - 1, undefined, { signal: request.signal });
    const words = whole.split(/(?<= )/);
    const cut = this.#maxTokens !== undefined && words.length > this.#maxTokens;
    const tokens = cut ? words.slice(0, this.#maxTokens) : words;
    const text = tokens.join('');
    for (const token of tokens) {
      if (this.#tokenDelayMs > 0) await sleep(this.#tokenDelayMs, undefined, { signal: request.signal });
      request.signal.throwIfAborted();
      request.onDelta(token);
    }
    // About four characters a token, like the real ones; enough for usage figures that move with input.
    const seen = request.messages.reduce(
      (n, m) => n + m.content.reduce((k, p) => k + (p.type === 'text' ? p.text.length : 1000), 0),
      request.system.length,
    );
    return {
      text,
      usage: { input_tokens: Math.ceil(seen / 4), output_tokens: tokens.length },
      stop_reason: cut ? 'max_tokens' : 'end',
    };
  }
}

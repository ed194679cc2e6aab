// The scripted provider: deterministic, no network; the embedded default, used by tests and benchmarks.
// Its reply echoes what it was given (the user's name, the session context, the instructions a request added
// for its turn, the last message), so that prompt assembly is visible from outside. `[[fail]]` or `[[stall]]`
// in the last message simulate a failing or silent model; an agent's `max_tokens` cuts the reply at that many
// words, as a real model would.
// `[[tool:NAME {json}]]` asks for a tool call in the turn's first step (`[[tool@N:…]]` in step N; several in
// one step run in parallel), so that the step loop is testable offline; the final reply then lists what the
// tools gave.
import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from '../ids.ts';
import {
  type ContentMessage,
  type ModelMessage,
  type ModelReply,
  type ModelRequest,
  type ModelToolCall,
  type Provider,
  ProviderError,
} from './provider.ts';

const unescapeBlock = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** The lines of a tagged block of the system prompt. */
function blockLines(system: string, tag: string): string[] {
  const match = new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`).exec(system);
  return match?.[1] ? match[1].split('\n').map(unescapeBlock) : [];
}

const isUser = (m: ModelMessage): m is ContentMessage => m.role === 'user';

/** `[[tool:NAME]]`, `[[tool:NAME {"a":1}]]`, `[[tool@2:NAME …]]`. */
const TOOL_DIRECTIVE = /\[\[tool(?:@(\d+))?:([A-Za-z0-9_-]+)(?:\s+(\{.*?\}))?\]\]/g;

/** The calls the user's message scripts for the turn's current step (one more than the steps answered). */
function scriptedCalls(request: Pick<ModelRequest, 'messages'>): ModelToolCall[] {
  const lastUser = request.messages.findLastIndex(isUser);
  const last = request.messages[lastUser];
  if (!last || last.role === 'tool') return [];
  const step = 1 + request.messages.slice(lastUser + 1).filter((m) => m.role === 'tool').length;
  const said = last.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join(' ');
  return [...said.matchAll(TOOL_DIRECTIVE)]
    .filter((match) => Number(match[1] ?? 1) === step)
    .map((match) => scriptedCall(match[2] ?? '', match[3] ?? '{}'));
}

/** A call as a model writes it; input that is not JSON is a botched call, as a real model's can be. */
function scriptedCall(name: string, input: string): ModelToolCall {
  try {
    return { id: newId('call'), name, input: JSON.parse(input) };
  } catch (err) {
    return { id: newId('call'), name, input: {}, invalid: (err as Error).message };
  }
}

/** What the turn's tools gave, as the final reply tells it. */
function toolReport(request: Pick<ModelRequest, 'messages'>): string {
  const lastUser = request.messages.findLastIndex(isUser);
  const results = request.messages.slice(lastUser + 1).flatMap((m) => (m.role === 'tool' ? m.results : []));
  if (results.length === 0) return '';
  return ` Tools: ${results.map((r) => `${r.name} ${r.status} ${JSON.stringify(r.output)}`).join('; ')}.`;
}

export function scriptedReply(request: Pick<ModelRequest, 'system' | 'messages'>): string {
  const last = request.messages.findLast(isUser);
  const said = last?.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join(' ') ?? '';
  const attachments = last?.content.filter((p) => p.type !== 'text').length ?? 0;
  const nameLine = blockLines(request.system, 'user_info').find((l) => l.startsWith('name: '));
  const name = nameLine ? String(JSON.parse(nameLine.slice('name: '.length))) : undefined;
  const context = blockLines(request.system, 'session_context');
  const added = blockLines(request.system, 'request_instructions');
  const parts = [name ? `Hello ${name}!` : 'Hello!', `You said: "${said}".`];
  if (context.length > 0) parts.push(`Context: ${context.join(', ')}.`);
  if (added.length > 0) parts.push(`Instructions for this turn: ${added.join(' ')}.`);
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
    const calls = request.tools?.length && request.toolChoice !== 'none' ? scriptedCalls(request) : [];
    const whole =
      calls.length > 0
        ? `Let me use ${calls.map((c) => c.name).join(' and ')}.`
        : scriptedReply(request) + toolReport(request);
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
      (n, m) =>
        n +
        (m.role === 'tool'
          ? JSON.stringify(m.results).length
          : m.content.reduce((k, p) => k + (p.type === 'text' ? p.text.length : 1000), 0)),
      request.system.length,
    );
    return {
      text,
      usage: { input_tokens: Math.ceil(seen / 4), output_tokens: tokens.length },
      stop_reason: cut ? 'max_tokens' : 'end',
      tool_calls: calls,
    };
  }
}

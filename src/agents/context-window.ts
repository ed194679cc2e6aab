// The context window (docs/internals/decisions.md#the-context-window): which of a turn's history fits the
// agent's `context_window` with its `max_tokens` kept free for the reply, by estimated tokens, and whether a
// new message can fit at all.
import type { ContentBlock, MessageRecord } from '../store/store.ts';
import { ProviderError } from './provider.ts';
import { type CountTokens, loadTokenCounter } from './token-count.ts';

/** The two catalogue settings that size a model call. */
export interface WindowSettings {
  /** Tokens the model takes in all, prompt and reply. */
  context_window: number;
  /** Tokens kept free for the reply. */
  max_tokens: number;
}

/**
 * What a file block is counted as. Its real cost is the provider's business (an image is 85 to a few
 * thousand tokens by model; a text file is inlined whole), and reading it to know would load the files of
 * messages that are then dropped; a miss is caught by the overflow retry.
 */
export const FILE_TOKENS = 1_000;
/** What a chat template adds around each message (role, separators), as OpenAI counts it. */
export const MESSAGE_TOKENS = 4;
/** What a chat template adds once: the system message's wrapping and the reply's priming. */
export const PROMPT_TOKENS = 8;

/** The estimate of one message: its text by `count`, its files by FILE_TOKENS, plus the template's share. */
export function contentTokens(content: readonly ContentBlock[], count: CountTokens, cap: number): number {
  let tokens = MESSAGE_TOKENS;
  for (const block of content) {
    tokens += block.type === 'text' ? count(block.text, Math.max(0, cap - tokens)) : FILE_TOKENS;
    if (tokens > cap) break;
  }
  return tokens;
}

/**
 * An upper bound of the estimate that needs no tokenizer: a byte-level BPE token is at least one UTF-8
 * byte, so a history whose bytes fit is known to fit without counting (most turns of short chats).
 */
export const byteBound: CountTokens = (text) => Buffer.byteLength(text, 'utf8');

/** Tokens the prompt may take: the window less the reply's reserve, divided by the agent's correction. */
export const promptBudget = (settings: WindowSettings, ratio: number) =>
  Math.max(0, Math.floor((settings.context_window - settings.max_tokens) / ratio));

/**
 * How many of the newest messages fit with the system prompt in `budget`, taken newest first until one
 * does not (so the model sees an unbroken recent stretch); the newest is always kept, even alone over
 * the budget (a turn's new message was checked when it arrived).
 */
export function fitNewest(systemTokens: number, messageTokens: readonly number[], budget: number): number {
  return keepNewest(systemTokens, messageTokens.length, (i) => messageTokens[i] ?? 0, budget).length;
}

/**
 * fitNewest's rule on sizes asked for newest first, each with the room left (a size past it need not be
 * exact), so that messages older than the first one left out are never counted. Answers the kept sizes,
 * oldest first.
 */
function keepNewest(
  systemTokens: number,
  length: number,
  sizeOf: (index: number, room: number) => number,
  budget: number,
): number[] {
  let used = systemTokens + PROMPT_TOKENS;
  const kept: number[] = [];
  for (let i = length - 1; i >= 0; i--) {
    const size = sizeOf(i, Math.max(0, budget - used));
    used += size;
    if (kept.length > 0 && used > budget) break;
    kept.push(size);
  }
  return kept.reverse();
}

/**
 * A cut history from its first user message on: some chat templates (Mistral's, Llama 2's) refuse a
 * conversation whose first message is the assistant's, and a cut can land on a reply. The newest message stays
 * whatever it is.
 */
export function fromUser<T extends { role: string }>(messages: readonly T[]): T[] {
  let start = 0;
  while (start < messages.length - 1 && messages[start]?.role === 'assistant') start++;
  return messages.slice(start);
}

/**
 * What the call after an overflow sends: the newer half of what overflowed (the newest message always), from
 * its first user message.
 */
export const halveHistory = <T extends { role: string }>(messages: readonly T[]): T[] =>
  fromUser(messages.slice(Math.floor(messages.length / 2)));

/** The estimate of a prompt: the system prompt and the messages, as fitNewest adds them. */
export const promptTokens = (systemTokens: number, messageTokens: readonly number[]) =>
  messageTokens.reduce((sum, n) => sum + n, systemTokens + PROMPT_TOKENS);

/**
 * Whether a failed model call says the prompt was over the model's context: a 400 (or 413) whose message
 * is what llama.cpp's server, OpenAI, vLLM or Anthropic write then. Looks through callModel's wrapping.
 */
export function isContextOverflow(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (!(e instanceof ProviderError)) continue;
    if (e.status !== 400 && e.status !== 413) return false;
    return OVERFLOW_MESSAGES.test(e.message);
  }
  return false;
}

const OVERFLOW_MESSAGES =
  /exceeds the available context size|maximum context length|context_length_exceeded|prompt is too long|exceed context limit/i;

/**
 * The per-agent correction of the estimate: reported input tokens over estimated ones, as providers report
 * them (the model's own tokenizer and chat template differ from the estimating one). Bounded, so that one
 * odd report cannot make an agent refuse everything or overflow every turn.
 */
export class EstimateCorrection {
  static readonly MIN = 0.5;
  static readonly MAX = 4;
  // Keyed by the catalogue's agent object: each app (and each test's catalogue) learns its own.
  readonly #ratios = new WeakMap<object, number>();

  ratio(agent: object): number {
    return this.#ratios.get(agent) ?? 1;
  }

  /**
   * A call sent `estimate` tokens by our count and the provider reported `reported`. A larger ratio is
   * taken at once (an underestimate risks an overflow), a smaller one a quarter of the way (one short
   * reply should not undo it). Estimates with files say little about text and are skipped by the caller.
   */
  observe(agent: object, estimate: number, reported: number): void {
    if (!(estimate >= 32) || !(reported > 0)) return;
    const seen = reported / estimate;
    const now = this.ratio(agent);
    this.#set(agent, seen > now ? seen : now + (seen - now) / 4);
  }

  /** The provider refused a prompt the estimate let through: count more conservatively from now on. */
  overflowed(agent: object): void {
    this.#set(agent, this.ratio(agent) * 1.25);
  }

  #set(agent: object, ratio: number) {
    this.#ratios.set(agent, Math.min(EstimateCorrection.MAX, Math.max(EstimateCorrection.MIN, ratio)));
  }
}

/** A turn's history cut to the window: what is sent, and the estimate of it. */
export interface WindowPlan {
  /** The newest messages that fit, oldest first, from a user message on; the newest always. */
  messages: MessageRecord[];
  /** The estimate of the system prompt, and of each kept message; null when the bytes alone showed a fit. */
  systemTokens: number | null;
  tokens: number[] | null;
  /** The estimate the prompt had to stay within; one above it (a newest message alone) is not exact. */
  budget: number;
}

/** Where a record keeps its byte bound (a symbol: invisible to JSON and to the record's type). */
const BYTE_SIZE = Symbol('byteSize');

/**
 * Each stored message's byte bound, once: a session's cached history keeps the same records turn after turn,
 * and every turn sums them. Kept on the record itself, since a WeakMap lookup per message per turn cost more
 * than the sum.
 */
function byteSize(message: MessageRecord): number {
  const memo = message as MessageRecord & { [BYTE_SIZE]?: number };
  let size = memo[BYTE_SIZE];
  if (size === undefined) {
    size = contentTokens(message.content, byteBound, Infinity);
    // Not enumerable: a copy of the record (spread, assign) must not carry a size that may not be its own.
    Object.defineProperty(memo, BYTE_SIZE, { value: size });
  }
  return size;
}

/**
 * Cuts `history` oldest-first so that the estimated prompt (system prompt and messages) plus the reply's
 * reserve fits the window, the estimate multiplied by the agent's `ratio`, and never starts it with a reply.
 * Counts no token when the bytes already fit; loads the tokenizer (`counter`) otherwise.
 */
export async function planWindow(
  system: string,
  history: readonly MessageRecord[],
  settings: WindowSettings,
  ratio: number,
  counter: () => Promise<CountTokens> = loadTokenCounter,
): Promise<WindowPlan> {
  const budget = promptBudget(settings, ratio);
  const bytes = history.reduce((sum, m) => sum + byteSize(m), byteBound(system, Infinity));
  if (bytes + PROMPT_TOKENS <= budget) {
    // The history a turn reads is already its newest messages, and may start with a reply too.
    return { messages: fromUser(history), systemTokens: null, tokens: null, budget };
  }
  const count = await counter();
  const systemTokens = count(system, budget + 1);
  // Counting stops at the room left, and at the first message that does not fit: a turn counts about its
  // budget's worth of tokens however long the history (a stored message is counted once while cached).
  const sizeOf = (i: number, room: number) => {
    const message = history[i];
    return message ? messageTokens(message, count, room) : 0;
  };
  const fitting = keepNewest(systemTokens, history.length, sizeOf, budget);
  const messages = fromUser(history.slice(history.length - fitting.length));
  const tokens = fitting.slice(fitting.length - messages.length);
  return { messages, systemTokens, tokens, budget };
}

/**
 * Whether a new message fits the window alone with the system prompt (and the reply's reserve); one that
 * does not can never be answered. Answers the estimate and the budget, for the refusal's message.
 */
export async function fitsAlone(
  system: string,
  content: readonly ContentBlock[],
  settings: WindowSettings,
  ratio: number,
  counter: () => Promise<CountTokens> = loadTokenCounter,
): Promise<{ fits: boolean; tokens: number; budget: number }> {
  const budget = promptBudget(settings, ratio);
  const bytes = byteBound(system, Infinity) + PROMPT_TOKENS + contentTokens(content, byteBound, Infinity);
  if (bytes <= budget) return { fits: true, tokens: bytes, budget };
  const count = await counter();
  const tokens = count(system, budget + 1) + PROMPT_TOKENS + contentTokens(content, count, budget + 1);
  return { fits: tokens <= budget, tokens, budget };
}

// A stored message never changes, and the session's cached history hands the same records to each turn,
// so a message is counted once while it is cached. A count stopped at a cap is kept as a lower bound.
// Kept per counter, so that a test's counter never reads the tokenizer's counts.
const counted = new WeakMap<CountTokens, WeakMap<MessageRecord, { tokens: number; exact: boolean }>>();

function messageTokens(message: MessageRecord, count: CountTokens, cap: number): number {
  let cache = counted.get(count);
  if (!cache) {
    cache = new WeakMap();
    counted.set(count, cache);
  }
  const known = cache.get(message);
  if (known && (known.exact || known.tokens > cap)) return known.tokens;
  const tokens = contentTokens(message.content, count, cap);
  cache.set(message, { tokens, exact: tokens <= cap });
  return tokens;
}

/** The process's corrections, one per agent of each catalogue. */
export const estimateCorrection = new EstimateCorrection();

// The context window's pure parts: the estimate of a message, which of the newest messages fit, the halving
// of a retry, the overflow recognizer, the per-agent correction, and the plan a turn sends; plus the real
// tokenizer's count.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseCatalogue } from '../../src/agents/catalogue.ts';
import {
  contentTokens,
  EstimateCorrection,
  FILE_TOKENS,
  fitNewest,
  fitsAlone,
  halveHistory,
  isContextOverflow,
  MESSAGE_TOKENS,
  PROMPT_TOKENS,
  planWindow,
  promptBudget,
  promptTokens,
} from '../../src/agents/context-window.ts';
import { ProviderError } from '../../src/agents/provider.ts';
import { type CountTokens, loadTokenCounter } from '../../src/agents/token-count.ts';
import { ConfigError } from '../../src/config.ts';
import { AppError } from '../../src/errors.ts';
import type { ContentBlock, MessageRecord } from '../../src/store/store.ts';

/** A counter of one token per four characters, stopping past its cap as the real one does. */
const quarter: CountTokens = (text, cap) => Math.min(Math.ceil(text.length / 4), cap + 1);
const quarterCounter = async () => quarter;
const noCounter = async (): Promise<CountTokens> => {
  throw new Error('the tokenizer was loaded although the bytes fit');
};

let nextId = 0;
function message(text: string, files: ContentBlock[] = []): MessageRecord {
  return {
    id: `msg_${nextId++}`,
    session_id: 'ses_1',
    role: nextId % 2 ? 'user' : 'assistant',
    content: [{ type: 'text', text }, ...files],
    metadata: null,
    created_at: '2026-11-24T00:00:00.000Z',
    turn_id: null,
  } as unknown as MessageRecord;
}

describe('the estimate of a message', () => {
  test('is its text by the counter, each file by the fixed FILE_TOKENS, plus the template share', () => {
    const content: ContentBlock[] = [
      { type: 'text', text: 'x'.repeat(40) },
      { type: 'image', file_id: 'file_a' },
      { type: 'file', file_id: 'file_b' },
    ];
    assert.equal(contentTokens(content, quarter, Infinity), MESSAGE_TOKENS + 10 + 2 * FILE_TOKENS);
  });

  test('stops counting once past its cap and answers more than the cap', () => {
    let counted = 0;
    const counting: CountTokens = (text, cap) => {
      counted++;
      return quarter(text, cap);
    };
    const content: ContentBlock[] = [
      { type: 'text', text: 'x'.repeat(4000) },
      { type: 'text', text: 'y'.repeat(4000) },
    ];
    assert.ok(contentTokens(content, counting, 100) > 100);
    assert.equal(counted, 1, 'the second block is not counted');
  });
});

describe('which of the newest messages fit', () => {
  test('they are taken newest first while the system prompt and they fit the budget', () => {
    // system 10 + PROMPT_TOKENS, then 30 + 30 fit in 80; the next 30 does not.
    const budget = 10 + PROMPT_TOKENS + 60;
    assert.equal(fitNewest(10, [30, 30, 30, 30], budget), 2);
    assert.equal(fitNewest(10, [30, 30, 30, 30], budget - 1), 1);
  });

  test('the first message that does not fit ends the history, even if an older one is smaller', () => {
    assert.equal(fitNewest(0, [1, 500, 10], PROMPT_TOKENS + 100), 1);
  });

  test('the newest message is kept even when it alone is over the budget', () => {
    assert.equal(fitNewest(50, [5, 5, 1000], 100), 1);
    assert.equal(fitNewest(5000, [1], 100), 1);
  });

  test('everything is kept when everything fits', () => {
    assert.equal(fitNewest(10, [1, 2, 3], 1000), 3);
    assert.equal(promptTokens(10, [1, 2, 3]), 10 + PROMPT_TOKENS + 6);
  });

  test('the budget is the window less the reply reserve, divided by the correction', () => {
    assert.equal(promptBudget({ context_window: 2048, max_tokens: 1024 }, 1), 1024);
    assert.equal(promptBudget({ context_window: 2048, max_tokens: 48 }, 2), 1000);
    assert.equal(promptBudget({ context_window: 2048, max_tokens: 2048 }, 1), 0);
  });
});

/** A message of `role` (message() alternates roles by its counter). */
function said(role: 'user' | 'assistant', text: string): MessageRecord {
  return { ...message(text), role };
}

/** The roles of `messages`, u and a, in order. */
const roles = (messages: readonly MessageRecord[]) => messages.map((m) => m.role[0]).join('');

describe('a retry after an overflow', () => {
  test('sends the newer half of what overflowed, the newest message always', () => {
    const users = Array.from({ length: 7 }, (_, i) => said('user', `${i}`));
    assert.deepEqual(halveHistory(users), users.slice(3));
    assert.deepEqual(halveHistory(users.slice(0, 4)), users.slice(2, 4));
    assert.deepEqual(halveHistory(users.slice(0, 2)), users.slice(1, 2));
    assert.deepEqual(halveHistory(users.slice(0, 1)), users.slice(0, 1));
  });

  test('never starts with an assistant message: the half starts at the next user message', () => {
    const chat = ['u', 'a', 'u', 'a', 'u', 'a', 'u'].map((r, i) =>
      said(r === 'u' ? 'user' : 'assistant', `${i}`),
    );
    const half = halveHistory(chat);
    assert.equal(roles(half), 'uau');
    assert.equal(half.at(-1), chat.at(-1));
    // An assistant message that is the newest is kept: there is nothing after it.
    assert.equal(roles(halveHistory([said('user', 'q'), said('assistant', 'a')])), 'a');
  });
});

describe('an overflow, as servers word it', () => {
  const refused = (status: number, message: string) => new ProviderError(message, { status });
  const wrapped = (err: Error) => new AppError('agent_unavailable', undefined, { cause: err });

  for (const [server, status, message] of [
    ['llama.cpp', 400, 'the request exceeds the available context size, try increasing it'],
    ['OpenAI', 400, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens"],
    ['OpenAI (code)', 400, 'context_length_exceeded'],
    ['vLLM', 400, "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens"],
    ['Anthropic', 400, 'prompt is too long: 210000 tokens > 200000 maximum'],
    ['a proxy', 413, 'chat completions answered status 413: prompt is too long'],
  ] as const) {
    test(`${server}'s ${status} is recognized, as it is and wrapped by callModel`, () => {
      assert.equal(isContextOverflow(refused(status, message)), true);
      assert.equal(isContextOverflow(wrapped(refused(status, message))), true);
    });
  }

  test('another status, another 400 or another error is not an overflow', () => {
    assert.equal(isContextOverflow(refused(500, 'maximum context length exceeded')), false);
    assert.equal(isContextOverflow(refused(400, 'image input is not supported')), false);
    assert.equal(isContextOverflow(new Error('maximum context length')), false);
    assert.equal(isContextOverflow(undefined), false);
  });
});

describe('the per-agent correction of the estimate', () => {
  test('starts at 1, takes a larger ratio at once and a smaller one a quarter of the way', () => {
    const correction = new EstimateCorrection();
    const agent = {};
    assert.equal(correction.ratio(agent), 1);
    correction.observe(agent, 100, 200);
    assert.equal(correction.ratio(agent), 2);
    correction.observe(agent, 100, 100);
    assert.equal(correction.ratio(agent), 1.75);
    assert.equal(correction.ratio({}), 1, 'another agent has its own');
  });

  test('is bounded, ignores tiny estimates and missing usage, and grows by a quarter on an overflow', () => {
    const correction = new EstimateCorrection();
    const agent = {};
    correction.observe(agent, 100, 100_000);
    assert.equal(correction.ratio(agent), EstimateCorrection.MAX);
    const other = {};
    correction.observe(other, 10, 1000);
    correction.observe(other, 100, 0);
    assert.equal(correction.ratio(other), 1);
    correction.overflowed(other);
    assert.equal(correction.ratio(other), 1.25);
    for (let i = 0; i < 50; i++) correction.observe(other, 1000, 1);
    assert.equal(correction.ratio(other), EstimateCorrection.MIN);
  });
});

describe('the plan of a turn', () => {
  const settings = { context_window: 1000, max_tokens: 200 };

  test('a history whose bytes fit is sent whole without loading the tokenizer', async () => {
    const history = [message('hello'), message('hi there'), message('how are you?')];
    const plan = await planWindow('Be brief.', history, settings, 1, noCounter);
    assert.deepEqual(plan.messages, history);
    assert.equal(plan.tokens, null);
  });

  test('a longer one is counted and cut oldest first, the newest always kept', async () => {
    // Each message is 200 characters: 50 tokens plus MESSAGE_TOKENS by the quarter counter.
    const history = Array.from({ length: 30 }, (_, i) => said('user', `${i}`.padEnd(200, '.')));
    const plan = await planWindow('', history, settings, 1, quarterCounter);
    const each = 50 + MESSAGE_TOKENS;
    const fits = Math.floor((800 - PROMPT_TOKENS) / each);
    assert.deepEqual(plan.messages, history.slice(-fits));
    assert.deepEqual(plan.tokens, Array(fits).fill(each));
    assert.ok(promptTokens(plan.systemTokens ?? 0, plan.tokens ?? []) <= 800);
  });

  test('the correction shrinks what is sent', async () => {
    const history = Array.from({ length: 30 }, (_, i) => message(`${i}`.padEnd(200, '.')));
    const plain = await planWindow('', history, settings, 1, quarterCounter);
    const doubled = await planWindow('', history, settings, 2, quarterCounter);
    assert.ok(doubled.messages.length < plain.messages.length);
    assert.equal(doubled.messages.at(-1), history.at(-1));
  });

  test('files count FILE_TOKENS each, so an old message with files goes first', async () => {
    const withFile = message('see this', [{ type: 'image', file_id: 'file_x' }]);
    const history = [withFile, message('a'.repeat(400)), message('b'.repeat(400))];
    const plan = await planWindow('', history, { context_window: 1200, max_tokens: 200 }, 1, quarterCounter);
    assert.deepEqual(plan.messages, history.slice(1));
  });

  test('never starts with an assistant message, cut or whole, and counts what it keeps', async () => {
    const turns = (n: number, size: number) =>
      Array.from({ length: n }, (_, i) => said(i % 2 ? 'user' : 'assistant', `${i}`.padEnd(size, '.')));
    // Whole: a history cut to its newest messages before the plan (history_limit) may start with a reply.
    const short = turns(6, 10);
    assert.equal(roles(short), 'auauau');
    const whole = await planWindow('', short, settings, 1, noCounter);
    assert.deepEqual(whole.messages, short.slice(1));
    // Cut: the 14 newest fit (54 tokens each in 792); the oldest of them is a reply, left out with its count.
    const history = turns(30, 200);
    const plan = await planWindow('', history, settings, 1, quarterCounter);
    const each = 50 + MESSAGE_TOKENS;
    assert.equal(Math.floor((800 - PROMPT_TOKENS) / each), 14);
    assert.equal(history.at(-14)?.role, 'assistant');
    assert.deepEqual(plan.messages, history.slice(-13));
    assert.deepEqual(plan.tokens, Array(13).fill(each));
  });

  test('a new message fits alone, or says by how much it does not', async () => {
    const system = 's'.repeat(400);
    const short = await fitsAlone(system, [{ type: 'text', text: 'hi' }], settings, 1, noCounter);
    assert.equal(short.fits, true);
    const long = await fitsAlone(
      system,
      [{ type: 'text', text: 'x'.repeat(4000) }],
      settings,
      1,
      quarterCounter,
    );
    assert.equal(long.fits, false);
    assert.equal(long.budget, 800);
    assert.ok(long.tokens > 800);
  });
});

describe('the tokenizer', () => {
  test('counts English as a GPT tokenizer does, special tokens as text, and stops past its cap', async () => {
    const count = await loadTokenCounter();
    assert.equal(count('hello world', 100), 2);
    assert.ok(count('say <|endoftext|> here', 100) > 3);
    assert.equal(count('', 100), 0);
    assert.equal(count('word '.repeat(1000), 10), 11);
    assert.equal(await loadTokenCounter(), count, 'loaded once');
  });
});

describe('the catalogue', () => {
  test('gives an agent a context_window of 8,192 and a max_tokens of 1,024 unless it says otherwise', () => {
    const agent = parseCatalogue('agents:\n  - id: plain\n').get('plain');
    assert.equal(agent?.context_window, 8192);
    assert.equal(agent?.max_tokens, 1024);
  });

  test('refuses an agent whose max_tokens leaves no room for a prompt, naming the field', () => {
    assert.throws(
      () => parseCatalogue('agents:\n  - id: plain\n    context_window: 2048\n    max_tokens: 2048\n'),
      (err: Error) =>
        err instanceof ConfigError &&
        /agents\.0\.max_tokens: must be less than context_window/.test(err.message),
    );
  });
});

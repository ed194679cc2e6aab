// An agent's pricing (docs/guides/usage.md#pricing-an-agent): a negative, non-numeric or absurd price stops
// the catalogue with the field named; a call's cost is its tokens times the prices, cached input at its own
// price, rounded once to whole micro-dollars.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCatalogue } from '../../src/agents/catalogue.ts';
import { callUsage } from '../../src/agents/pricing.ts';
import { ConfigError } from '../../src/config.ts';

const withPricing = (pricing: unknown) => JSON.stringify({ agents: [{ id: 'priced', pricing }] });

describe("an agent's pricing", () => {
  for (const [what, pricing, field] of [
    ['negative', { input_per_mtok: -1, output_per_mtok: 1 }, 'input_per_mtok'],
    ['not a number', { input_per_mtok: 1, output_per_mtok: 'cheap' }, 'output_per_mtok'],
    [
      'absurd',
      { input_per_mtok: 1, output_per_mtok: 1, cached_input_per_mtok: 1e9 },
      'cached_input_per_mtok',
    ],
  ] as const) {
    it(`is refused when a price is ${what}, naming the field`, () => {
      assert.throws(
        () => parseCatalogue(withPricing(pricing)),
        (err) => err instanceof ConfigError && err.message.includes(`pricing.${field}`),
      );
    });
  }

  it('prices input, cached input and output tokens, rounding the call once', () => {
    const agent = parseCatalogue(
      withPricing({ input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25 }),
    ).get('priced');
    assert.ok(agent);
    const usage = callUsage(agent, {
      input_tokens: 1001,
      output_tokens: 3,
      cached_input_tokens: 1,
      reasoning_tokens: 2,
    });
    // 1000 × 2.5 + 1 × 1.25 + 3 × 10 = 2531.25 micro-dollars
    assert.deepEqual(usage, {
      input_tokens: 1001,
      output_tokens: 3,
      cached_input_tokens: 1,
      reasoning_tokens: 2,
      model: 'scripted',
      cost_micro_usd: 2531,
    });
    const free = callUsage({ provider: 'openai', model: 'gpt-x' }, { input_tokens: 5, output_tokens: 5 });
    assert.deepEqual([free.cost_micro_usd, free.model, free.cached_input_tokens], [0, 'gpt-x', 0]);
  });
});

// The catalogue's approval fields (docs/guides/approvals.md): `approval` on HTTP tools and MCP servers,
// `approval_tools` per MCP tool, the agent's `approval_timeout_seconds`, their defaults, who approves which
// call, and the check at start that names a wrong value or an approval for a tool the server does not offer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCatalogue } from '../../src/agents/catalogue.ts';
import { approverOf, hasUserApprovals } from '../../src/agents/catalogue-tools.ts';
import { ConfigError } from '../../src/config.ts';

const tool = (fields: Record<string, unknown> = {}) => ({
  name: 'refund',
  description: 'Refunds an order.',
  url: 'https://tools.example.com/refund',
  ...fields,
});
const server = (fields: Record<string, unknown> = {}) => ({
  name: 'crm',
  url: 'http://127.0.0.1:9000/mcp',
  ...fields,
});
const catalogue = (...agents: Record<string, unknown>[]) => JSON.stringify({ agents });

function mistakeOf(text: string): string {
  try {
    parseCatalogue(text, 'agents.yaml');
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('the catalogue was accepted');
}

describe('the catalogue: approvals', () => {
  it('leaves approval out by default, and waits a day for a decision', () => {
    const agent = parseCatalogue(catalogue({ id: 'a', tools: [tool()], mcp_servers: [server()] })).get('a');
    assert.ok(agent);
    assert.equal(agent.approval_timeout_seconds, 86_400);
    assert.equal(agent.tools[0]?.approval, undefined);
    assert.equal(approverOf(agent, 'refund'), null);
    assert.equal(approverOf(agent, 'crm__find'), null);
    assert.equal(hasUserApprovals(agent), false);
  });

  it('names the approver of each call: the HTTP tool, the MCP server, and its tools one by one', () => {
    const agent = parseCatalogue(
      catalogue({
        id: 'a',
        approval_timeout_seconds: 600,
        tools: [tool({ approval: 'operator' }), tool({ name: 'lookup', approval: 'none' })],
        mcp_servers: [
          server({ approval: 'user', approval_tools: { search: 'none', wipe: 'operator' } }),
          server({ name: 'docs', approval_tools: { publish: 'user' } }),
        ],
      }),
    ).get('a');
    assert.ok(agent);
    assert.equal(agent.approval_timeout_seconds, 600);
    assert.equal(approverOf(agent, 'refund'), 'operator');
    assert.equal(approverOf(agent, 'lookup'), null);
    assert.equal(approverOf(agent, 'crm__email'), 'user');
    assert.equal(approverOf(agent, 'crm__search'), null);
    assert.equal(approverOf(agent, 'crm__wipe'), 'operator');
    assert.equal(approverOf(agent, 'docs__publish'), 'user');
    assert.equal(approverOf(agent, 'docs__read'), null);
    assert.equal(approverOf(agent, 'nothing_like_it'), null);
    assert.equal(hasUserApprovals(agent), true);
  });

  it('refuses an unknown approval level, naming the field', () => {
    const message = mistakeOf(catalogue({ id: 'a', tools: [tool({ approval: 'admin' })] }));
    assert.match(message, /agents\.yaml, agents\.0\.tools\.0\.approval: /);
    const perTool = mistakeOf(
      catalogue({ id: 'a', mcp_servers: [server({ approval_tools: { wipe: 'always' } })] }),
    );
    assert.match(perTool, /agents\.0\.mcp_servers\.0\.approval_tools\.wipe: /);
  });

  it('refuses an approval for a tool the server’s allow-list leaves out', () => {
    const message = mistakeOf(
      catalogue({
        id: 'a',
        mcp_servers: [server({ tools: ['search'], approval_tools: { wipe: 'operator' } })],
      }),
    );
    assert.match(
      message,
      /agents\.0\.mcp_servers\.0\.approval_tools\.wipe: names wipe, which the server's tools list leaves out \(search\)/,
    );
  });

  it('refuses a timeout outside one second to thirty days', () => {
    assert.match(
      mistakeOf(catalogue({ id: 'a', approval_timeout_seconds: 0 })),
      /agents\.0\.approval_timeout_seconds: /,
    );
    assert.match(
      mistakeOf(catalogue({ id: 'a', approval_timeout_seconds: 31 * 86_400 })),
      /agents\.0\.approval_timeout_seconds: /,
    );
  });
});

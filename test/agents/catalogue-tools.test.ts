// The catalogue's tool fields (docs/guides/tools.md): an agent's HTTP tools, MCP servers, max_steps and
// expose_tools, their defaults, and the check at start that names every mistake of the agents file on a line
// of its own.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadCatalogue, parseCatalogue } from '../../src/agents/catalogue.ts';
import { ConfigError } from '../../src/config.ts';
import { tempDir } from '../helpers/process.ts';

const tool = (fields: Record<string, unknown> = {}) => ({
  name: 'lookup_order',
  description: 'Finds an order by its id.',
  url: 'https://tools.example.com/orders',
  ...fields,
});
const httpServer = (fields: Record<string, unknown> = {}) => ({
  name: 'crm',
  url: 'http://127.0.0.1:9000/mcp',
  ...fields,
});
const stdioServer = (fields: Record<string, unknown> = {}) => ({
  name: 'files',
  command: 'node',
  ...fields,
});

/** A catalogue of agents as text (JSON, which the YAML reader takes). */
const catalogue = (...agents: Record<string, unknown>[]) => JSON.stringify({ agents });

/** The ConfigError message parsing `text` throws. */
function mistakeOf(text: string, source?: string): string {
  try {
    parseCatalogue(text, source);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('the catalogue was accepted');
}

describe('the catalogue: tools', () => {
  it('parses an agent with tools and MCP servers, filling in the defaults', () => {
    const agents = parseCatalogue(
      catalogue(
        {
          id: 'support',
          tools: [
            tool(),
            tool({
              name: 'refund',
              input_schema: { type: 'object', properties: { amount: { type: 'number' } } },
              timeout_ms: 2_000,
              secret_env: 'REFUND_SECRET',
            }),
          ],
          mcp_servers: [
            httpServer({ headers_env: { Authorization: 'CRM_TOKEN' }, tools: ['find_customer'] }),
            stdioServer({ args: ['server.js'], env: { ROOT: '/srv' } }),
          ],
        },
        { id: 'plain' },
      ),
    );
    const support = agents.get('support');
    assert.ok(support);
    assert.deepEqual(support.tools, [
      { ...tool(), input_schema: { type: 'object', properties: {} }, timeout_ms: 15_000 },
      {
        ...tool({ name: 'refund' }),
        input_schema: { type: 'object', properties: { amount: { type: 'number' } } },
        timeout_ms: 2_000,
        secret_env: 'REFUND_SECRET',
      },
    ]);
    assert.deepEqual(support.mcp_servers, [
      httpServer({
        headers_env: { Authorization: 'CRM_TOKEN' },
        tools: ['find_customer'],
        timeout_ms: 15_000,
      }),
      stdioServer({ args: ['server.js'], env: { ROOT: '/srv' }, timeout_ms: 15_000 }),
    ]);
    assert.equal(support.max_steps, 8);
    assert.equal(support.expose_tools, false);

    const plain = agents.get('plain');
    assert.deepEqual(
      [plain?.tools, plain?.mcp_servers, plain?.max_steps, plain?.expose_tools],
      [[], [], 8, false],
    );
  });

  it('takes max_steps from 1 to 32 and expose_tools when given', () => {
    const agents = parseCatalogue(
      catalogue({ id: 'one', max_steps: 1, expose_tools: true }, { id: 'many', max_steps: 32 }),
    );
    assert.equal(agents.get('one')?.max_steps, 1);
    assert.equal(agents.get('one')?.expose_tools, true);
    assert.equal(agents.get('many')?.max_steps, 32);
  });

  it('takes handoff (off by default), and refuses a tool of its own named handoff_to_human when it is on', () => {
    const agents = parseCatalogue(
      catalogue({ id: 'plain' }, { id: 'desk', handoff: { enabled: true, user_can_request: true } }),
    );
    assert.deepEqual(agents.get('plain')?.handoff, { enabled: false, user_can_request: false });
    assert.deepEqual(agents.get('desk')?.handoff, { enabled: true, user_can_request: true });
    const mistake = mistakeOf(
      catalogue({ id: 'desk', handoff: { enabled: true }, tools: [tool({ name: 'handoff_to_human' })] }),
    );
    assert.match(mistake, /agents\.0\.tools/);
    assert.match(mistake, /handoff_to_human/);
    assert.match(
      mistakeOf(catalogue({ id: 'desk', handoff: { enabled: 'yes' } })),
      /agents\.0\.handoff\.enabled/,
    );
  });

  it('lets two agents have tools and MCP servers of the same names', () => {
    const agents = parseCatalogue(
      catalogue(
        { id: 'a', tools: [tool()], mcp_servers: [httpServer()] },
        { id: 'b', tools: [tool()], mcp_servers: [httpServer()] },
      ),
    );
    assert.equal(agents.size, 2);
  });

  const cases: [string, Record<string, unknown>, string][] = [
    [
      'two tools of one agent with the same name',
      { tools: [tool(), tool({ url: 'https://elsewhere.example.com/' })] },
      'agents.0.tools.1.name: duplicate tool name lookup_order (item 0 has it too)',
    ],
    [
      'two MCP servers of one agent with the same name, whatever their forms',
      { mcp_servers: [stdioServer({ name: 'crm' }), httpServer()] },
      'agents.0.mcp_servers.1.name: duplicate MCP server name crm (item 0 has it too)',
    ],
    [
      'a tool name containing __, which MCP tools take',
      { tools: [tool(), tool({ name: 'crm__find_customer' })] },
      'agents.0.tools.1.name: must not contain __, which is reserved for MCP tools (<server>__<tool>)',
    ],
    [
      'a tool name with a character providers refuse',
      { tools: [tool({ name: 'look up' })] },
      'agents.0.tools.0.name: letters, digits, _ and -, 1 to 64 characters',
    ],
    [
      'a tool without a description',
      { tools: [tool({ description: undefined })] },
      'agents.0.tools.0.description: required',
    ],
    [
      'a tool url that is not HTTP',
      { tools: [tool(), tool({ name: 'other', url: 'ftp://tools.example.com/' })] },
      'agents.0.tools.1.url: Invalid URL',
    ],
    [
      'an input_schema that is not of an object',
      { tools: [tool({ input_schema: { type: 'string' } })] },
      'agents.0.tools.0.input_schema: must be a JSON Schema with "type": "object"',
    ],
    [
      'a tool timeout under 100 ms',
      { tools: [tool({ timeout_ms: 50 })] },
      'agents.0.tools.0.timeout_ms: Too small: expected number to be >=100',
    ],
    [
      'a secret_env that is not a variable name',
      { tools: [tool({ secret_env: 'my-secret' })] },
      'agents.0.tools.0.secret_env: the name of an environment variable (A-Z, 0-9, _)',
    ],
    [
      'an MCP server with neither url nor command',
      { mcp_servers: [{ name: 'crm' }] },
      'agents.0.mcp_servers.0: needs one of url, command',
    ],
    [
      'an MCP server with both url and command',
      { mcp_servers: [httpServer({ command: 'node' })] },
      'agents.0.mcp_servers.0: has command and url, which belong to different forms; keep one',
    ],
    [
      'an MCP server name with __',
      { mcp_servers: [httpServer({ name: 'c__rm' })] },
      'agents.0.mcp_servers.0.name: letters, digits and -, 1 to 24 characters (its tools are <name>__<tool>)',
    ],
    [
      'an empty allow-list of an MCP server',
      { mcp_servers: [stdioServer({ tools: [] })] },
      'agents.0.mcp_servers.0.tools: Too small: expected array to have >=1 items',
    ],
    ['max_steps of 0', { max_steps: 0 }, 'agents.0.max_steps: Too small: expected number to be >=1'],
    ['max_steps over 32', { max_steps: 33 }, 'agents.0.max_steps: Too big: expected number to be <=32'],
    [
      'an expose_tools that is not a boolean',
      { expose_tools: 'yes' },
      'agents.0.expose_tools: Invalid input: expected boolean, received string',
    ],
  ];
  for (const [what, fields, line] of cases) {
    it(`refuses ${what} with one line naming the field`, () => {
      const message = mistakeOf(catalogue({ id: 'support', ...fields }));
      assert.equal(message, `Invalid configuration: the agents file, ${line}`);
    });
  }

  it('names every mistake of the file, one line each, after a line that counts them', () => {
    const text = catalogue(
      {
        id: 'support',
        tools: [tool(), tool({ url: 'ftp://x' }), tool({ name: 'a__b' })],
        max_steps: 40,
      },
      {
        id: 'sales',
        mcp_servers: [httpServer(), stdioServer({ name: 'crm' })],
        expose_tools: 1,
      },
    );
    assert.deepEqual(mistakeOf(text, 'agents.yaml').split('\n'), [
      'Invalid configuration: agents.yaml has 6 mistakes:',
      'agents.yaml, agents.0.tools.1.url: Invalid URL',
      'agents.yaml, agents.0.tools.1.name: duplicate tool name lookup_order (item 0 has it too)',
      'agents.yaml, agents.0.tools.2.name: must not contain __, which is reserved for MCP tools (<server>__<tool>)',
      'agents.yaml, agents.0.max_steps: Too big: expected number to be <=32',
      'agents.yaml, agents.1.mcp_servers.1.name: duplicate MCP server name crm (item 0 has it too)',
      'agents.yaml, agents.1.expose_tools: Invalid input: expected boolean, received number',
    ]);
  });

  it('names the mistakes of tools together with those of the other fields of an agent', () => {
    const text = catalogue({
      id: 'support',
      provider: 'openai',
      colour: 'red',
      tools: [tool(), tool()],
      mcp_servers: [{ name: 'crm' }],
    });
    const lines = mistakeOf(text).split('\n');
    assert.equal(lines[0], `Invalid configuration: the agents file has ${lines.length - 1} mistakes:`);
    for (const line of [
      'the agents file, agents.0: Unrecognized key: "colour"',
      'the agents file, agents.0.tools.1.name: duplicate tool name lookup_order (item 0 has it too)',
      'the agents file, agents.0.mcp_servers.0: needs one of url, command',
    ]) {
      assert.ok(lines.includes(line), `${line} in:\n${lines.join('\n')}`);
    }
  });

  it('names the agents file it read on every line', async (t) => {
    const file = join(await tempDir(t, 'parley-catalogue-'), 'agents.yaml');
    await writeFile(
      file,
      [
        'agents:',
        '  - id: support',
        '    max_steps: 0',
        '    mcp_servers:',
        '      - name: crm',
        '        url: http://127.0.0.1:9000/mcp',
        '      - name: crm',
        '        command: node',
        '',
      ].join('\n'),
    );
    assert.throws(
      () => loadCatalogue(file),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        const source = `PARLEY_AGENTS_FILE (${file})`;
        assert.deepEqual(err.message.split('\n'), [
          `Invalid configuration: ${source} has 2 mistakes:`,
          `${source}, agents.0.mcp_servers.1.name: duplicate MCP server name crm (item 0 has it too)`,
          `${source}, agents.0.max_steps: Too small: expected number to be >=1`,
        ]);
        return true;
      },
    );
  });
});

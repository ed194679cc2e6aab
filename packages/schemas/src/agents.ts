// Schemas of the agent catalogue as an API key sees it (GET /v1/agents): what each agent is, which provider
// answers, its tools with who approves their calls, and whether people may take its conversations over.
// Never a secret: no API keys, base URLs, headers, commands or environment.
import { z } from 'zod';

/** Who must approve a tool's calls before they run: nobody, the end user or the integrator, or the integrator. */
export const approvalPolicy = z.enum(['none', 'user', 'operator']);

export const agentToolSchema = z
  .object({
    name: z.string().meta({ description: 'The name the model calls it by' }),
    approval: approvalPolicy,
  })
  .meta({ id: 'AgentTool' });

export const agentMcpServerSchema = z
  .object({
    name: z.string(),
    transport: z.enum(['http', 'stdio']),
    all_tools: z.boolean().meta({
      description:
        'Every tool the server lists is offered (no allow-list in the catalogue): which ones is known only once connected, so `tools` names only those the catalogue names',
    }),
    approval: approvalPolicy.meta({
      description: 'Who approves the calls of its tools not named in `tools`',
    }),
    tools: z.array(agentToolSchema).meta({
      description:
        'The tools the catalogue names (its allow-list, or the tools given their own approval), as the model calls them: <server>__<tool>',
    }),
  })
  .meta({ id: 'AgentMcpServer' });

export const agentSchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    description: z.string().nullable(),
    provider: z.enum(['scripted', 'openai', 'openai-compatible', 'anthropic']),
    model: z
      .string()
      .nullable()
      .meta({ description: 'The model name the provider is sent (`scripted` for the scripted provider)' }),
    tools: z.array(agentToolSchema).meta({
      description: 'Its HTTP tools, and handoff_to_human (approval none) where handoff.enabled is on',
    }),
    mcp_servers: z.array(agentMcpServerSchema),
    expose_tools: z.boolean().meta({ description: "Whether the end user sees the turn's tool calls" }),
    handoff: z.object({
      enabled: z.boolean().meta({ description: 'The model may hand the conversation to people' }),
      user_can_request: z.boolean().meta({ description: 'The end user may ask for a human' }),
    }),
  })
  .meta({
    id: 'Agent',
    examples: [
      {
        id: 'support',
        name: 'Support',
        description: 'Answers questions about orders and refunds',
        provider: 'openai',
        model: 'gpt-4.1-mini',
        tools: [
          { name: 'refund', approval: 'operator' },
          { name: 'handoff_to_human', approval: 'none' },
        ],
        mcp_servers: [
          {
            name: 'crm',
            transport: 'http',
            all_tools: false,
            approval: 'none',
            tools: [{ name: 'crm__find_order', approval: 'none' }],
          },
        ],
        expose_tools: false,
        handoff: { enabled: true, user_can_request: true },
      },
    ],
  });

export const agentList = z.object({ items: z.array(agentSchema) }).meta({ id: 'AgentList' });

// The agent catalogue: which agents exist and how each one talks (provider, model, prompt, inactivity
// messages, session lifetime, limits). Read from PARLEY_AGENTS_FILE (YAML or JSON) or the built-in `demo`.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../config.ts';
import { agentIdSchema } from './agent-id.ts';

const units: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Seconds, as a number or a string like `90s`, `30m`, `24h`, `7d`. */
const duration = z.union([
  z
    .number()
    .int()
    .min(1)
    .max(365 * 86_400),
  z
    .string()
    .regex(/^\d+[smhd]$/, 'a duration like 90s, 30m, 24h or 7d')
    .transform((v) => Number(v.slice(0, -1)) * (units[v.slice(-1)] ?? 1)),
]);

const agentSchema = z.strictObject({
  id: agentIdSchema,
  name: z.string().min(1).max(200).optional(),
  instructions: z.string().max(100_000).default(''),
  provider: z.enum(['scripted', 'openai']).default('scripted'),
  model: z.string().min(1).max(200).default('scripted'),
  /** openai: the API's base URL (default OPENAI_BASE_URL, else https://api.openai.com/v1). */
  base_url: z.url().optional(),
  /** openai: the environment variable holding the API key (default OPENAI_API_KEY). */
  api_key_env: z
    .string()
    .regex(/^[A-Z][A-Z0-9_]*_API_KEY$/, 'must name an environment variable ending in _API_KEY')
    .optional(),
  temperature: z.number().min(0).max(2).optional(),
  max_tokens: z.number().int().min(1).optional(),
  scripted: z.strictObject({ token_delay_ms: z.number().int().min(0).max(10_000).default(0) }).default({
    token_delay_ms: 0,
  }),
  inactivity: z
    .strictObject({
      warning_message: z
        .string()
        .min(1)
        .max(32_000)
        .default('Are you still there? This conversation will close soon.'),
      final_message: z
        .string()
        .min(1)
        .max(32_000)
        .default('This conversation was closed after a period of inactivity.'),
      close_on_final: z.boolean().default(true),
    })
    .default({
      warning_message: 'Are you still there? This conversation will close soon.',
      final_message: 'This conversation was closed after a period of inactivity.',
      close_on_final: true,
    }),
  /** Seconds without activity after which a session expires. */
  session_ttl: duration.default(86_400),
  /** How many of the latest messages the model sees. */
  history_limit: z.number().int().min(1).max(1000).default(50),
  limits: z
    .strictObject({ messages_per_session: z.number().int().min(2).max(100_000).default(1000) })
    .default({ messages_per_session: 1000 }),
  timeouts: z
    .strictObject({
      total_ms: z.number().int().min(100).max(3_600_000).default(60_000),
      stall_ms: z.number().int().min(100).max(3_600_000).default(20_000),
    })
    .default({ total_ms: 60_000, stall_ms: 20_000 }),
});

export type AgentConfig = z.infer<typeof agentSchema>;

const catalogueSchema = z.strictObject({
  agents: z
    .array(agentSchema)
    .min(1)
    .superRefine((agents, ctx) => {
      const seen = new Set<string>();
      for (const [i, agent] of agents.entries()) {
        if (seen.has(agent.id))
          ctx.addIssue({ code: 'custom', path: [i, 'id'], message: 'duplicate agent id' });
        seen.add(agent.id);
      }
    }),
});

export const demoAgent: AgentConfig = agentSchema.parse({
  id: 'demo',
  name: 'Demo',
  instructions: 'You are a friendly demo agent. Answer briefly.',
});

export type Catalogue = ReadonlyMap<string, AgentConfig>;

/** Parses a catalogue document (YAML is a superset of JSON); throws ConfigError naming the bad field. */
export function parseCatalogue(text: string, source = 'the agents file'): Catalogue {
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`Invalid configuration: ${source} is not YAML or JSON: ${(err as Error).message}`);
  }
  const parsed = catalogueSchema.safeParse(document);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'document';
    throw new ConfigError(`Invalid configuration: ${source}, ${where}: ${issue?.message ?? 'invalid'}`);
  }
  return new Map(parsed.data.agents.map((a) => [a.id, Object.freeze(a)]));
}

/** The catalogue the configuration names, or the built-in `demo` agent alone. */
export function loadCatalogue(file: string | undefined): Catalogue {
  if (!file) return new Map([[demoAgent.id, demoAgent]]);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `Invalid configuration: PARLEY_AGENTS_FILE cannot be read: ${(err as Error).message}`,
    );
  }
  return parseCatalogue(text, `PARLEY_AGENTS_FILE (${file})`);
}

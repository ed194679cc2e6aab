// The model provider of each agent, as its catalogue entry names it: the scripted one in process, or a server
// spoken to through the AI SDK (loaded only when an agent needs it), with its key and base URL from the
// configuration; a key variable that is not set stops the start.
import { type Config, ConfigError } from '../config.ts';
import type { AgentConfig, Catalogue } from './catalogue.ts';
import type { Provider } from './provider.ts';
import { ScriptedProvider } from './scripted.ts';

/** One provider per agent, as its catalogue entry asks. */
export async function providersFor(
  catalogue: Catalogue,
  config: Config,
): Promise<Map<string, Provider & { close?(): Promise<void> }>> {
  const providers = new Map<string, Provider & { close?(): Promise<void> }>();
  for (const agent of catalogue.values()) providers.set(agent.id, await providerFor(agent, config));
  return providers;
}

async function providerFor(
  agent: AgentConfig,
  config: Config,
): Promise<Provider & { close?(): Promise<void> }> {
  if (agent.provider === 'scripted')
    return new ScriptedProvider({ tokenDelayMs: agent.scripted.token_delay_ms, maxTokens: agent.max_tokens });
  const defaults = {
    openai: { key: 'OPENAI_API_KEY', url: config.openai.baseUrl ?? 'https://api.openai.com/v1' },
    anthropic: { key: 'ANTHROPIC_API_KEY', url: 'https://api.anthropic.com/v1' },
    'openai-compatible': { key: undefined, url: undefined },
  }[agent.provider];
  const keyVariable = agent.api_key_env ?? defaults.key;
  const apiKey = keyVariable === undefined ? undefined : config.providerKeys[keyVariable];
  if (agent.api_key_env && !apiKey) {
    throw new ConfigError(`Invalid configuration: agent ${agent.id} names ${keyVariable}, which is not set.`);
  }
  const baseUrl = agent.base_url ?? defaults.url;
  // The catalogue requires a base_url where there is no default.
  if (baseUrl === undefined)
    throw new ConfigError(`Invalid configuration: agent ${agent.id} has no base_url.`);
  const { remoteProvider } = await import('./ai-sdk-provider.ts');
  return remoteProvider(agent.provider, {
    baseUrl,
    ...(apiKey ? { apiKey } : {}),
    settings: {
      maxTokens: agent.max_tokens,
      ...(agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
      ...(agent.top_p !== undefined ? { topP: agent.top_p } : {}),
      ...(agent.stop !== undefined ? { stop: agent.stop } : {}),
      ...(agent.seed !== undefined ? { seed: agent.seed } : {}),
      ...(agent.provider_options !== undefined ? { providerOptions: agent.provider_options } : {}),
    },
  });
}

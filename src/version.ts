// Parley's version: package.json's, read once, so that `parley --version`, the start-up summary and the
// API reference (/docs) cannot disagree.
import { readFileSync } from 'node:fs';

function packageVersion(): string {
  const manifest: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const version =
    manifest !== null && typeof manifest === 'object' && 'version' in manifest ? manifest.version : undefined;
  if (typeof version !== 'string') throw new Error('package.json has no version');
  return version;
}

export const VERSION = packageVersion();

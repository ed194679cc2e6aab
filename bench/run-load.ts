// Runs bench/load.ts as its own child process with a spec file and returns its JSON report.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadSpec, PassReport } from './load.ts';
import { benchDir, spawnNode, tempDir } from './processes.ts';

export async function runLoad(spec: LoadSpec & { kind: 'duration' }): Promise<PassReport>;
export async function runLoad(spec: LoadSpec & { kind: 'each' }): Promise<PassReport[]>;
export async function runLoad(spec: LoadSpec): Promise<PassReport | PassReport[]> {
  const file = join(tempDir('load'), 'spec.json');
  writeFileSync(file, JSON.stringify(spec));
  let stdout = '';
  const child = spawnNode(
    [],
    join(benchDir, 'load.ts'),
    [file],
    {},
    {
      onStdout: (chunk) => {
        stdout += chunk;
      },
    },
  );
  const code = await child.exited;
  if (code !== 0) throw new Error(`the load generator exited with ${code}:\n${child.output()}`);
  return JSON.parse(stdout) as PassReport | PassReport[];
}

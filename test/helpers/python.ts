// A Python virtual environment with the official `openai` package, for the checks of the Open Responses
// routes from Python: installed by pip (from the machine's package index or mirror) once, kept in the
// temporary directory for the next run, since resolving it takes minutes.
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where the environment is kept between runs. */
export const pythonOpenAiDir = join(tmpdir(), 'parley-python-openai');

/** A virtual environment with `openai` installed, or why there cannot be one. */
export async function pythonWithOpenAi(
  dir = pythonOpenAiDir,
): Promise<{ python: string } | { reason: string }> {
  const python = join(dir, 'bin', 'python');
  try {
    await run(python, ['-c', 'import openai']);
    return { python };
  } catch {
    // Not there yet: made below.
  }
  try {
    await run('python3', ['-m', 'venv', dir]);
  } catch (err) {
    return { reason: `python3 with venv is not available (${(err as Error).message.split('\n')[0]})` };
  }
  const pip = join(dir, 'bin', 'pip');
  try {
    await run(pip, ['install', '--quiet', 'openai'], { timeout: 300_000 });
  } catch (err) {
    return {
      reason: `pip could not install openai (${(err as Error).message.split('\n').slice(-2).join(' ')})`,
    };
  }
  return { python };
}

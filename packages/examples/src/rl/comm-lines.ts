/**
 * Counts the example's communication code: the lines marked with a trailing
 * `// comm` comment, as the PyTorch RPC paper counts "LoC Comm" for its RL case.
 * @module
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The marker that ends every communication line. */
const COMM_MARK = '// comm';

/** The folder of the example's TypeScript sources (from `dist/src/rl/` back to `src/rl/`). */
export const RL_SOURCES = fileURLToPath(new URL('../../../src/rl/', import.meta.url));

/** Marked lines per source file, and their total. */
export interface CommLines {
  files: Record<string, number>;
  total: number;
}

/** True when `line` ends with the communication marker. */
export function isCommLine(line: string): boolean {
  return line.trimEnd().endsWith(COMM_MARK);
}

/** Counts the marked lines of the `.ts` files in `dir`; undefined when the sources are not there. */
export function countCommLines(dir = RL_SOURCES): CommLines | undefined {
  if (!existsSync(dir)) return undefined;
  const files: Record<string, number> = {};
  let total = 0;
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.ts')).sort()) {
    const n = readFileSync(join(dir, name), 'utf8').split('\n').filter(isCommLine).length;
    if (n > 0) files[name] = n;
    total += n;
  }
  return { files, total };
}

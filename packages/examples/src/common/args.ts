/**
 * Command-line flags of the examples: `--name value` pairs.
 * @module
 */

/**
 * A reader of `--flag value` pairs in `argv`.
 *
 * @example
 * ```ts
 * const flag = flagReader(process.argv.slice(2));
 * const epochs = Number(flag('--epochs', '60'));
 * ```
 */
export function flagReader(argv: string[]): (flag: string, fallback: string) => string {
  return (flag, fallback) => {
    const i = argv.indexOf(flag);
    return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : fallback;
  };
}

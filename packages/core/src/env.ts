/**
 * Environment variables where there are any: in Node, `process.env`; in a
 * browser (no `process`), none, so every setting takes its default.
 * @module
 */

/** The value of environment variable `name`, or undefined (always in a browser). */
export function envVar(name: string): string | undefined {
  return typeof process === 'undefined' ? undefined : process.env[name];
}

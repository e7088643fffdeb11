/**
 * Environment variables where there are any: in Node, `process.env`; in a
 * browser (no `process`), none, so every setting takes its default.
 * @module
 */

/** The value of environment variable `name`, or undefined (always in a browser). */
export function envVar(name: string): string | undefined {
  return typeof process === 'undefined' ? undefined : process.env[name];
}

/**
 * Set by a process that said which backend it uses (`tensorbus launch`) for
 * the processes it starts: one that ends on the same backend says nothing.
 */
export const BACKEND_SAID_ENV = 'TENSORBUS_BACKEND_SAID';

/**
 * Resolving a package that `@tensorbus/actors` does not depend on but uses
 * when it is installed beside it (`@tensorbus/nats-transport`, and the
 * `tensorbus` command's `@tensorbus/gateway` and `@tensorbus/dashboard`).
 * @module
 */

/** Node's codes for a specifier that resolves to nothing. */
const NOT_FOUND_CODES = new Set(['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND']);

/**
 * The URL `specifier` resolves to from this package, or undefined when the
 * package is not installed. Resolving before importing tells "the package is
 * absent" (this specifier not found) from "the package failed to load"
 * (anything else, which is thrown as it is).
 */
export function resolveOptional(specifier: string): string | undefined {
  try {
    return import.meta.resolve(specifier);
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && NOT_FOUND_CODES.has(code)) return undefined;
    throw error;
  }
}

/**
 * A headless Chromium for tests (see fixtures/browser-driver.ts). Fails with
 * how to install it when Debian's `chromium` is missing: the browser test is
 * never skipped.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const driverScript = fileURLToPath(new URL('./fixtures/browser-driver.js', import.meta.url));

/** The Chromium to use, or an error saying how to install one. */
export function findChromium(): string {
  const candidate = process.env.CHROMIUM ?? 'chromium';
  const probe = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    throw new Error(`the dashboard's browser test needs Chromium: '${candidate} --version' failed (${probe.error?.message ?? probe.stderr}). Install it with 'apt-get install -y chromium' (Debian), or set CHROMIUM=/path/to/chromium`);
  }
  return candidate;
}

/** A page in a headless Chromium. */
export interface BrowserPage {
  /** The JSON value of `expression` evaluated in the page. */
  evaluate<T>(expression: string): Promise<T>;
  /** Writes a PNG of the whole page to `path`. */
  screenshot(path: string): Promise<void>;
  close(): Promise<void>;
}

/** Opens `url` in a fresh headless Chromium. */
export async function openPage(url: string): Promise<BrowserPage> {
  const chromium = findChromium();
  const driver: ChildProcess = spawn(process.execPath, ['--experimental-websocket', '--no-warnings', driverScript], { env: { ...process.env, CHROMIUM: chromium }, stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let ready: () => void;
  const started = new Promise<void>((resolve) => (ready = resolve));
  createInterface({ input: driver.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as { ready?: boolean; id?: number; value?: unknown; error?: string };
    if (message.ready) return ready();
    const waiter = waiting.get(message.id!);
    waiting.delete(message.id!);
    if (message.error !== undefined) waiter?.reject(new Error(message.error));
    else waiter?.resolve(message.value);
  });
  driver.on('exit', (code) => {
    for (const w of waiting.values()) w.reject(new Error(`the browser driver exited (${code})`));
    waiting.clear();
  });
  let ids = 0;
  const command = (body: Record<string, unknown>) =>
    new Promise<unknown>((resolve, reject) => {
      const id = ++ids;
      waiting.set(id, { resolve, reject });
      driver.stdin!.write(`${JSON.stringify({ id, ...body })}\n`);
    });
  await started;
  await command({ open: url });
  return {
    evaluate: <T>(expression: string) => command({ evaluate: expression }) as Promise<T>,
    screenshot: async (path: string) => void (await command({ screenshot: path })),
    close: async () => {
      driver.stdin!.end();
      if (driver.exitCode === null) await new Promise((resolve) => driver.once('exit', resolve));
    },
  };
}

// How the server process is found, started and explained when it fails. Pure: the file
// system is passed in, so the rules are unit-tested and shared with the integration test.

import * as path from 'node:path';
import { type PathContext, expandCommand } from './settings';

export const DEFAULT_EXECUTABLE = 'roofline-lsp';
export const PYTHON_MODULE = 'roofline_lsp';

export interface LaunchSettings {
  /** `roofline.server.path`: the roofline-lsp executable. Wins over pythonPath. */
  readonly path?: unknown;
  /** `roofline.server.pythonPath`: an interpreter with the package installed. */
  readonly pythonPath?: unknown;
}

export interface ServerCommand {
  readonly command: string;
  readonly args: readonly string[];
  /** The setting the command came from, for error messages. */
  readonly source: 'roofline.server.path' | 'roofline.server.pythonPath' | 'default';
}

function setting(value: unknown, ctx: PathContext): string | undefined {
  return typeof value === 'string' ? expandCommand(value, ctx) : undefined;
}

/** The command line the extension runs: `<path> serve`, `<python> -m roofline_lsp serve`, or `roofline-lsp serve`. */
export function serverCommand(settings: LaunchSettings, ctx: PathContext = {}): ServerCommand {
  const exe = setting(settings.path, ctx);
  if (exe !== undefined) {
    return { command: exe, args: ['serve'], source: 'roofline.server.path' };
  }
  const python = setting(settings.pythonPath, ctx);
  if (python !== undefined) {
    return { command: python, args: ['-m', PYTHON_MODULE, 'serve'], source: 'roofline.server.pythonPath' };
  }
  return { command: DEFAULT_EXECUTABLE, args: ['serve'], source: 'default' };
}

export type Env = Readonly<Record<string, string | undefined>>;

export interface LookupOptions {
  readonly env: Env;
  readonly platform?: NodeJS.Platform;
  /** Directory a relative command with a separator is taken from. */
  readonly cwd?: string;
  /** True when the path names an executable file. */
  readonly isExecutable: (file: string) => boolean;
}

function envValue(env: Env, name: string, platform: NodeJS.Platform): string | undefined {
  if (platform !== 'win32') {
    return env[name];
  }
  const key = Object.keys(env).find((k) => k.toUpperCase() === name.toUpperCase());
  return key === undefined ? undefined : env[key];
}

/** Finds the file a command runs, as the shell would: directly if it has a separator, else on PATH. */
export function findExecutable(command: string, opts: LookupOptions): string | undefined {
  const platform = opts.platform ?? process.platform;
  const p = platform === 'win32' ? path.win32 : path.posix;
  const exts =
    platform === 'win32'
      ? ['', ...(envValue(opts.env, 'PATHEXT', platform) ?? '.COM;.EXE;.BAT;.CMD').split(';').filter(Boolean)]
      : [''];
  const candidates = (base: string): string[] =>
    exts.map((ext) => base + (ext && !base.toLowerCase().endsWith(ext.toLowerCase()) ? ext.toLowerCase() : ''));
  const hasSeparator = command.includes('/') || (platform === 'win32' && command.includes('\\'));
  if (hasSeparator || p.isAbsolute(command)) {
    const full = opts.cwd !== undefined ? p.resolve(opts.cwd, command) : command;
    return candidates(full).find((c) => opts.isExecutable(c));
  }
  const dirs = (envValue(opts.env, 'PATH', platform) ?? '').split(p.delimiter).filter(Boolean);
  for (const dir of dirs) {
    const found = candidates(p.join(dir, command)).find((c) => opts.isExecutable(c));
    if (found !== undefined) {
      return found;
    }
  }
  return undefined;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface ServerEnv {
  readonly env: Record<string, string>;
  /** Set when the key could not be passed on. Never contains the key. */
  readonly warning?: string;
}

/**
 * The server's environment: VS Code's own, plus the stored API key under the variable named by
 * `roofline.llm.apiKeyEnv`. Without a stored key the inherited variable (if any) is kept.
 */
export function serverEnv(base: Env, apiKeyEnv: unknown, apiKey: string | undefined): ServerEnv {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v !== undefined) {
      env[k] = v;
    }
  }
  if (apiKey === undefined || apiKey === '') {
    return { env };
  }
  if (typeof apiKeyEnv !== 'string' || !ENV_NAME.test(apiKeyEnv.trim())) {
    return {
      env,
      warning:
        `roofline.llm.apiKeyEnv must be an environment variable name (got ${JSON.stringify(apiKeyEnv)}); ` +
        'the stored API key was not passed to the server.',
    };
  }
  env[apiKeyEnv.trim()] = apiKey;
  return { env };
}

/** What is known about a failed start, for describeStartFailure. */
export interface StartFailure {
  readonly command: ServerCommand;
  /** The executable was not found before spawning. */
  readonly notFound?: boolean;
  /** Error from spawn (`code` like ENOENT, EACCES). */
  readonly spawnError?: { readonly code?: string; readonly message: string };
  readonly exitCode?: number | null;
  readonly signal?: string | null;
  /** The last lines the server wrote to stderr. */
  readonly stderr?: readonly string[];
  /** Any other error (e.g. the initialize request failed). */
  readonly error?: string;
}

function quoted(s: string): string {
  return `"${s}"`;
}

/** The last meaningful stderr line, e.g. a Python exception's message rather than its traceback frames. */
export function lastStderrLine(lines: readonly string[] | undefined): string | undefined {
  const meaningful = (lines ?? []).map((l) => l.trim()).filter((l) => l !== '');
  return meaningful.length > 0 ? meaningful[meaningful.length - 1] : undefined;
}

/** One sentence saying why the server did not start and what to do about it. */
export function describeStartFailure(f: StartFailure): string {
  const { command } = f;
  const what = quoted(command.command);
  const fix =
    command.source === 'default'
      ? 'Install it with "pip install roofline-lsp", or set roofline.server.path or roofline.server.pythonPath.'
      : `Check the ${command.source} setting.`;
  const code = f.spawnError?.code;
  if (f.notFound || code === 'ENOENT') {
    const where = command.source === 'default' ? 'on PATH' : `(from ${command.source})`;
    return `Roofline server could not start: ${what} was not found ${where}. ${fix}`;
  }
  if (code === 'EACCES') {
    return `Roofline server could not start: ${what} is not executable. ${fix}`;
  }
  if (f.spawnError !== undefined) {
    return `Roofline server could not start: running ${what} failed (${f.spawnError.message}). ${fix}`;
  }
  const last = lastStderrLine(f.stderr);
  if (last !== undefined && /No module named ['"]?roofline_lsp/.test(last)) {
    return `Roofline server could not start: the interpreter ${what} does not have the roofline-lsp package. Install it there with "${command.command} -m pip install roofline-lsp", or change ${command.source}.`;
  }
  const full = [command.command, ...command.args].join(' ');
  let how: string;
  if (f.exitCode !== undefined && f.exitCode !== null) {
    how = `"${full}" exited with code ${f.exitCode}`;
  } else if (f.signal) {
    how = `"${full}" was killed by ${f.signal}`;
  } else {
    how = `"${full}" did not complete the LSP handshake${f.error ? ` (${f.error})` : ''}`;
  }
  return `Roofline server could not start: ${how}${last !== undefined ? `: ${last}` : ''}.`;
}

/** Restarts a crashed server a few times, then gives up so a broken server does not loop. */
export class CrashTracker {
  private readonly times: number[] = [];

  constructor(
    private readonly maxCrashes = 5,
    private readonly windowMs = 3 * 60_000,
  ) {}

  /** Records a crash at `now`; true while the server should be restarted. */
  record(now: number): boolean {
    this.times.push(now);
    while (this.times.length > 0 && now - this.times[0] > this.windowMs) {
      this.times.shift();
    }
    return this.times.length < this.maxCrashes;
  }

  reset(): void {
    this.times.length = 0;
  }
}

/** Keeps the last `max` lines of a stream that arrives in chunks. */
export class LineTail {
  private readonly lines: string[] = [];
  private partial = '';

  constructor(private readonly max = 20) {}

  push(chunk: string): void {
    const parts = (this.partial + chunk).split(/\r?\n/);
    this.partial = parts.pop() ?? '';
    this.lines.push(...parts);
    if (this.lines.length > this.max) {
      this.lines.splice(0, this.lines.length - this.max);
    }
  }

  get(): string[] {
    return this.partial === '' ? [...this.lines] : [...this.lines, this.partial].slice(-this.max);
  }
}

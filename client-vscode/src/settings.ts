// Translation of VS Code's `roofline.*` settings into the server's configuration object.
// Pure: no `vscode` import, so it is unit-tested under plain Node and reused by the
// integration test that launches the server exactly as the extension does.

import * as path from 'node:path';

/** How a setting's value is normalised before it is sent to the server. */
export type SettingKind =
  | 'string' // trimmed; the server reports a bad value
  | 'optionalString' // '' -> null (the server's "unset")
  | 'optionalPath' // like optionalString, with ${workspaceFolder} / ~ expanded and relative paths resolved
  | 'optionalCommand' // like optionalPath, but a bare command name (no separator) is left for PATH lookup
  | 'number' // passed through; the server validates ranges
  | 'optionalNumber' // null passes through
  | 'stringList' // empty entries dropped, entries trimmed
  | 'stringMap'
  | 'objectList';

export interface ServerSetting {
  /** Key below `roofline.`, dotted exactly as the server's camelCase path (`llm.baseUrl`). */
  readonly key: string;
  readonly kind: SettingKind;
}

/** Every setting the server reads (server/roofline_lsp/model/config.py), in camelCase. */
export const SERVER_SETTINGS: readonly ServerSetting[] = [
  { key: 'gpu', kind: 'string' },
  { key: 'compareGpus', kind: 'stringList' },
  { key: 'backend', kind: 'string' },
  { key: 'counts', kind: 'string' },
  { key: 'llm.baseUrl', kind: 'string' },
  { key: 'llm.model', kind: 'string' },
  { key: 'llm.apiKeyEnv', kind: 'string' },
  { key: 'llm.mode', kind: 'string' },
  { key: 'llm.timeout', kind: 'number' },
  { key: 'llm.maxConcurrency', kind: 'number' },
  { key: 'llm.maxTokens', kind: 'number' },
  { key: 'llm.temperature', kind: 'optionalNumber' },
  { key: 'llm.reasoningEffort', kind: 'optionalString' },
  { key: 'llm.headers', kind: 'stringMap' },
  { key: 'llm.dataset', kind: 'optionalPath' },
  { key: 'llm.fewShotK', kind: 'number' },
  { key: 'llm.cacheDir', kind: 'optionalPath' },
  { key: 'llm.cacheSizeMb', kind: 'number' },
  { key: 'profile', kind: 'optionalPath' },
  { key: 'gpuProfiles', kind: 'optionalPath' },
  { key: 'args', kind: 'optionalString' },
  { key: 'nvcc', kind: 'optionalCommand' },
  { key: 'buildCompiler', kind: 'string' },
  { key: 'debounceMs', kind: 'number' },
  { key: 'maxFileBytes', kind: 'number' },
  { key: 'overrides', kind: 'objectList' },
];

/** Client-only settings: they shape how the server is launched, not what it computes. */
export const CLIENT_SETTINGS: readonly string[] = ['server.path', 'server.pythonPath', 'trace.server', 'inlayHints'];

/** Settings whose change needs a new server process rather than didChangeConfiguration. */
export const RESTART_SETTINGS: readonly string[] = ['server.path', 'server.pythonPath', 'llm.apiKeyEnv'];

/** Default for `roofline.llm.apiKeyEnv`, as in model/config.py. */
export const DEFAULT_API_KEY_ENV = 'OPENAI_API_KEY';

export interface PathContext {
  /** Folder that relative paths and ${workspaceFolder} refer to, if a folder is open. */
  readonly workspaceFolder?: string;
  /** The user's home directory, for `~` and ${userHome}. */
  readonly home?: string;
  /** Path flavour; defaults to the running platform's. */
  readonly platform?: NodeJS.Platform;
}

/** Reads one setting below `roofline.`; returns undefined when the setting is unknown. */
export type SettingGetter = (key: string) => unknown;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type ServerConfig = { [key: string]: JsonValue };

function pathApi(platform: NodeJS.Platform | undefined): path.PlatformPath {
  return (platform ?? process.platform) === 'win32' ? path.win32 : path.posix;
}

/** Expands ${workspaceFolder}, ${userHome} and a leading `~`; '' and blanks become undefined. */
export function expandVariables(value: string, ctx: PathContext): string | undefined {
  let out = value.trim();
  if (out === '') {
    return undefined;
  }
  if (ctx.workspaceFolder !== undefined) {
    out = out.split('${workspaceFolder}').join(ctx.workspaceFolder);
  }
  if (ctx.home !== undefined) {
    out = out.split('${userHome}').join(ctx.home);
    if (out === '~') {
      out = ctx.home;
    } else if (out.startsWith('~/') || out.startsWith('~\\')) {
      out = pathApi(ctx.platform).join(ctx.home, out.slice(2));
    }
  }
  return out;
}

/** A file setting made absolute: variables expanded, relative paths taken from the workspace. */
export function expandPath(value: string, ctx: PathContext): string | undefined {
  const out = expandVariables(value, ctx);
  if (out === undefined) {
    return undefined;
  }
  const p = pathApi(ctx.platform);
  if (!p.isAbsolute(out) && ctx.workspaceFolder !== undefined) {
    return p.resolve(ctx.workspaceFolder, out);
  }
  return out;
}

/** Like expandPath, but a bare command name (`nvcc`) is kept for PATH lookup. */
export function expandCommand(value: string, ctx: PathContext): string | undefined {
  const out = expandVariables(value, ctx);
  if (out === undefined) {
    return undefined;
  }
  const bare = !out.includes('/') && !((ctx.platform ?? process.platform) === 'win32' && out.includes('\\'));
  return bare ? out : expandPath(out, ctx);
}

function normalise(kind: SettingKind, value: unknown, ctx: PathContext): JsonValue | undefined {
  if (value === undefined) {
    return undefined;
  }
  switch (kind) {
    case 'string':
      return typeof value === 'string' ? value.trim() : (value as JsonValue);
    case 'optionalString':
      if (value === null) {
        return null;
      }
      return typeof value === 'string' ? value.trim() || null : (value as JsonValue);
    case 'optionalPath':
    case 'optionalCommand':
      if (value === null) {
        return null;
      }
      if (typeof value !== 'string') {
        return value as JsonValue;
      }
      return (kind === 'optionalPath' ? expandPath(value, ctx) : expandCommand(value, ctx)) ?? null;
    case 'stringList':
      if (Array.isArray(value)) {
        return value
          .map((v) => (typeof v === 'string' ? v.trim() : (v as JsonValue)))
          .filter((v) => v !== '');
      }
      return value as JsonValue;
    case 'number':
    case 'optionalNumber':
    case 'stringMap':
    case 'objectList':
      return value as JsonValue;
  }
}

/**
 * The server's configuration object (initializationOptions and the answer to
 * workspace/configuration for section `roofline`) from VS Code's settings.
 * Every known setting is sent, so that a cleared setting also clears the server's value.
 */
export function toServerConfig(get: SettingGetter, ctx: PathContext = {}): ServerConfig {
  const out: ServerConfig = {};
  for (const { key, kind } of SERVER_SETTINGS) {
    const value = normalise(kind, get(key), ctx);
    if (value === undefined) {
      continue;
    }
    const parts = key.split('.');
    let node = out;
    for (const part of parts.slice(0, -1)) {
      const next = node[part];
      if (next === undefined || next === null || typeof next !== 'object' || Array.isArray(next)) {
        node[part] = {};
      }
      node = node[part] as ServerConfig;
    }
    node[parts[parts.length - 1]] = value;
  }
  return out;
}

/**
 * The value for one `workspace/configuration` item's section, or undefined when the
 * section is not ours (the caller then asks VS Code).
 */
export function configurationSection(
  config: ServerConfig,
  section: string | undefined,
): JsonValue | undefined {
  if (section === undefined || section === '') {
    return { roofline: config };
  }
  if (section !== 'roofline' && !section.startsWith('roofline.')) {
    return undefined;
  }
  let node: JsonValue = config;
  for (const part of section.split('.').slice(1)) {
    if (node === null || typeof node !== 'object' || Array.isArray(node) || !(part in node)) {
      return null;
    }
    node = node[part];
  }
  return node;
}

/** Whether a change needs the server process restarted (`affects` is VS Code's affectsConfiguration). */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_SETTINGS.some((key) => affects(`roofline.${key}`));
}

export type SettingTarget = 'global' | 'workspace' | 'workspaceFolder';

export interface SettingInspection {
  readonly globalValue?: unknown;
  readonly workspaceValue?: unknown;
  readonly workspaceFolderValue?: unknown;
}

/**
 * Where a new value of a setting is written when nobody is asked: the most specific level
 * that already sets it (so the change takes effect), else the user's settings (never creating
 * a workspace file uninvited).
 */
export function settingTarget(inspection: SettingInspection | undefined): SettingTarget {
  if (inspection?.workspaceFolderValue !== undefined) {
    return 'workspaceFolder';
  }
  if (inspection?.workspaceValue !== undefined) {
    return 'workspace';
  }
  return 'global';
}

/** One answer to "where should this GPU be saved?". */
export interface TargetChoice {
  readonly label: string;
  readonly description: string;
  readonly target: SettingTarget;
  /** More specific levels whose value would hide the new one: removed when this is picked. */
  readonly clear: readonly SettingTarget[];
}

/**
 * Where a GPU picked in the quick pick can be saved. With no folder open: nowhere to ask
 * about (the user's settings). With a folder open the target GPU belongs to the project
 * first (the folder's `.vscode/settings.json`; a multi-root workspace's folder when it
 * already sets one), the user's settings (every project) second; picking the user's settings
 * removes a workspace value that would otherwise override it.
 */
export function gpuTargetChoices(inspection: SettingInspection | undefined, folderOpen: boolean): TargetChoice[] {
  if (!folderOpen) {
    return [];
  }
  const inFolder = inspection?.workspaceFolderValue !== undefined;
  const here: TargetChoice = {
    label: 'This workspace',
    description: inFolder ? 'workspace folder settings' : 'workspace settings (.vscode/settings.json)',
    target: inFolder ? 'workspaceFolder' : 'workspace',
    clear: [],
  };
  const hidden: SettingTarget[] = [];
  if (inspection?.workspaceValue !== undefined) {
    hidden.push('workspace');
  }
  if (inFolder) {
    hidden.push('workspaceFolder');
  }
  const everywhere: TargetChoice = {
    label: 'All workspaces',
    description:
      hidden.length > 0 ? "user settings; removes this workspace's roofline.gpu, which would override it" : 'user settings',
    target: 'global',
    clear: hidden,
  };
  return [here, everywhere];
}

export type InlayHintMode = 'auto' | 'on' | 'off';

/**
 * Whether the verdict inlay hints are shown. `auto` (the default): only where the editor's
 * code lenses are off, since the lens above each kernel already gives the verdict.
 */
export function showInlayHints(mode: unknown, codeLensEnabled: unknown): boolean {
  if (mode === 'on') {
    return true;
  }
  if (mode === 'off') {
    return false;
  }
  return codeLensEnabled === false;
}
